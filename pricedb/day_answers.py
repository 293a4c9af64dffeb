"""Answers about past days kept as built (migration 10), so they are read instead of computed.

The market at the end of a past day, and the digest of a past day, depend only on the runs finished
before that day's end (with their observations and held offers, written in the same transaction as
the run) once the day is over: staleness is judged at the day's end, not at "now". So an answer built
after the day is over stays right for as long as those runs are the same. Each kept answer records
how many runs had finished before the day's end and the newest of their ids; it is served only while
both are unchanged, so a run that lands late for that day (recorded after the answer was built, with
a `finished_at` inside the day) sends the question back to the plain build, which the caller then
does as before. The API layer builds the answers (api.day_answers); this module stores and finds them.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import NamedTuple

import duckdb

DAY_PAGE = "offers"  # `/offers?date=D`: no filter, the default order, the first page
DIGEST = "digest"  # `/digest?date=D` for a day with no stored digest (built_at set when served)


class RunsSeen(NamedTuple):
    """What a kept answer was built from: the runs finished before a moment."""

    count: int
    newest: int  # 0: none


def runs_seen(cur: duckdb.DuckDBPyConnection, cutoffs: list[datetime]) -> list[RunsSeen]:
    """For each cutoff (naive UTC), the runs finished before it, in one query."""
    if not cutoffs:
        return []
    rows = cur.execute(
        "SELECT c.i, count(r.run_id), coalesce(max(r.run_id), 0) FROM (SELECT unnest(?::TIMESTAMP[]) AS cutoff, "
        "generate_subscripts(?::TIMESTAMP[], 1) AS i) c LEFT JOIN runs r ON r.finished_at < c.cutoff GROUP BY c.i",
        [cutoffs, cutoffs],
    ).fetchall()
    found = {int(i): RunsSeen(int(n), int(newest)) for i, n, newest in rows}
    return [found[i + 1] for i in range(len(cutoffs))]


def load_day_answer(cur: duckdb.DuckDBPyConnection, kind: str, day: date, zone: str, cutoff: datetime) -> str | None:
    """The kept answer of `kind` for `day` (whose end is `cutoff`, naive UTC), if the runs finished
    before `cutoff` are still those it was built from; None otherwise (build it)."""
    row = cur.execute(
        "SELECT body FROM day_answers, (SELECT count(*) AS n, coalesce(max(run_id), 0) AS newest FROM runs "
        "WHERE finished_at < ?) seen WHERE kind = ? AND day = ? AND time_zone = ? AND runs_before = seen.n "
        "AND newest_run = seen.newest",
        [cutoff, kind, day, zone],
    ).fetchone()
    return row[0] if row else None


def kept_days(cur: duckdb.DuckDBPyConnection, kind: str, zone: str) -> dict[date, RunsSeen]:
    """The days with a kept answer of `kind`, and what each was built from."""
    rows = cur.execute(
        "SELECT day, runs_before, newest_run FROM day_answers WHERE kind = ? AND time_zone = ?", [kind, zone]
    ).fetchall()
    return {day: RunsSeen(int(n), int(newest)) for day, n, newest in rows}


def keep_day_answers(
    cur: duckdb.DuckDBPyConnection, kind: str, zone: str, answers: list[tuple[date, RunsSeen, str]]
) -> None:
    """Keep these answers (inside the caller's transaction), replacing earlier builds of their days."""
    if not answers:
        return
    days = [day for day, _, _ in answers]
    cur.execute(
        "DELETE FROM day_answers WHERE kind = ? AND time_zone = ? AND day IN (SELECT unnest(?::DATE[]))",
        [kind, zone, days],
    )
    cur.executemany(
        "INSERT INTO day_answers VALUES (?, ?, ?, ?, ?, ?)",
        [[kind, day, zone, seen.count, seen.newest, body] for day, seen, body in answers],
    )
