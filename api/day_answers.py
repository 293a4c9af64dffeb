"""Answers about past days built ahead of the question, after each compaction (pricedb.day_answers
keeps them and says when they still hold).

Two questions per day that is over: `/offers?date=D` as first asked (no filter, the default order,
the first page) and, for a day with no stored digest, `/digest?date=D` as built on demand. Each is
built by the very code that answers the question (api.answers.day_page, pricedb.digest.build_digest)
and kept as the JSON it is sent as, so a kept answer is the on-demand answer byte for byte; the
digest's `built_at` (the moment of asking) is set when it is served. A kept answer is served only
while the runs finished before its day's end are those it was built from; otherwise, and for every
other question about a past day, the answer is built on demand as before.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from api.answers import day_page
from api.query import OffersParams
from api.state import dumps
from pricedb.day_answers import DAY_PAGE, DIGEST, RunsSeen, keep_day_answers, kept_days, runs_seen
from pricedb.digest import build_digest, day_window
from pricedb.settings import Settings
from pricedb.snapshot import end_of_day_utc
from pricedb.store import PriceStore

BATCH_DAYS = 20  # answers kept per write: the bodies of a batch are held in memory until then


def build_day_answers(store: PriceStore, settings: Settings, now: datetime) -> int:
    """Build and keep the answers of every day over by `now` (naive UTC) since the first run that
    has none kept, or one built from other runs; returns how many were built."""
    cur = store.cursor()
    row = cur.execute("SELECT min(finished_at) FROM runs").fetchone()
    if row is None or row[0] is None:
        return 0
    first: datetime = row[0]
    zone = settings.digest_zone
    stored = {day for (day,) in cur.execute("SELECT date FROM digests").fetchall()}

    def page(day: date) -> bytes:
        return dumps(day_page(cur, day, now, OffersParams(date=day)))

    def digest(day: date) -> bytes:
        return dumps(build_digest(cur, day, zone, now))

    local_first = first.replace(tzinfo=UTC).astimezone(zone).date()
    built = _build(store, DAY_PAGE, "UTC", _days_over(first.date(), now, end_of_day_utc), page)
    days = [day for day in _days_over(local_first, now, lambda day: day_window(day, zone)[1]) if day[0] not in stored]
    return built + _build(store, DIGEST, zone.key, days, digest)


def _days_over(first: date, now: datetime, end: Callable[[date], datetime]) -> list[tuple[date, datetime]]:
    """Each day from `first` whose end is not after `now`, with its end."""
    days = []
    day = first
    while end(day) <= now:
        days.append((day, end(day)))
        day += timedelta(days=1)
    return days


def _build(
    store: PriceStore, kind: str, zone: str, days: list[tuple[date, datetime]], body: Callable[[date], bytes]
) -> int:
    cur = store.cursor()
    kept = kept_days(cur, kind, zone)
    seen = runs_seen(cur, [end for _, end in days])
    wanted = [(day, now_seen) for (day, _), now_seen in zip(days, seen, strict=True) if kept.get(day) != now_seen]
    for start in range(0, len(wanted), BATCH_DAYS):
        batch: list[tuple[date, RunsSeen, bytes]] = [
            (day, s, body(day)) for day, s in wanted[start : start + BATCH_DAYS]
        ]
        keep_day_answers(store, kind, zone, batch)
    return len(wanted)
