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

_COLUMNS = ", ".join("o." + f for f in STORED_FIELDS)
_SNAPSHOT_SQL = f"""
    WITH {NEWEST_OK_RUNS_SQL}
    SELECT {_COLUMNS}
    FROM observations o
    JOIN newest_ok n ON o.run_id = n.run_id AND o.provider = n.provider AND o.pricing = n.pricing
    UNION ALL
    SELECT {_COLUMNS}
    FROM held_offers h
    JOIN newest_ok n ON h.run_id = n.run_id AND h.provider = n.provider AND h.pricing = n.pricing
    JOIN observations o ON o.observation_id = h.observation_id
    ORDER BY provider, region, sku, pricing
"""


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
    for row in cur.execute(_SNAPSHOT_SQL, [cutoff]).fetchall():
        entry = cover.get((row[2], row[10]))
        stale = entry.is_stale(judged_at) if entry is not None else True
        offers.append(offer_from_row(row, stale, held.get((row[2], row[3], row[4], row[10]))))
    last = cur.execute("SELECT max(finished_at) FROM runs WHERE finished_at < ?", [cutoff]).fetchone()
    as_of = max((o.observed_at for o in offers), default=None)
    return Snapshot(cutoff, offers, as_of, last[0] if last else None)


def snapshot_of_day(cur: duckdb.DuckDBPyConnection, day: date, now: datetime | None = None) -> Snapshot:
    """The market at the end of `day` (UTC)."""
    return snapshot_at(cur, end_of_day_utc(day), now)
