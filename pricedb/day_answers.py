"""Answers about past days kept as built (migration 10), so they are read instead of computed.

The market at the end of a past day, and the digest of a past day, depend only on the runs finished
before that day's end (with their observations and held offers, written in the same transaction as
the run) once the day is over: staleness is judged at the day's end, not at "now". So an answer built
after the day is over stays right for as long as those runs are the same. Each kept answer records
how many runs had finished before the day's end and the newest of their ids; it is served only while
both are unchanged, so a run that lands late for that day (recorded after the answer was built, with
a `finished_at` inside the day) sends the question back to the plain build, which the caller then
does as before. The API layer builds the answers (api.day_answers); this module stores and finds them.

The answers are files in a folder beside the database (`<database>.answers/`), named by the rows of
`day_answers`: DuckDB reads every string of a row group to return one of them, so a 0.5-2 MB answer
kept in a column cost 0.4-1 s to read back, more than building it. A database copied without that
folder (a replica's snapshot, a backup) simply builds its answers on demand.
"""

from __future__ import annotations

import mmap
import uuid
from datetime import date, datetime
from pathlib import Path
from typing import NamedTuple

import duckdb

from pricedb.store import PriceStore

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


def answers_folder(database: Path) -> Path:
    """Where the kept answers of this database file are: a folder beside it."""
    return database.parent / f"{database.name}.answers"


def load_day_answer(
    cur: duckdb.DuckDBPyConnection, folder: Path, kind: str, day: date, zone: str, cutoff: datetime
) -> bytes | None:
    """The kept answer of `kind` for `day` (whose end is `cutoff`, naive UTC), if the runs finished
    before `cutoff` are still those it was built from; None otherwise, or when its file cannot be
    read (a copy of the database without the folder): build it."""
    path = _kept_file(cur, folder, kind, day, zone, cutoff)
    try:
        return None if path is None else path.read_bytes()
    except OSError:
        return None


def map_day_answer(
    cur: duckdb.DuckDBPyConnection, folder: Path, kind: str, day: date, zone: str, cutoff: datetime
) -> mmap.mmap | None:
    """`load_day_answer`'s bytes mapped from its file instead of read: a caller that copies them once
    anyway (into the answer sent) spares the read's fresh mapping of megabytes, faulted in page by page
    (api.process_memory), where the file's pages are already in the page cache. A kept file is never
    changed (a new build gets a new name), so the mapping holds the answer as kept."""
    path = _kept_file(cur, folder, kind, day, zone, cutoff)
    if path is None:
        return None
    try:
        with path.open("rb") as file:
            return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file, which no answer is
        return None


def _kept_file(
    cur: duckdb.DuckDBPyConnection, folder: Path, kind: str, day: date, zone: str, cutoff: datetime
) -> Path | None:
    row = cur.execute(
        "SELECT file FROM day_answers, (SELECT count(*) AS n, coalesce(max(run_id), 0) AS newest FROM runs "
        "WHERE finished_at < ?) seen WHERE kind = ? AND day = ? AND time_zone = ? AND runs_before = seen.n "
        "AND newest_run = seen.newest",
        [cutoff, kind, day, zone],
    ).fetchone()
    return None if row is None else folder / row[0]


def kept_days(cur: duckdb.DuckDBPyConnection, kind: str, zone: str) -> dict[date, RunsSeen]:
    """The days with a kept answer of `kind`, and what each was built from."""
    rows = cur.execute(
        "SELECT day, runs_before, newest_run FROM day_answers WHERE kind = ? AND time_zone = ?", [kind, zone]
    ).fetchall()
    return {day: RunsSeen(int(n), int(newest)) for day, n, newest in rows}


def kept_sizes(store: PriceStore, kind: str, zone: str) -> dict[date, int]:
    """The bytes each kept answer of `kind` takes on disk (0 when its file is gone)."""
    folder = answers_folder(store.path)
    rows = (
        store.cursor()
        .execute("SELECT day, file FROM day_answers WHERE kind = ? AND time_zone = ?", [kind, zone])
        .fetchall()
    )
    sizes = {}
    for day, name in rows:
        try:
            sizes[day] = (folder / name).stat().st_size
        except OSError:
            sizes[day] = 0
    return sizes


def drop_day_answers(store: PriceStore, kind: str, zone: str, days: list[date]) -> None:
    """Stop keeping the answers of `kind` for `days` (their questions are built on demand again)."""
    if days:
        _replace(store, kind, zone, days, [])


def keep_day_answers(store: PriceStore, kind: str, zone: str, answers: list[tuple[date, RunsSeen, bytes]]) -> None:
    """Keep these answers, replacing earlier builds of their days: each is written to a file of its
    own (a new name every time, so a file is never changed while a reader may hold its name), then the
    rows naming them are committed, then the files they replace are removed."""
    if not answers:
        return
    folder = answers_folder(store.path)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for day, seen, body in answers:
        name = f"{kind}-{zone.replace('/', '_')}-{day.isoformat()}-{uuid.uuid4().hex}.json"
        partial = folder / f"{name}.partial"
        partial.write_bytes(body)
        partial.replace(folder / name)
        rows.append([kind, day, zone, seen.count, seen.newest, name])
    _replace(store, kind, zone, [day for day, _, _ in answers], rows)


def _replace(store: PriceStore, kind: str, zone: str, days: list[date], rows: list[list[object]]) -> None:
    """Commit `rows` in place of the kept answers of `days`, then remove the files those named. The
    store's version stays: a kept answer is the on-demand answer byte for byte, so no cached answer
    and no current offer changes with it."""
    folder = answers_folder(store.path)

    def replace(cur: duckdb.DuckDBPyConnection) -> list[str]:
        old = cur.execute(
            "SELECT file FROM day_answers WHERE kind = ? AND time_zone = ? AND day IN (SELECT unnest(?::DATE[]))",
            [kind, zone, days],
        ).fetchall()
        cur.execute(
            "DELETE FROM day_answers WHERE kind = ? AND time_zone = ? AND day IN (SELECT unnest(?::DATE[]))",
            [kind, zone, days],
        )
        if rows:
            cur.executemany("INSERT INTO day_answers VALUES (?, ?, ?, ?, ?, ?)", rows)
        return [name for (name,) in old]

    for name in store.keep_with(replace):
        (folder / name).unlink(missing_ok=True)
