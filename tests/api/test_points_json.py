"""A series' points written from whole columns (api.points_json) are, byte for byte, what `dumps`
writes for the plain points: on random records (moments across days, months, leap days, centuries
and the ends of datetime's years; NULLs, -0.0, extreme and repeated numbers; currency and unit
changes), and end to end on series of thousands of points read from the history files and the
observations held since the compaction, also over HTTP on the event loop and in the worker thread."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from api import history as api_history
from api.history import _history_body, _layout, history_query
from api.history_records import history_from_files
from api.points_json import FEW_POINTS, JOINED_POINTS, end_texts, points_json
from api.query import HistoryParams
from api.state import AppState, dumps
from pricedb.clock import iso_utc
from pricedb.history import HistoryQuery, history
from pricedb.history_files import RECORD
from pricedb.offer_filter import OfferFilter
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.api.test_history_fast import OFFERS, _reference_body, _rounds
from tests.api.test_history_files import counting_at_once
from tests.helpers import NOW, serving

EPOCH = datetime(1970, 1, 1)
CODES = [
    ("A100", 80.0, 8, "USD", "hour", "available"),
    ("A100", 80.0, 8, "CNY", "hour", "available"),
    ("A100", 80.0, 8, "USD", "month", "sold_out"),
    ("H100", 80.0, 8, 'I"N\\R', "hour", "available"),  # written as dumps escapes it
]
NUMBERS = [0.0, -0.0, 1e-7, 5e-324, 1e22, 1e16, 123456789.125, 0.1, 2.5, 7.123456789, 1.7976931348623157e308]
MOMENTS = [
    datetime(1, 1, 1),
    datetime(1969, 12, 31, 23, 59, 59, 999_999),
    datetime(1970, 1, 1),
    datetime(2000, 2, 29, 12, 0, 1),
    datetime(2024, 2, 29, 23, 59, 59, 500_000),
    datetime(2100, 3, 1),
    datetime(9999, 12, 31, 23, 59, 59, 999_999),
]


def _us(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def _records(rng: random.Random, n: int) -> np.ndarray:
    """`n` records in time order: runs of repeated numbers, some NULL (NaN), some code changes."""
    start = _us(rng.choice(MOMENTS[2:5]) + timedelta(days=rng.uniform(-400, 400)))
    records = np.zeros(n, dtype=RECORD)
    records["at"] = start + np.cumsum(rng.choice([1, 999_999, 3_000_000_000, 86_400_000_000]) * np.ones(n, np.int64))
    pool = [rng.choice(NUMBERS) if rng.random() < 0.3 else rng.lognormvariate(0, 4) for _ in range(rng.randint(1, 60))]
    values = [pool[0], pool[0], pool[0]]
    for i in range(n):
        if rng.random() < 0.05:
            values = [rng.choice(pool) for _ in range(3)]
            values[1 + rng.randrange(2)] = float("nan") if rng.random() < 0.3 else values[1]
        records[i]["price"], records[i]["per_hour"], records[i]["per_gb"] = values
        records[i]["code"] = 0 if rng.random() < 0.9 else rng.randrange(len(CODES))
    return records


def _plain(records: np.ndarray, currency: str, unit: str) -> bytes:
    """The points as the plain reference writes them: dicts with datetime moments, `dumps`."""
    points = []
    for at, price, per_hour, per_gb, code in records.tolist():
        point: dict[str, Any] = {
            "observed_at": iso_utc(EPOCH + timedelta(microseconds=at)),
            "price": None if price != price else price,
            "cny_per_hour": None if per_hour != per_hour else per_hour,
            "cny_per_gb_hour": None if per_gb != per_gb else per_gb,
        }
        if CODES[code][3:5] != (currency, unit):
            point.update(currency=CODES[code][3], unit=CODES[code][4])
        points.append(point)
    return dumps(points)


@pytest.mark.parametrize("seed", range(6))
def test_points_are_the_plain_points_bytes(seed: int) -> None:
    rng = random.Random(seed)
    for n in [1, 2, 3, rng.randint(4, 2_000), rng.randint(2_001, 7_000)]:
        records = _records(rng, n)
        currency, unit = CODES[int(records["code"][0])][3:5]
        written = points_json(records, end_texts(CODES, currency, unit))
        assert written is not None
        assert b"[" + b"".join(written) + b"]" == _plain(records, currency, unit), (seed, n)


@pytest.mark.parametrize("seed", range(3))
def test_a_few_points_written_one_by_one_are_the_column_wise_bytes(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    for n in [*range(1, 12), rng.randint(12, FEW_POINTS), FEW_POINTS]:
        records = _records(rng, n)
        if rng.random() < 0.3:
            records["at"][rng.randrange(n)] = _us(rng.choice(MOMENTS))  # out of order: written as they come
        end_of = end_texts(CODES, *CODES[int(records["code"][0])][3:5])
        one_by_one = points_json(records, end_of)
        with monkeypatch.context() as patch:
            patch.setattr("api.points_json.FEW_POINTS", 0)
            column_wise = points_json(records, end_of)
        assert one_by_one is not None and column_wise is not None
        assert b"".join(one_by_one) == b"".join(column_wise), (seed, n)


@pytest.mark.parametrize("n", [3, 5, 1_024, 2_500])
def test_a_series_whose_width_changes_at_every_point(n: int) -> None:
    """Written as padded rows, one bytes per point without its padding, not as pieces of runs, joined
    JOINED_POINTS at a time (and the same bytes)."""
    records = _records(random.Random(n), n)
    records["price"] = [1.5, 12345.125, float("nan")] * (n // 3) + [0.25] * (n % 3)
    records["per_hour"][::2] = -0.0
    written = points_json(records, end_texts(CODES, *CODES[int(records["code"][0])][3:5]))
    assert written is not None and len(written) == -(-n // JOINED_POINTS) and all(type(p) is bytes for p in written)
    assert b"[" + b"".join(written) + b"]" == _plain(records, *CODES[int(records["code"][0])][3:5])


def test_a_series_of_a_few_widths_is_joined_from_pieces() -> None:
    records = _records(random.Random(9), 3_000)
    records["code"] = 0
    records["price"], records["per_hour"], records["per_gb"] = 2.5, 17.5, 0.21875
    records["price"][1_000:1_700] = 12.125
    records["per_hour"][2_000:] = float("nan")
    written = points_json(records, end_texts(CODES, "USD", "hour"))
    assert written is not None and len(written) == 3  # null is as wide as 17.5: the first and last share an array
    assert b"[" + b"".join(written) + b"]" == _plain(records, "USD", "hour")


def test_every_edge_moment_and_number_is_written_as_the_reference_does() -> None:
    records = np.zeros(len(MOMENTS) * len(NUMBERS), dtype=RECORD)
    records["at"] = [_us(m) for m in MOMENTS for _ in NUMBERS]
    records["price"] = NUMBERS * len(MOMENTS)
    records["per_hour"] = [float("nan"), *NUMBERS[1:]] * len(MOMENTS)
    records["per_gb"] = NUMBERS[::-1] * len(MOMENTS)
    records["code"] = [i % len(CODES) for i in range(len(records))]
    written = points_json(records, end_texts(CODES, "USD", "hour"))
    assert written is not None and b"[" + b"".join(written) + b"]" == _plain(records, "USD", "hour")
    assert b'"price":-0.0,' in b"".join(written) and b'"cny_per_hour":null' in b"".join(written)
    beyond = records[:1].copy()
    beyond["at"] = _us(datetime(9999, 12, 31, 23, 59, 59, 999_999)) + 1  # DuckDB can hold it, datetime cannot
    assert points_json(beyond, end_texts(CODES, "USD", "hour")) is None
    empty = points_json(records[:0], end_texts(CODES, "USD", "hour"))
    assert empty == []


LONG = [OFFERS[0], OFFERS[1], OFFERS[3]]  # an on-demand and a spot offer of one sku, and another provider's


def _long_series(store: PriceStore, start: datetime, points: int, step: timedelta) -> None:
    """`points` more observations of each LONG offer from `start` every `step`, copied from its last
    one (as a collector landing that often would), with the price changing now and then, -0.0, a
    NULL CNY figure every 7th (no FX that day) and another currency or unit for a few."""
    cur = store.cursor()
    columns = [name for (name, *_) in cur.execute("DESCRIBE observations").fetchall()]
    for provider, region, sku, pricing in LONG:
        values = {
            "observation_id": "nextval('observation_ids')",
            "observed_at": f"TIMESTAMP '{start.isoformat()}' + i * INTERVAL '{int(step.total_seconds())} seconds'",
            "price": "CASE WHEN i % 997 = 5 THEN -0.0 ELSE price + (i // 400) * 0.125 END",
            "currency": "CASE WHEN i % 500 < 3 THEN 'INR' ELSE currency END",
            "unit": "CASE WHEN i % 700 = 1 THEN 'month' ELSE unit END",
            "cny_per_hour": "CASE WHEN i % 7 = 0 THEN NULL ELSE cny_per_hour + (i // 300) * 0.5 END",
            "cny_per_gb_hour": "CASE WHEN i % 7 = 0 THEN NULL ELSE cny_per_gb_hour END",
        }
        cur.execute(
            f"INSERT INTO observations SELECT {', '.join(values.get(c, c) for c in columns)} FROM "
            "(SELECT * FROM observations WHERE provider = ? AND region = ? AND sku = ? AND pricing = ? "
            "AND cny_per_hour IS NOT NULL ORDER BY observed_at DESC LIMIT 1) CROSS JOIN range(?) AS r(i)",
            [provider, region, sku, pricing.value, points],
        )


def _long_questions(start: datetime, end: datetime) -> list[HistoryQuery]:
    since, until = utc_naive(start), utc_naive(end)
    questions = []
    for provider, region, sku, pricing in LONG:
        named = OfferFilter(providers=(provider,), regions=(region,), skus=(sku,), pricings=(pricing.value,))
        questions.append(HistoryQuery(since, until, named))
        questions.append(HistoryQuery(since + (until - since) / 3, until - (until - since) / 5, named))
    both = OfferFilter(providers=("aws",), regions=("us-east-1",), skus=(OFFERS[0][2],), pricings=("on_demand", "spot"))
    no_spot = OfferFilter(providers=both.providers, regions=both.regions, skus=both.skus, pricings=both.pricings,
                          include_interruptible=False)  # fmt: skip
    for offers in (both, no_spot):
        questions += [HistoryQuery(since, until, offers, limit=limit, offset=offset) for limit, offset in
                      ((1, 0), (1, 1), (2, 0), (5, 1))]  # fmt: skip
    sold_out = OfferFilter(providers=both.providers, regions=both.regions, skus=both.skus, pricings=both.pricings,
                           include_unavailable=False, gpus=("A100",))  # fmt: skip
    questions.append(HistoryQuery(since, until, sold_out))
    return questions


def _same(state: AppState, questions: list[HistoryQuery]) -> int:
    """Every answer is the reference's; returns the most points one series held from the files."""
    with api_history._layouts_lock:
        api_history._layouts.clear()
    longest = 0
    for query in questions:
        plain = history(state.store.cursor(), query, laid_out=False)
        assert _history_body(state, query) == _reference_body(query, plain), query
        found = history_from_files(query, *_layout(state))
        assert found is not None and found.points == plain.points
        longest = max([longest, *(len(s.points) for s in plain.series)])
    return longest


def _compacted_with_long_series(
    settings: Settings, store: PriceStore, points: int, step: timedelta
) -> tuple[AppState, datetime, datetime]:
    """A few random runs, then `points` of each LONG offer every `step`, compacted; (state, start, end)."""
    start = NOW - timedelta(days=200)
    end = _rounds(store, random.Random(points), start, 5)
    _long_series(store, end + timedelta(minutes=1), points, step)
    store.compact_history()
    return AppState(store, settings, clock=lambda: NOW), start, end


def test_long_series_from_files_and_held_observations_are_the_reference_bytes(
    settings: Settings, store: PriceStore
) -> None:
    state, start, end = _compacted_with_long_series(settings, store, 2_600, timedelta(minutes=50))
    end = end + timedelta(days=95)
    assert _same(state, _long_questions(start, end)) > 2_600
    assert _layout(state)[2] is None  # nothing since the compaction
    _long_series(store, end + timedelta(minutes=1), 2_300, timedelta(minutes=13))  # held since the compaction
    end = end + timedelta(days=25)
    assert _same(state, _long_questions(start, end)) > 4_900
    assert _layout(state)[2] is not None  # the tail came from memory


def test_long_answers_on_the_loop_and_in_the_thread_are_the_same_bytes(
    settings: Settings, store: PriceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP, a series of ~5,000 points is written on the event loop (AT_ONCE_POINTS) and, with the
    bound lowered, in the heavy answers' thread: the same bytes, the reference's."""
    state, start, _ = _compacted_with_long_series(settings, store, 4_900, timedelta(minutes=30))
    provider, region, sku, pricing = LONG[0]
    url = (f"/offers/history?provider={provider}&region={region}&sku={sku}&pricing={pricing.value}"
           f"&since={start.date()}&until={NOW.date()}")  # fmt: skip
    at_once = counting_at_once(monkeypatch)
    with serving(settings, store, NOW) as client:
        in_thread = client.get(url).content  # the layout read first, in the heavy answers' thread
        on_loop = client.get(url).content
        with monkeypatch.context() as patch:
            patch.setattr(api_history, "AT_ONCE_POINTS", 4_000)
            assert client.get(url).content == in_thread
    assert at_once == [False, True, False]
    query = history_query(state, HistoryParams.model_validate(dict(parse_qsl(urlsplit(url).query))))
    plain = history(store.cursor(), query, laid_out=False)
    assert plain.points > 4_900 and on_loop == in_thread == _reference_body(query, plain)
