"""The price sheet (CONTRACT §6): one row per offer, fixed columns in a fixed order, written as
CSV (spreadsheet-safe: one header row, ISO dates, dot decimals, no JSON in cells) or Parquet.

Everything that writes a price sheet (the files written after each run, `/export`, `gpuprice
export`) goes through here, so the formats never drift apart."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb

from pricedb.clock import iso_utc
from pricedb.queries import Offer
from pricedb.shapes import host_shape

SHEET_COLUMNS: tuple[str, ...] = (
    "provider", "region", "sku", "gpu_model", "gpu_memory_gb", "gpu_count", "form_factor", "interconnect",
    "pricing", "price", "currency", "unit", "cny_per_hour", "cny_per_gpu_hour", "cny_per_gb_hour", "fx_rate",
    "fx_date", "observed_at", "source_url", "stale", "availability", "vcpus", "memory_gib",
    "gpu_fraction", "gpu_partition",
)  # fmt: skip
# Extensions at the end (CONTRACT §6 allows that). The host shape: the offer's own, as its source
# published it, else pricedb.shapes' table — the same figures the SkyPilot and gpuhunt catalogs carry.
# Then the GPU slice (empty for whole GPUs): share of one GPU, and the provider's name for the slice.
HOST_COLUMNS = ("vcpus", "memory_gib")

# DuckDB types for Parquet, in SHEET_COLUMNS order. `observed_at` is TIMESTAMP WITH TIME ZONE, which
# Parquet records as a UTC instant (isAdjustedToUTC=true), as the CSV's "…Z" says.
_SHEET_TYPES: tuple[str, ...] = (
    "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "DOUBLE", "INTEGER", "VARCHAR", "VARCHAR",
    "VARCHAR", "DOUBLE", "VARCHAR", "VARCHAR", "DOUBLE", "DOUBLE", "DOUBLE", "DOUBLE",
    "DATE", "TIMESTAMPTZ", "VARCHAR", "BOOLEAN", "VARCHAR", "INTEGER", "DOUBLE",
    "DOUBLE", "VARCHAR",
)  # fmt: skip


def sheet_value(offer: Offer, column: str) -> Any:
    if column in HOST_COLUMNS:
        shape = host_shape(offer)
        return getattr(shape, column) if shape is not None else None
    return getattr(offer, column)


def sheet_row(offer: Offer) -> tuple[Any, ...]:
    return tuple(sheet_value(offer, column) for column in SHEET_COLUMNS)


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = f"{value:.10f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def write_csv(rows: Iterable[Sequence[Any]], handle: io.TextIOBase, columns: Sequence[str] = SHEET_COLUMNS) -> None:
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])


def csv_text(rows: Iterable[Sequence[Any]], columns: Sequence[str] = SHEET_COLUMNS) -> str:
    buffer = io.StringIO()
    write_csv(rows, buffer, columns)
    return buffer.getvalue()


def json_cell(value: Any) -> Any:
    """A sheet value in JSON: numbers stay numbers, dates and times become ISO strings."""
    if isinstance(value, datetime):
        return iso_utc(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def sheet_records(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as objects whose keys follow SHEET_COLUMNS order."""
    return [dict(zip(SHEET_COLUMNS, (json_cell(v) for v in row), strict=True)) for row in rows]


def json_text(rows: Iterable[Sequence[Any]]) -> str:
    return json.dumps(sheet_records(rows), ensure_ascii=False, separators=(",", ":"))


def ndjson_text(rows: Iterable[Sequence[Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in sheet_records(rows))


def _aware(value: Any) -> Any:
    """Stored moments are naive UTC; bound into a TIMESTAMPTZ column they must say so."""
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


def write_parquet(rows: Sequence[Sequence[Any]], path: Path) -> None:
    """Parquet through an in-memory DuckDB, so no extra dependency is needed."""
    conn = duckdb.connect()
    try:
        conn.execute("SET TimeZone = 'UTC'")  # a naive moment would otherwise be read in the machine's zone
        definition = ", ".join(f'"{c}" {t}' for c, t in zip(SHEET_COLUMNS, _SHEET_TYPES, strict=True))
        conn.execute(f"CREATE TABLE sheet ({definition})")
        if rows:
            # One statement, a list per column unnested side by side: DuckDB's executemany would run
            # a statement per row (about 2 ms each).
            columns = [[_aware(value) for value in column] for column in zip(*rows, strict=True)]
            unnested = ", ".join(f"unnest(?::{kind}[])" for kind in _SHEET_TYPES)
            conn.execute(f"INSERT INTO sheet SELECT {unnested}", columns)
        conn.execute(f"COPY sheet TO '{_sql_path(path)}' (FORMAT parquet)")
    finally:
        conn.close()


def parquet_bytes(rows: Sequence[Sequence[Any]]) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sheet.parquet"
        write_parquet(rows, path)
        return path.read_bytes()


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")
