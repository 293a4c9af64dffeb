"""The one clock: every decision that depends on "now" (staleness, run times, snapshots, digests,
the default day of a query) reads it here, so tests can pin it and nothing breaks when the calendar
moves.

`now()` is an aware UTC datetime; `now_naive()` is the same moment as naive UTC, the form the
store keeps. `pinned(moment)` fixes the clock for a block (tests, replays); `set_clock(fn)` installs
any other source. Elapsed time (timeouts, deadlines, benchmarks) is measured with `time.monotonic`,
which no calendar affects, not with this clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime


def _system_now() -> datetime:
    return datetime.now(UTC)


_source: Callable[[], datetime] = _system_now


def now() -> datetime:
    """The current moment, aware, in UTC."""
    moment = _source()
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def now_naive() -> datetime:
    """The current moment as naive UTC (how DuckDB TIMESTAMP columns hold it)."""
    return now().replace(tzinfo=None)


def timestamp() -> float:
    """The current moment as Unix seconds (the stamps that request signatures and webhooks carry)."""
    return now().timestamp()


def set_clock(source: Callable[[], datetime] | None) -> Callable[[], datetime]:
    """Install `source` as the clock (None: the system clock again); returns the previous one."""
    global _source
    previous = _source
    _source = source or _system_now
    return previous


@contextmanager
def pinned(moment: datetime) -> Iterator[datetime]:
    """The clock reads `moment` (naive means UTC) inside the block."""
    fixed = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    previous = set_clock(lambda: fixed)
    try:
        yield fixed
    finally:
        set_clock(previous)


def iso_utc(moment: datetime) -> str:
    """A moment as the answers write it: naive UTC (as stored) to whole seconds with "Z"; aware as is."""
    return moment.replace(microsecond=0).isoformat() + "Z" if moment.tzinfo is None else moment.isoformat()
