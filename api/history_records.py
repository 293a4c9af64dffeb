"""A question about named offers answered from the compacted history's files (pricedb.history_files)
instead of DuckDB, when nothing was observed since the compaction: each series is one small read, and
its points' JSON is written from whole columns. The answer is `pricedb.history.history`'s, point for
point (tests/api/test_history_fast.py compares the bytes); anything the files cannot answer (no files
for this layout, a series that fails its check, observations since the compaction, offers not named
by all four key parts) answers None and the caller asks DuckDB."""

from __future__ import annotations

import numpy as np

from api.state import dumps
from pricedb.history import History, HistoryQuery, Series, TooManyPoints
from pricedb.history_files import PointFiles, window_records
from pricedb.history_layout import Layout, laid_out_only
from pricedb.offer_filter import SPOT


def history_from_files(
    query: HistoryQuery, layout: Layout, files: PointFiles | None, at_once: int | None = None
) -> History | None:
    """`history(cur, query, layout=layout, point=api.history's JSON writer)`'s answer, or None. With
    `at_once`, only an answer read from at most that many records, all in the page cache (None
    otherwise): one that costs no more than a small answer's CPU and never waits for the disk."""
    offers = query.offers
    if files is None or files.compacted_upto != layout.compacted_upto:
        return None
    if not (offers.providers and offers.regions and offers.skus and offers.pricings):
        return None
    numbers = laid_out_only(layout, offers.providers, sorted(offers.lower_regions), offers.skus, offers.pricings)
    if numbers is None:
        return None
    if not offers.include_interruptible:  # the rule sql_where writes over `pricing`, a part of the key
        numbers = [n for n in numbers if layout.key_of(n)[3] != SPOT]
    if at_once is not None and sum(files.count(n) for n in numbers) > at_once:
        return None
    found = window_records(files, query, numbers, nowait=at_once is not None)
    if found is None:
        return None
    page = found[query.offset : query.offset + query.limit]
    points = sum(len(records) for _, records in page)
    if query.max_points is not None and points > query.max_points:
        raise TooManyPoints(points, len(page), query.max_points)
    return History([_series(layout, files, n, records) for n, records in page], len(found), points)


def _series(layout: Layout, files: PointFiles, number: int, records: np.ndarray) -> Series:
    codes = records["code"]
    model, memory, gpus, currency, unit, _ = files.codes[int(codes[0])]
    series = Series(*layout.key_of(number), model, memory, gpus, currency, unit)
    ends = {}  # each code's end of a point: its currency and unit when they differ from the series'
    for code in np.unique(codes).tolist():
        point_currency, point_unit = files.codes[code][3:5]
        if point_currency == currency and point_unit == unit:
            ends[code] = "}"
        else:
            ends[code] = f',"currency":{dumps(point_currency).decode()},"unit":{dumps(point_unit).decode()}}}'
    moments = np.datetime_as_string(records["at"].view("datetime64[us]").astype("datetime64[s]"), unit="s")
    series.points = [
        f'{{"observed_at":"{at}Z","price":{price},"cny_per_hour":{per_hour},"cny_per_gb_hour":{per_gb}{ends[code]}'
        for at, price, per_hour, per_gb, code in zip(
            moments.tolist(),
            _texts(records["price"]),
            _texts(records["per_hour"]),
            _texts(records["per_gb"]),
            codes.tolist(),
            strict=True,
        )
    ]
    return series


def _texts(values: np.ndarray) -> list[str]:
    """Each stored number's JSON: repr, what json writes for a finite float; NaN is how the files keep
    NULL. A series repeats its few prices, so each distinct number is written once (distinct by its
    bits: 0.0 and -0.0 are written differently)."""
    bits, inverse = np.unique(np.ascontiguousarray(values).view(np.int64), return_inverse=True)
    texts = [repr(v) if v == v else "null" for v in bits.view(np.float64).tolist()]
    return [texts[i] for i in inverse.tolist()]
