"""How the published tables are cut into partitions, and how each partition is signed.

A publish after every run must add only what is new, so the append-only history is cut by time:

- **runs** with their **observations** and **held offers** (both written in their run's
  transaction, never changed after): by the UTC day of the run's end, and by the hour for today;
  a period is cut once it ended more than `SETTLE` ago, and what is newer is the open tail. A
  partition is a range of run ids (the newest run id that ended in the period), so a replica deletes
  and loads it with `run_id >= lo AND run_id < hi`. A run that commits later than its period was cut
  (or a day whose hours become one file at midnight) just moves the ranges: the signatures change,
  the files are written again, and every run is in exactly one partition.
- **FX rates** and **digests** (with their deliveries): by month of their date;
- **current offers** and the **instance zones** (what SkyPilot's AWS catalog needs): whole.

A partition's signature is its row count and an XOR of its rows' hashes over the columns that can
change (a run's export outcome, a digest rebuilt): a publish writes the partitions whose signature
differs from the one already published and refers to the others. All SQL of publishing and loading
snapshots is here."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

import duckdb

from pricedb.replication.manifest import Bound, Partition

# A period is cut this long after it ended: a run that ended in it has committed by then (a later
# one only moves the ranges, see above).
SETTLE = timedelta(minutes=2)
TAIL_LABEL = "open"


@dataclass(frozen=True)
class Table:
    name: str
    column: str | None  # the partition column (None: the table is one partition)
    order: str  # rows are written in this order (stable files; DuckDB's zone maps stay useful)


@dataclass(frozen=True)
class Family:
    name: str
    tables: tuple[Table, ...]


RUNS = Family(
    "runs",
    (
        Table("runs", "run_id", "run_id"),
        Table("observations", "run_id", "observation_id"),
        Table("held_offers", "run_id", "run_id, provider, region, sku, pricing"),
    ),
)
OFFERS = Family("offers", (Table("offers", None, "provider, region, sku, pricing"),))
FX_RATES = Family("fx_rates", (Table("fx_rates", "date", "date, currency"),))
DIGESTS = Family(
    "digests",
    (Table("digests", "date", "date"), Table("deliveries", "digest_date", "digest_date, attempted_at, target")),
)
ZONES = Family("zones", (Table("instance_zones", None, "provider, region, sku, zone"),))
FAMILIES = {family.name: family for family in (RUNS, OFFERS, FX_RATES, DIGESTS, ZONES)}


@dataclass(frozen=True)
class Slice:
    """A partition as planned: where it is and what it holds, before any file is written."""

    family: str
    label: str
    lo: Bound
    hi: Bound
    signature: str

    @property
    def identity(self) -> tuple[str, Bound, Bound]:
        return (self.family, self.lo, self.hi)


def _param(bound: Bound) -> object:
    return date.fromisoformat(bound) if isinstance(bound, str) else bound


def _where(table: Table, lo: Bound, hi: Bound) -> tuple[str, list[object]]:
    if table.column is None:
        return "", []
    clauses, params = [], []
    if lo is not None:
        clauses.append(f"{table.column} >= ?")
        params.append(_param(lo))
    if hi is not None:
        clauses.append(f"{table.column} < ?")
        params.append(_param(hi))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


# ----- planning ----------------------------------------------------------------------------------
def _period(at: datetime, today: datetime) -> tuple[datetime, datetime, str]:
    if at < today:
        start = at.replace(hour=0, minute=0, second=0, microsecond=0)
        return start, start + timedelta(days=1), start.date().isoformat()
    start = at.replace(minute=0, second=0, microsecond=0)
    return start, start + timedelta(hours=1), start.strftime("%Y-%m-%dT%H")


def _run_slices(cur: duckdb.DuckDBPyConnection, now: datetime) -> tuple[list[Slice], int]:
    rows = cur.execute(
        "SELECT run_id, finished_at, hash(run_id, exported_at, export_error) FROM runs ORDER BY run_id"
    ).fetchall()
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    newest: dict[tuple[datetime, datetime, str], int] = {}
    for run_id, finished_at, _ in rows:
        period = _period(finished_at, today)
        if period[1] + SETTLE <= now:
            newest[period] = max(newest.get(period, 0), run_id)
    cuts: list[tuple[int, str]] = []  # (first run id after the cut, label), boundaries rising
    for period in sorted(newest):
        if not cuts or newest[period] + 1 > cuts[-1][0]:
            cuts.append((newest[period] + 1, period[2]))
    his = [hi for hi, _ in cuts]
    counts = [0] * (len(cuts) + 1)
    hashes = [0] * (len(cuts) + 1)
    for run_id, _, row_hash in rows:
        index = bisect_left(his, run_id + 1)  # the first partition whose hi exceeds run_id
        counts[index] += 1
        hashes[index] ^= row_hash
    slices, lo = [], None
    for index, (hi, label) in enumerate(cuts):
        slices.append(Slice(RUNS.name, label, lo, hi, f"{counts[index]}:{hashes[index]:016x}"))
        lo = hi
    slices.append(Slice(RUNS.name, TAIL_LABEL, lo, None, f"{counts[-1]}:{hashes[-1]:016x}"))
    return slices, max((run_id for run_id, _, _ in rows), default=0)


def _months(cur: duckdb.DuckDBPyConnection, sql: str) -> dict[str, str]:
    return {month: f"{count}:{xor or 0:016x}" for month, count, xor in cur.execute(sql).fetchall()}


def _month_slices(family: Family, signed: list[dict[str, str]]) -> list[Slice]:
    slices = []
    for month in sorted(set().union(*signed)):
        start = date.fromisoformat(month + "-01")
        end = (start + timedelta(days=32)).replace(day=1)
        signature = "/".join(s.get(month, "0:0") for s in signed)
        slices.append(Slice(family.name, month, start.isoformat(), end.isoformat(), signature))
    return slices


def plan(cur: duckdb.DuckDBPyConnection, now: datetime) -> tuple[list[Slice], int]:
    """Every partition of the snapshot, with its signature, and the newest run id (naive UTC `now`)."""
    run_slices, last_run_id = _run_slices(cur, now)
    offers = cur.execute("SELECT count(*), bit_xor(hash(observation_id)) FROM offers").fetchone()
    assert offers is not None
    fx = _months(
        cur,
        "SELECT strftime(date, '%Y-%m'), count(*), bit_xor(hash(date, currency, rate, source, run_id)) "
        "FROM fx_rates GROUP BY 1",
    )
    digests = _months(
        cur, "SELECT strftime(date, '%Y-%m'), count(*), bit_xor(hash(date, built_at)) FROM digests GROUP BY 1"
    )
    deliveries = _months(
        cur,
        "SELECT strftime(digest_date, '%Y-%m'), count(*), "
        "bit_xor(hash(digest_date, target, attempted_at, status, error)) FROM deliveries GROUP BY 1",
    )
    zones = cur.execute("SELECT count(*), bit_xor(hash(provider, region, sku, zone, run_id)) FROM instance_zones")
    zoned = zones.fetchone()
    assert zoned is not None
    return [
        *run_slices,
        Slice(OFFERS.name, "all", None, None, f"{offers[0]}:{offers[1] or 0:016x}"),
        Slice(ZONES.name, "all", None, None, f"{zoned[0]}:{zoned[1] or 0:016x}"),
        *_month_slices(FX_RATES, [fx]),
        *_month_slices(DIGESTS, [digests, deliveries]),
    ], last_run_id


# ----- files ---------------------------------------------------------------------------------------
def write_table(cur: duckdb.DuckDBPyConnection, family: str, table: Table, lo: Bound, hi: Bound, path: Path) -> int:
    """One table's rows of a partition as a Parquet file at `path`; returns how many rows it holds."""
    where, params = _where(table, lo, hi)
    result = cur.execute(
        f"COPY (SELECT * FROM {table.name}{where} ORDER BY {table.order}) TO ? (FORMAT parquet, COMPRESSION zstd)",
        [*params, str(path)],
    ).fetchone()
    return int(result[0]) if result else 0


def delete_partition(cur: duckdb.DuckDBPyConnection, partition: Partition) -> None:
    """Remove a partition's rows from every table of its family (a replica, before loading another)."""
    for table in FAMILIES[partition.family].tables:
        where, params = _where(table, partition.lo, partition.hi)
        cur.execute(f"DELETE FROM {table.name}{where}", params)


def load_file(cur: duckdb.DuckDBPyConnection, table: str, path: Path) -> None:
    """A partition file's rows into its table, by column name (a publisher on an older schema lacks
    the columns later migrations appended: they stay NULL)."""
    if table not in {t.name for family in FAMILIES.values() for t in family.tables}:
        raise ValueError(f"a snapshot file for an unknown table {table!r}")
    cur.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet(?)", [str(path)])
