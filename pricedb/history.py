"""Price history: every observation of the matching offers between two moments, one series per
offer (provider, region, sku, pricing), oldest point first.

Observations are append-only and indexed on (provider, region, sku, pricing, observed_at), so a
query picks its series first (paged with `limit`/`offset`) and then reads their points in index
order."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import duckdb

from pricedb.history_layout import Layout, laid_out_only, named_offers_source
from pricedb.offer_filter import SPOT, OfferFilter, sql_where

FETCH_ROWS = 10_000  # rows turned into Python objects at a time: short-lived, so memory stays flat


@dataclass(frozen=True)
class HistoryQuery:
    since: datetime  # naive UTC, inclusive
    until: datetime  # naive UTC, exclusive
    # Which offers' observations: pricedb.offer_filter's rules (observations are never stale).
    offers: OfferFilter = field(default_factory=OfferFilter)
    limit: int = 100  # series
    offset: int = 0
    max_points: int | None = None  # refuse (TooManyPoints) a page holding more observations


@dataclass
class Series:
    provider: str
    region: str
    sku: str
    pricing: str
    gpu_model: str
    gpu_memory_gb: float
    gpu_count: int
    currency: str
    unit: str
    points: list[Any] = field(default_factory=list)  # as `history`'s `point` builds them (default: dicts)
    # Instead of `points`: their JSON, comma-separated, in pieces (api.points_json).
    points_json: list[memoryview] | list[bytes] | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.sku, self.pricing)


class TooManyPoints(ValueError):
    """The page's series hold more observations than `HistoryQuery.max_points`."""

    def __init__(self, points: int, series: int, max_points: int) -> None:
        super().__init__(f"{points:,} observations in {series:,} series, more than {max_points:,}")
        self.points, self.series, self.max_points = points, series, max_points


@dataclass(frozen=True)
class History:
    series: list[Series]
    total_series: int
    points: int


def _where(query: HistoryQuery) -> tuple[str, list[Any]]:
    clauses, values = sql_where(query.offers)
    return " AND ".join(["observed_at >= ?", "observed_at < ?", *clauses]), [query.since, query.until, *values]


def _in(column: str, chosen: set[str]) -> tuple[str, list[Any]]:
    return f"{column} IN ({', '.join('?' for _ in chosen)})", sorted(chosen)


def _source(cur: duckdb.DuckDBPyConnection, offers: OfferFilter, laid_out: bool, layout: Layout | None) -> str:
    """Where the observations are read: for a question naming its offers (provider, region, sku and
    pricing each given), their points as laid out by offer (pricedb.history_layout) plus the newest;
    otherwise the observations table."""
    if not (laid_out and offers.providers and offers.regions and offers.skus and offers.pricings):
        return "observations"
    return named_offers_source(
        cur, offers.providers, sorted(offers.lower_regions), offers.skus, offers.pricings, layout
    )


_POINTS = """
    SELECT provider, region, sku, pricing, gpu_model, gpu_memory_gb, gpu_count, currency, unit,
           observed_at, price, cny_per_hour, cny_per_gb_hour
    FROM {source}
    WHERE {where}
    ORDER BY provider, region, sku, pricing, observed_at, observation_id
"""


# The same from the layout alone, for series chosen by their key (pricedb.history_layout): the key's
# columns are neither filtered nor read (each series' key is held in memory; a new question reads its
# row group cold, column by column), and `series` is numbered in key order, so ordering by it is
# ordering by key.
# No ORDER BY: the few points of named offers are sorted in Python (`_laid_out_rows`); for six months
# of one offer at 50,000 offers the query took 2.19 ms CPU that way against 2.77 ms sorted by DuckDB.
_LAID_OUT_POINTS = """
    SELECT series, gpu_model, gpu_memory_gb, gpu_count, currency, unit, observed_at, price, cny_per_hour,
           cny_per_gb_hour, observation_id
    FROM history_points
    WHERE series IN ({series}) AND {where}
"""


def _laid_out_rows(
    cur: duckdb.DuckDBPyConnection, query: HistoryQuery, layout: Layout, series: list[int]
) -> list[tuple[Any, ...]]:
    """`_POINTS`' rows for these series, which are exactly those the question's key values name."""
    offers = query.offers
    if not offers.include_interruptible:  # the rule sql_where writes over `pricing`, a part of the key
        series = [n for n in series if layout.key_of(n)[3] != SPOT]
    if not series:
        return []
    unnamed = replace(offers, providers=(), regions=(), skus=(), pricings=(), include_interruptible=True)
    where, values = _where(replace(query, offers=unnamed))
    numbers = ", ".join(str(int(n)) for n in series)
    rows = cur.execute(_LAID_OUT_POINTS.format(series=numbers, where=where), values).fetchall()
    rows.sort(key=_series_order)  # series, observed_at, observation_id
    return [(*layout.key_of(number), *rest[:-1]) for number, *rest in rows]


def _series_order(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return row[0], row[6], row[-1]


# One point of a series from (observed_at, price, cny_per_hour, cny_per_gb_hour) and, when they differ
# from the series' own, the point's (currency, unit); `as_dict` is the plain form.
PointBuilder = Callable[[datetime, float, float | None, float | None, tuple[str, str] | None], Any]


def as_dict(
    at: datetime, price: float, per_hour: float | None, per_gb: float | None, changed: tuple[str, str] | None
) -> dict[str, Any]:
    point: dict[str, Any] = {"observed_at": at, "price": price, "cny_per_hour": per_hour, "cny_per_gb_hour": per_gb}
    if changed is not None:  # the provider changed how it prices
        point.update(currency=changed[0], unit=changed[1])
    return point


def history(
    cur: duckdb.DuckDBPyConnection,
    query: HistoryQuery,
    laid_out: bool = True,
    layout: Layout | None = None,
    point: PointBuilder = as_dict,
) -> History:
    """Two passes: the matching series (keys only, one cheap scan), then the points of the page's
    series, selected by their exact key values (plain equality filters DuckDB pushes into the scan).
    A question naming its offers reads their few points once, laid out by offer, and pages them here.
    `laid_out=False` reads the observations table only (the same answer; tests compare the two).
    `layout`: the layout read at this data version (pricedb.history_layout.read_layout), which spares
    the named question its look-ups; `point` builds each point (api.history writes their JSON)."""
    where, values = _where(query)
    offers = query.offers
    only = (
        laid_out_only(layout, offers.providers, sorted(offers.lower_regions), offers.skus, offers.pricings)
        if laid_out and offers.providers and offers.regions and offers.skus and offers.pricings
        else None
    )
    observations = "history_points" if only is not None else _source(cur, offers, laid_out, layout)
    if observations != "observations":
        if only is not None and layout is not None:
            rows = _laid_out_rows(cur, query, layout, only)
        else:
            rows = cur.execute(_POINTS.format(source=observations, where=where), values).fetchall()
        keys = list(dict.fromkeys(tuple(row[:4]) for row in rows))
        page = keys[query.offset : query.offset + query.limit]
        wanted = set(page)
        if query.max_points is not None:
            points = sum(tuple(row[:4]) in wanted for row in rows)
            if points > query.max_points:
                raise TooManyPoints(points, len(page), query.max_points)
        return _series(iter(rows), wanted, len(keys), point)
    keys = cur.execute(
        f"SELECT DISTINCT provider, region, sku, pricing FROM {observations} WHERE {where} "
        "ORDER BY provider, region, sku, pricing",
        values,
    ).fetchall()
    page = keys[query.offset : query.offset + query.limit]
    if not page:
        return History([], len(keys), 0)
    narrowing, narrow_values = [], []
    for index, column in enumerate(("provider", "region", "sku", "pricing")):
        clause, chosen = _in(column, {key[index] for key in page})
        narrowing.append(clause)
        narrow_values.extend(chosen)
    wanted = set(page)
    if query.max_points is not None:  # counted in the database before a row is turned into Python
        counts = cur.execute(
            f"SELECT provider, region, sku, pricing, count(*) FROM {observations} WHERE {where} AND "
            f"{' AND '.join(narrowing)} GROUP BY ALL",
            [*values, *narrow_values],
        ).fetchall()
        points = sum(n for *key, n in counts if tuple(key) in wanted)
        if points > query.max_points:
            raise TooManyPoints(points, len(page), query.max_points)
    cur.execute(
        _POINTS.format(source=observations, where=f"{where} AND {' AND '.join(narrowing)}"),
        [*values, *narrow_values],
    )
    rows = (row for chunk in iter(lambda: cur.fetchmany(FETCH_ROWS), []) for row in chunk)
    return _series(rows, wanted, len(keys), point)


def _series(
    rows: Iterator[tuple[Any, ...]], wanted: set[tuple[Any, ...]], total_series: int, point: PointBuilder
) -> History:
    """The page's series from point rows in key and time order."""
    series: list[Series] = []
    current: Series | None = None
    current_key: tuple[Any, ...] | None = None
    count = 0
    for provider, region, sku, pricing, model, memory, gpus, currency, unit, at, price, per_hour, per_gb in rows:
        key = (provider, region, sku, pricing)
        if key not in wanted:  # the per-column filters can admit combinations outside the page
            continue
        if current is None or current_key != key:
            current, current_key = Series(provider, region, sku, pricing, model, memory, gpus, currency, unit), key
            series.append(current)
        changed = None if currency == current.currency and unit == current.unit else (currency, unit)
        current.points.append(point(at, price, per_hour, per_gb, changed))
        count += 1
    return History(series, total_series, count)
