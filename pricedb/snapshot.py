"""The market as it was at a moment, rebuilt from the append-only observations.

The current `offers` table is what you get by replaying every run in order: each successful run
replaces its provider's offers for the pricings it covered, except those it *held* (their new quote
was rejected by the sanity checks: they keep their last good observation); a failed or skipped run
changes nothing. A snapshot at `cutoff` replays the same rule on the runs finished before it, so for
each (provider, pricing) it holds exactly the observations of the newest successful run covering
that pricing, plus the observations that run held. That means, precisely:

- an offer's row is its latest accepted observation from a successful run finished before `cutoff`;
- an offer that a later successful run covering its provider and pricing no longer listed (before
  `cutoff`) is gone: it had been withdrawn; one whose new quote was rejected stays, stale, with the
  rejection's reason (`held_reason`);
- a provider whose later runs failed or were skipped keeps its last good offers, marked stale as
  judged at `cutoff` (by the runs known then).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from typing import Any, Literal

import duckdb

from pricedb.offer_filter import OfferFilter, sql_where
from pricedb.queries import STORED_FIELDS, HeldOffer, Offer, RunState, held_by, offer_from_row, run_state

_COLUMNS = ", ".join(STORED_FIELDS)
_KEY = ("provider", "region", "sku", "pricing")
# What a page of a snapshot filters on (pricedb.offer_filter) and orders by, besides its sort column.
_PAGE_COLUMNS = ("observation_id", *_KEY, "gpu_model", "availability", "observed_at")


@dataclass(frozen=True)
class MarketState:
    """What decides the market just before a cutoff: the runs finished before it and the offers their
    newest successful runs held. Fixed while the data is (a caller asking many questions about one
    cutoff may read it once per data version: `state_of` below)."""

    runs: RunState
    held: dict[tuple[str, str, str, str], HeldOffer]

    @property
    def cache_size(self) -> int:
        """Bytes it holds, for a byte-bounded cache: the dicts, their key strings, and a generous
        ~600 bytes per entry for the key tuples, their strings' headers and the small records they hold."""
        parts = (self.runs.coverage, self.runs.newest_ok, self.held)
        entries = [key for part in parts for key in part]
        return (
            sum(sys.getsizeof(part) for part in parts)
            + sum(len(text) for key in entries for text in key)
            + sum(len(h.reason) for h in self.held.values())
            + 600 * len(entries)
        )


def market_state(cur: duckdb.DuckDBPyConnection, cutoff: datetime) -> MarketState:
    state = run_state(cur, cutoff)
    return MarketState(state, held_by(cur, state))


StateOf = Callable[[datetime], MarketState]  # cutoff → its market state, as `market_state` reads it


@dataclass(frozen=True)
class MarketSql:
    """A snapshot as a SQL subquery: the stored columns of its offers plus `stale` and `held_reason`,
    judged as `snapshot_at` judges them, with the values its placeholders take.

    Observations are appended run by run, so their row groups are in run (and observation id) order:
    the constant run id and observation id lists let DuckDB's zone maps skip every row group outside
    them, so the cost follows the snapshot's size, not the whole history's (a join would read every
    row's run id). The few (provider, pricing) scopes, their staleness and the held offers are small
    VALUES lists joined on top."""

    sql: str
    values: list[Any]
    empty: bool  # no successful run before the cutoff: no offers
    state: RunState  # what the runs before the cutoff say


def _values(columns: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """An inline table of `rows`, one list parameter per column (the plan stays small however many rows)."""
    unnested = ", ".join(f"unnest(?::{kind}[]) AS {column}" for column, kind in zip(columns, types, strict=True))
    return f"(SELECT {unnested})", [list(column) for column in zip(*rows, strict=True)] or [[] for _ in columns]


def _ids(values: set[int]) -> str:
    return ", ".join(str(int(v)) for v in sorted(values)) or "NULL"


def market_sql(
    cur: duckdb.DuckDBPyConnection,
    cutoff: datetime,
    now: datetime | None = None,
    columns: tuple[str, ...] = STORED_FIELDS,
    state_of: StateOf | None = None,
) -> MarketSql:
    """The market just before `cutoff` (naive UTC) as SQL, with these of the stored `columns` (fewer
    columns, cheaper planning); staleness judged at the earlier of `cutoff` and `now`, from the runs
    known by then.

    A run's observations are judged by their (provider, pricing)'s coverage; a held observation is
    stale with its reason (the run that held it did not list its key, so no run row is held)."""
    judged_at = min(cutoff, now) if now is not None else cutoff
    known = state_of(cutoff) if state_of is not None else market_state(cur, cutoff)
    state, held = known.runs, known.held
    scope_rows = [(run, pair[1], state.coverage[pair].is_stale(judged_at)) for pair, run in state.newest_ok.items()]
    scopes, scope_values = _values(("run_id", "pricing", "stale"), ("BIGINT", "VARCHAR", "BOOLEAN"), scope_rows)
    holds, hold_values = _values(("observation_id", "reason"), ("BIGINT", "VARCHAR"),
                                 [(h.observation_id, h.reason) for h in held.values()])  # fmt: skip
    runs = {run for run, _, _ in scope_rows}
    chosen = ", ".join(columns)
    sql = f"""(
        SELECT {chosen}, s.stale, NULL::VARCHAR AS held_reason
        FROM observations JOIN {scopes} s USING (run_id, pricing) WHERE run_id IN ({_ids(runs)})
        UNION ALL
        SELECT {chosen}, true, h.reason
        FROM observations JOIN {holds} h USING (observation_id)
        WHERE observation_id IN ({_ids({h.observation_id for h in held.values()})})
    )"""
    return MarketSql(sql, [*scope_values, *hold_values], empty=not runs, state=state)


def _snapshot_rows(cur: duckdb.DuckDBPyConnection, market: MarketSql) -> list[tuple[Any, ...]]:
    if market.empty:
        return []
    return cur.execute(
        f"SELECT {_COLUMNS}, stale, held_reason FROM {market.sql} ORDER BY {', '.join(_KEY)}", market.values
    ).fetchall()


def _offer(row: tuple[Any, ...]) -> Offer:
    return offer_from_row(row[:-2], row[-2], row[-1])


@dataclass(frozen=True)
class Snapshot:
    cutoff: datetime  # naive UTC, exclusive
    offers: list[Offer]
    as_of: datetime | None  # newest observation among them
    last_change: datetime | None  # newest run (of any outcome) finished before the cutoff


def end_of_day_utc(day: date) -> datetime:
    """The exclusive end of a UTC calendar day, as naive UTC."""
    return datetime.combine(day + timedelta(days=1), time())


def snapshot_at(cur: duckdb.DuckDBPyConnection, cutoff: datetime, now: datetime | None = None) -> Snapshot:
    """Offers as they stood just before `cutoff` (naive UTC); staleness judged at the earlier of
    `cutoff` and `now`, from the runs known by then."""
    offers = [_offer(row) for row in _snapshot_rows(cur, market_sql(cur, cutoff, now))]
    last = cur.execute("SELECT max(finished_at) FROM runs WHERE finished_at < ?", [cutoff]).fetchone()
    as_of = max((o.observed_at for o in offers), default=None)
    return Snapshot(cutoff, offers, as_of, last[0] if last else None)


def snapshot_of_day(cur: duckdb.DuckDBPyConnection, day: date, now: datetime | None = None) -> Snapshot:
    """The market at the end of `day` (UTC)."""
    return snapshot_at(cur, end_of_day_utc(day), now)


SortColumn = Literal["cny_per_gb_hour", "cny_per_hour", "cny_per_gpu_hour", "price", "provider", "observed_at"]


@dataclass(frozen=True)
class SnapshotPage:
    offers: list[Offer]  # the page
    count: int  # offers matching the filter
    as_of: datetime | None  # newest observation of the whole snapshot


def snapshot_page(
    cur: duckdb.DuckDBPyConnection,
    cutoff: datetime,
    now: datetime | None,
    chosen: OfferFilter,
    sort: SortColumn,
    desc: bool,
    limit: int,
    offset: int,
    state_of: StateOf | None = None,
) -> SnapshotPage:
    """One page of `snapshot_at(cutoff, now)`'s offers matching `chosen` (pricedb.offer_filter's rules),
    ordered as `/offers` orders them: offers without a `sort` value after the others, ties by key, the
    whole order reversed when `desc`. Only the page becomes Python objects; filter, order and count
    run in the database (the answer is `snapshot_at` filtered, sorted and sliced: a test compares them)."""
    # Two steps: the page's observation ids, ordered and counted over the few columns that filter and
    # sort (planning and sorting 37 columns cost more than the rows), then the page's whole rows by id.
    columns = _PAGE_COLUMNS if sort in _PAGE_COLUMNS else (*_PAGE_COLUMNS, sort)
    market = market_sql(cur, cutoff, now, columns, state_of)
    if market.empty:
        return SnapshotPage([], 0, None)
    clauses, values = sql_where(replace(chosen, include_stale=True))
    if not chosen.include_stale:
        clauses.append("NOT stale")
    direction = "DESC" if desc else "ASC"
    order = ", ".join(f"{term} {direction}" for term in (f"{sort} IS NULL", sort, *_KEY))
    # The newest observation of the whole snapshot and the count of matching offers ride along every
    # row of the page (window aggregates over these few columns), so a page costs one scan.
    rows = cur.execute(
        f"SELECT observation_id, stale, held_reason, as_of, count(*) OVER () FROM "
        f"(SELECT *, max(observed_at) OVER () AS as_of FROM {market.sql}) WHERE {' AND '.join(clauses)} "
        f"ORDER BY {order} LIMIT ? OFFSET ?",
        [*market.values, *values, limit, offset],
    ).fetchall()
    if not rows:  # nothing matches, or past the end: count and newest observation on their own
        counted = cur.execute(
            f"SELECT count(*) FILTER (WHERE {' AND '.join(clauses)}), max(observed_at) FROM {market.sql}",
            [*values, *market.values],
        ).fetchone()
        return SnapshotPage([], int(counted[0]), counted[1]) if counted else SnapshotPage([], 0, None)
    ids = [row[0] for row in rows]
    stored = {
        row[0]: row
        for row in cur.execute(
            f"SELECT {_COLUMNS} FROM observations WHERE observation_id BETWEEN ? AND ? "
            "AND observation_id IN (SELECT unnest(?::BIGINT[]))",
            [min(ids), max(ids), ids],
        ).fetchall()
    }
    offers = [offer_from_row(stored[identifier], stale, reason) for identifier, stale, reason, _, _ in rows]
    return SnapshotPage(offers, int(rows[0][-1]), rows[0][-2])
