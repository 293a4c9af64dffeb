"""Observations laid out by offer, so one offer's history is read from a row group or two.

`observations` is appended run by run, so it lies in time order: a snapshot (one run's rows) is
found by DuckDB's zone maps, but one offer's six months are spread over every row group, and
reading them meant reading all 10M rows. `compact` copies the observations up to the newest one
into `history_points` (migration 7), ordered by offer (`series`, numbered in key order in
`history_series`) and then time, and records that newest id in `history_layout`. A question about
named offers then reads their series from `history_points` (zone maps on `series` skip the other
row groups) plus the observations appended since (`observation_id` beyond it: zone maps again), which
together are exactly the observations of those offers: the answer does not change, only its cost.

`compact` rewrites the layout in one transaction; `serve` runs it after the daily digest, and it can
run at any time (a question between two compactions reads a longer tail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product

import duckdb

# The columns history reads (pricedb.history) and filters on (pricedb.offer_filter.sql_where).
POINT_COLUMNS = (
    "observation_id", "provider", "region", "sku", "pricing", "gpu_model", "gpu_memory_gb", "gpu_count", "currency",
    "unit", "availability", "observed_at", "price", "cny_per_hour", "cny_per_gb_hour",
)  # fmt: skip
_COLUMNS = ", ".join(POINT_COLUMNS)
_KEY = ("provider", "region", "sku", "pricing")
MAX_SERIES_IN_MEMORY = 500_000  # a bigger layout's series numbers are looked up in SQL per question
MAX_NAMED_KEYS = 1_000  # a question naming more key combinations looks them up in SQL


@dataclass(frozen=True)
class Layout:
    """The layout as one data version sees it, read once and kept by the caller for that version
    (api.history), so a named offer's question costs one query, not three: the newest id laid out,
    the newest observation (no tail to read when they are equal) and every series number by key
    (provider, lower(region), sku, pricing); `series` is None when there are too many to hold."""

    compacted_upto: int
    newest_id: int
    series: dict[tuple[str, str, str, str], tuple[int, ...]] | None
    # Each series' own key: its `series` key by number (shared tuples), and its region where its case
    # differs from the lower case the key holds.
    keys: list[tuple[str, str, str, str] | None] = field(default_factory=list, compare=False, repr=False)
    cased_regions: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    laid_out_points: int = 0  # rows in history_points (pricedb.history_files checks its files against it)

    def key_of(self, number: int) -> tuple[str, str, str, str]:
        """The (provider, region, sku, pricing) of a series held in memory."""
        provider, lower_region, sku, pricing = self.keys[number]  # type: ignore[misc]
        return provider, self.cased_regions.get(number, lower_region), sku, pricing

    def series_of(
        self, providers: tuple[str, ...], lower_regions: list[str], skus: tuple[str, ...], pricings: tuple[str, ...]
    ) -> list[int] | None:
        """The series numbers these values name (every combination), None when not held in memory."""
        if self.series is None or len(providers) * len(lower_regions) * len(skus) * len(pricings) > MAX_NAMED_KEYS:
            return None
        found = self.series
        return [number for key in product(providers, lower_regions, skus, pricings) for number in found.get(key, ())]


def read_layout(cur: duckdb.DuckDBPyConnection, previous: Layout | None = None) -> Layout:
    """The layout now; the series numbers are taken from `previous` when no compaction happened since."""
    row = cur.execute(
        "SELECT (SELECT compacted_upto FROM history_layout), (SELECT coalesce(max(observation_id), 0) FROM "
        "observations), (SELECT count(*) FROM history_series), (SELECT count(*) FROM history_points)"
    ).fetchone()
    upto, newest, count, points = (int(v or 0) for v in row) if row else (0, 0, 0, 0)
    if count > MAX_SERIES_IN_MEMORY:
        return Layout(upto, newest, None, laid_out_points=points)
    if previous is not None and previous.compacted_upto == upto and previous.series is not None:
        return Layout(upto, newest, previous.series, previous.keys, previous.cased_regions, points)
    series: dict[tuple[str, str, str, str], tuple[int, ...]] = {}
    keys: list[tuple[str, str, str, str] | None] = [None] * (count + 1)  # numbered 1..count
    cased: dict[int, str] = {}
    texts: dict[str, str] = {}  # providers, regions and pricings repeat: keep each text once
    for number, region, *key in cur.execute(
        "SELECT series, region, provider, lower(region), sku, pricing FROM history_series"
    ).fetchall():
        shared: tuple[str, str, str, str] = tuple(texts.setdefault(text, text) for text in key)  # type: ignore[assignment]
        series[shared] = (*series.get(shared, ()), int(number))
        keys[int(number)] = shared
        if region != shared[1]:
            cased[int(number)] = region
    return Layout(upto, newest, series, keys, cased, points)


def compact(cur: duckdb.DuckDBPyConnection) -> int:
    """Lay out every observation so far by offer (inside the caller's transaction); returns the
    newest observation id laid out."""
    row = cur.execute("SELECT coalesce(max(observation_id), 0) FROM observations").fetchone()
    upto = int(row[0]) if row else 0
    cur.execute("DELETE FROM history_series")
    cur.execute(
        "INSERT INTO history_series SELECT row_number() OVER (ORDER BY provider, region, sku, pricing), "
        "provider, region, sku, pricing FROM (SELECT DISTINCT provider, region, sku, pricing FROM observations "
        "WHERE observation_id <= ?)",
        [upto],
    )
    cur.execute("DELETE FROM history_points")
    cur.execute(
        f"INSERT INTO history_points SELECT s.series, {', '.join('o.' + c for c in POINT_COLUMNS)} "
        "FROM observations o JOIN history_series s USING (provider, region, sku, pricing) "
        "WHERE o.observation_id <= ? ORDER BY s.series, o.observed_at, o.observation_id",
        [upto],
    )
    cur.execute("UPDATE history_layout SET compacted_upto = ?", [upto])
    return upto


def laid_out_only(
    layout: Layout | None,
    providers: tuple[str, ...],
    lower_regions: list[str],
    skus: tuple[str, ...],
    pricings: tuple[str, ...],
) -> list[int] | None:
    """The series numbers these values name, when their every observation is in `history_points`
    (nothing appended since the compaction) and the numbers are held in memory; None otherwise."""
    if layout is None or layout.newest_id > layout.compacted_upto:
        return None
    held = layout.series_of(providers, lower_regions, skus, pricings)
    return sorted(held) if held is not None else None


def named_offers_source(
    cur: duckdb.DuckDBPyConnection,
    providers: tuple[str, ...],
    lower_regions: list[str],
    skus: tuple[str, ...],
    pricings: tuple[str, ...],
    layout: Layout | None = None,
) -> str:
    """A FROM clause holding every observation of the offers these values name (and perhaps a few
    more: the history query's own filters apply on top). With `layout` (read at this data version),
    no query: its series numbers, and no tail when nothing was appended since the compaction."""
    held = layout.series_of(providers, lower_regions, skus, pricings) if layout is not None else None
    if layout is not None and held is not None:
        laid_out = ", ".join(str(s) for s in sorted(held)) or "NULL"
        points = f"SELECT {_COLUMNS} FROM history_points WHERE series IN ({laid_out})"
        if layout.newest_id <= layout.compacted_upto:
            return f"({points})"
        return (
            f"({points} UNION ALL SELECT {_COLUMNS} FROM observations WHERE observation_id > {layout.compacted_upto})"
        )
    clauses, values = [], []
    for column, any_of in (("provider", providers), ("lower(region)", lower_regions), ("sku", skus),
                           ("pricing", pricings)):  # fmt: skip
        clauses.append(f"{column} IN ({', '.join('?' for _ in any_of)})")
        values.extend(any_of)
    series = [s for (s,) in cur.execute(f"SELECT series FROM history_series WHERE {' AND '.join(clauses)}", values)
              .fetchall()]  # fmt: skip
    row = cur.execute("SELECT compacted_upto FROM history_layout").fetchone()
    upto = int(row[0]) if row else 0
    laid_out = ", ".join(str(int(s)) for s in sorted(series)) or "NULL"
    return (
        f"(SELECT {_COLUMNS} FROM history_points WHERE series IN ({laid_out}) "
        f"UNION ALL SELECT {_COLUMNS} FROM observations WHERE observation_id > {upto})"
    )
