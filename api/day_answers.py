"""Answers about past days built ahead of the question, after each compaction (pricedb.day_answers
keeps them and says when they still hold).

Two questions per day that is over: `/offers?date=D` as first asked (no filter, the default order,
the first page) and, for a day with no stored digest, `/digest?date=D` as built on demand. Each is
built by the very code that answers the question (api.answers.day_page, pricedb.digest.build_digest)
and kept as the JSON it is sent as, so a kept answer is the on-demand answer byte for byte; the
digest's `built_at` (the moment of asking) is set when it is served. A kept answer is served only
while the runs finished before its day's end are those it was built from; otherwise, and for every
other question about a past day, the answer is built on demand as before. The answers kept take at
most `GPUPRICE_DAY_ANSWERS_MB` on disk: the newest days first, the older ones built on demand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

from api.answers import day_page
from api.query import OffersParams
from api.state import dumps
from pricedb.day_answers import (
    DAY_PAGE,
    DIGEST,
    RunsSeen,
    drop_day_answers,
    keep_day_answers,
    kept_days,
    kept_sizes,
    runs_seen,
)
from pricedb.digest import build_digest, day_window
from pricedb.settings import Settings
from pricedb.snapshot import end_of_day_utc, market_state
from pricedb.store import PriceStore

BATCH_DAYS = 20  # answers kept per write: the bodies of a batch are held in memory until then


class _Question(NamedTuple):
    kind: str
    zone: str
    day: date
    end: datetime  # the day's end, naive UTC: the runs finished before it are what the answer reads
    build: Callable[[date], bytes]


def build_day_answers(store: PriceStore, settings: Settings, now: datetime) -> int:
    """Build and keep the answers of every day over by `now` (naive UTC) since the first run, newest
    first, within `settings.day_answers_mb` on disk; a day kept from the same runs is not built again,
    and days past the bound stop being kept. Returns how many were built."""
    cur = store.cursor()
    row = cur.execute("SELECT min(finished_at) FROM runs").fetchone()
    if row is None or row[0] is None:
        return 0
    first: datetime = row[0]
    zone = settings.digest_zone
    stored = {day for (day,) in cur.execute("SELECT date FROM digests").fetchall()}

    # Newest day first, each day's end is the next one's start: the last few cutoffs' market states
    # are read once (a day's page and its digest, a digest and the day before's).
    state_of = functools.lru_cache(maxsize=4)(functools.partial(market_state, cur))  # 4 states, this build's

    def page(day: date) -> bytes:
        return dumps(day_page(cur, day, now, OffersParams(date=day), state_of))

    def digest(day: date) -> bytes:
        return dumps(build_digest(cur, day, zone, now, state_of))

    local_first = first.replace(tzinfo=UTC).astimezone(zone).date()
    questions = [
        _Question(DAY_PAGE, "UTC", day, end, page) for day, end in _days_over(first.date(), now, end_of_day_utc)
    ]
    questions += [
        _Question(DIGEST, zone.key, day, end, digest)
        for day, end in _days_over(local_first, now, lambda day: day_window(day, zone)[1])
        if day not in stored
    ]
    questions.sort(key=lambda q: q.day, reverse=True)
    return _build(store, questions, int(settings.day_answers_mb * 1024 * 1024))


def _days_over(first: date, now: datetime, end: Callable[[date], datetime]) -> list[tuple[date, datetime]]:
    """Each day from `first` whose end is not after `now`, with its end."""
    days = []
    day = first
    while end(day) <= now:
        days.append((day, end(day)))
        day += timedelta(days=1)
    return days


def _build(store: PriceStore, questions: list[_Question], limit: int) -> int:
    """Keep the answers of `questions` (newest first) while they fit in `limit` bytes; from the first
    that does not fit, keep none older."""
    cur = store.cursor()
    kinds = {(q.kind, q.zone) for q in questions}
    kept = {kind: kept_days(cur, *kind) for kind in kinds}
    sizes = {kind: kept_sizes(store, *kind) for kind in kinds}
    seen = runs_seen(cur, [q.end for q in questions])
    pending: dict[tuple[str, str], list[tuple[date, RunsSeen, bytes]]] = {kind: [] for kind in kinds}
    dropped: dict[tuple[str, str], list[date]] = {kind: [] for kind in kinds}
    used = built = held = 0
    full = False
    for q, now_seen in zip(questions, seen, strict=True):
        kind = (q.kind, q.zone)
        if not full:
            body = None if kept[kind].get(q.day) == now_seen else q.build(q.day)
            full = used + (sizes[kind][q.day] if body is None else len(body)) > limit
        if full:
            if q.day in kept[kind]:
                dropped[kind].append(q.day)
            continue
        used += sizes[kind][q.day] if body is None else len(body)
        if body is not None:
            pending[kind].append((q.day, now_seen, body))
            built += 1
            held += 1
        if held >= BATCH_DAYS:  # the bodies of a batch are held in memory until written
            _flush(store, pending)
            held = 0
    _flush(store, pending)
    for kind in kinds:  # days no longer asked this way (a digest stored since): their answers go too
        asked = {q.day for q in questions if (q.kind, q.zone) == kind}
        dropped[kind] += [day for day in kept[kind] if day not in asked]
    for (kind, zone), days in dropped.items():
        drop_day_answers(store, kind, zone, days)
    return built


def _flush(store: PriceStore, pending: dict[tuple[str, str], list[tuple[date, RunsSeen, bytes]]]) -> None:
    for (kind, zone), answers in pending.items():
        keep_day_answers(store, kind, zone, answers)
        answers.clear()
