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

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

import duckdb

from pricedb.queries import NEWEST_OK_RUNS_SQL, STORED_FIELDS, Offer, coverage, held_offers, offer_from_row

_COLUMNS = ", ".join(STORED_FIELDS)
# Two steps: the few runs (and held observations) that make the market at the cutoff, then their
# observations by constant id lists. Observations are appended run by run, so their row groups are in
# run (and observation id) order and DuckDB's zone maps skip every row group outside those ids: the
# cost follows the snapshot's size, not the whole history's (a join would read every row's run id).
_MAKERS_SQL = f"""
    WITH {NEWEST_OK_RUNS_SQL}
    SELECT 'run', n.run_id, n.provider, n.pricing FROM newest_ok n
    UNION ALL
    SELECT 'held', h.observation_id, h.provider, h.pricing
    FROM held_offers h JOIN newest_ok n ON h.run_id = n.run_id AND h.provider = n.provider AND h.pricing = n.pricing
"""


def _ids(values: set[int]) -> str:
    return ", ".join(str(int(v)) for v in sorted(values)) or "NULL"


def _snapshot_rows(cur: duckdb.DuckDBPyConnection, cutoff: datetime) -> list[tuple[object, ...]]:
    runs: dict[int, set[tuple[str, str]]] = {}
    held: set[int] = set()
    for kind, identifier, provider, pricing in cur.execute(_MAKERS_SQL, [cutoff]).fetchall():
        if kind == "run":
            runs.setdefault(identifier, set()).add((provider, pricing))
        else:
            held.add(identifier)
    if not runs:
        return []
    # A run's observations count for the (provider, pricing) scopes it is the newest successful run of.
    scopes = {(run, provider, pricing) for run, pairs in runs.items() for provider, pricing in pairs}
    rows = cur.execute(
        f"SELECT run_id, {_COLUMNS} FROM observations WHERE run_id IN ({_ids(set(runs))}) "
        f"UNION ALL SELECT NULL, {_COLUMNS} FROM observations WHERE observation_id IN ({_ids(held)}) "
        "ORDER BY provider, region, sku, pricing"
    ).fetchall()
    return [row[1:] for row in rows if row[0] is None or (row[0], row[3], row[11]) in scopes]


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
    judged_at = min(cutoff, now) if now is not None else cutoff
    cover, held = coverage(cur, before=cutoff), held_offers(cur, before=cutoff)
    offers = []
    for row in _snapshot_rows(cur, cutoff):
        entry = cover.get((row[2], row[10]))
        stale = entry.is_stale(judged_at) if entry is not None else True
        offers.append(offer_from_row(row, stale, held.get((row[2], row[3], row[4], row[10]))))
    last = cur.execute("SELECT max(finished_at) FROM runs WHERE finished_at < ?", [cutoff]).fetchone()
    as_of = max((o.observed_at for o in offers), default=None)
    return Snapshot(cutoff, offers, as_of, last[0] if last else None)


def snapshot_of_day(cur: duckdb.DuckDBPyConnection, day: date, now: datetime | None = None) -> Snapshot:
    """The market at the end of `day` (UTC)."""
    return snapshot_at(cur, end_of_day_utc(day), now)
