"""The run records as they were written: each provider's recent runs, and one run by its id (the
run that observed an offer), for `/providers` and the pages that show where a price came from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

_COLUMNS = (
    "run_id", "provider", "scope", "pricings", "started_at", "finished_at", "status", "error", "quote_count",
    "rejected_count", "notes", "offline", "stale_after_minutes", "exported_at", "export_error",
)  # fmt: skip


@dataclass(frozen=True)
class RunRow:
    run_id: int
    provider: str
    scope: str
    pricings: tuple[str, ...]
    started_at: datetime
    finished_at: datetime
    status: str
    error: str | None
    quote_count: int
    rejected_count: int
    notes: tuple[str, ...]
    offline: bool
    stale_after_minutes: int
    exported_at: datetime | None
    export_error: str | None


def _row(values: tuple[Any, ...]) -> RunRow:
    found = dict(zip(_COLUMNS, values, strict=True))
    found["pricings"] = tuple(found["pricings"] or ())
    found["notes"] = tuple(json.loads(found["notes"])) if found["notes"] else ()
    return RunRow(**found)


def run_by_id(cur: duckdb.DuckDBPyConnection, run_id: int) -> RunRow | None:
    row = cur.execute(f"SELECT {', '.join(_COLUMNS)} FROM runs WHERE run_id = ?", [run_id]).fetchone()
    return _row(row) if row else None


def recent_runs(cur: duckdb.DuckDBPyConnection, per_provider: int) -> dict[str, list[RunRow]]:
    """Each provider's newest `per_provider` runs, newest first."""
    rows = cur.execute(
        f"""
        SELECT {", ".join(_COLUMNS)} FROM (
            SELECT *, row_number() OVER (PARTITION BY provider ORDER BY finished_at DESC, run_id DESC) AS recency
            FROM runs
        ) WHERE recency <= ? ORDER BY provider, finished_at DESC, run_id DESC
        """,
        [per_provider],
    ).fetchall()
    found: dict[str, list[RunRow]] = {}
    for values in rows:
        run = _row(values)
        found.setdefault(run.provider, []).append(run)
    return found
