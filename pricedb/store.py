"""The DuckDB file: one connection per process, one transaction per provider run.

DuckDB allows one read-write process, so `gpuprice serve` opens the only `PriceStore` and every
request or job works on its own `cursor()`. Writes are serialized by a lock; each provider's run
lands in one transaction, so readers never see half a run, and a failed run writes its status and
error but no quotes (the provider's previous offers stay in `offers`, and read as stale).

A successful run replaces its provider's offers for the pricings it covered. An offer it no longer
lists is withdrawn; an offer whose new quote it rejected (`RunRecord.rejected_offers`) is *held*:
it keeps its last good observation, recorded in `held_offers` with the reason, and reads as stale.
The run's notes say how many it withdrew and held.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import duckdb

from pricedb import clock
from pricedb.fx import FxTable
from pricedb.history_files import files_folder, remove_point_files, write_point_files
from pricedb.history_layout import compact
from pricedb.models import FxRate, InstanceZone, Pricing, Quote, RunStatus
from pricedb.normalize import normalize
from pricedb.queries import ExportAttempt, PublishAttempt, last_export, last_publish
from pricedb.redact import get_logger, learn_settings, redact
from pricedb.schema import MIGRATIONS, QUOTE_COLUMNS
from pricedb.settings import Settings
from pricedb.storefaults import StoreBusy, StoreUnavailable, explain

__all__ = ["PriceStore", "RunRecord", "StoreBusy", "StoreUnavailable", "utc_naive"]

_ROWS_PER_INSERT = 100

log = get_logger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


def _probe_writable(folder: Path) -> None:
    """DuckDB writes `<db>.wal` beside the file at the first commit: a folder that refuses files is
    found now, with its own reason, rather than after a collection round was fetched for nothing."""
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gpuprice-probe-")
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(folder)) from exc
    os.close(fd)
    os.unlink(probe)


def _rollback(cur: duckdb.DuckDBPyConnection) -> None:
    """Undo a failed transaction. A failed commit has already ended it (DuckDB then says "cannot
    rollback - no transaction is active"), and that complaint must not replace the error that matters."""
    with contextlib.suppress(duckdb.Error):
        cur.rollback()


def _storage_faults(method: Callable[P, R]) -> Callable[P, R]:
    """A write's disk and file errors become `StoreUnavailable` (naming the file and what to do),
    remembered in `write_problem` until a write succeeds."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        store = args[0]
        assert isinstance(store, PriceStore)
        try:
            result = method(*args, **kwargs)
        except Exception as exc:
            problem = explain(store.path, exc)
            if problem is None:
                raise
            store.write_problem = str(problem)
            raise problem from exc
        store.write_problem = None
        return result

    return wrapper


# Named in the INSERT, so columns later migrations append to `runs` (export outcome) may stay NULL.
_RUN_COLUMNS = (
    "run_id", "provider", "scope", "pricings", "started_at", "finished_at", "status", "error", "quote_count",
    "rejected_count", "rejected", "notes", "offline", "stale_after_minutes",
)  # fmt: skip


@dataclass
class RunRecord:
    """One provider run as the runner hands it over: its outcome and, if ok, its quotes."""

    provider: str
    scope: str
    pricings: frozenset[Pricing]
    started_at: datetime
    finished_at: datetime
    status: RunStatus
    offline: bool
    stale_after_minutes: int
    error: str | None = None
    quotes: Sequence[Quote] = ()
    rejected: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the store adds what the run withdrew and held
    # Offers whose quote in this run the sanity checks rejected: (provider, region, sku, pricing) → why.
    rejected_offers: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    # Per region the run surveyed: where its instance types are sold (replaces that region's zones).
    zones: dict[str, list[InstanceZone]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Every text a run carries passes the one redaction point (pricedb.redact) here, before the
        store writes it and before the runner's summary (which `gpuprice collect` prints) reads it."""
        self.error = redact(self.error) if self.error else self.error
        self.notes = [redact(note) for note in self.notes]
        self.rejected = [{key: redact(value) for key, value in r.items()} for r in self.rejected]
        self.rejected_offers = {key: redact(reason) for key, reason in self.rejected_offers.items()}
        self.quotes = [_redacted_quote(quote) for quote in self.quotes]


def _redacted_quote(quote: Quote) -> Quote:
    """A quote's texts keep their query strings (a source URL's filter is information) but no credential."""
    url, notes = redact(quote.source_url, keep_query=True), quote.notes and redact(quote.notes, keep_query=True)
    if url == quote.source_url and notes == quote.notes:
        return quote
    return quote.model_copy(update={"source_url": url, "notes": notes})


def utc_naive(moment: datetime) -> datetime:
    """Timestamps are stored as naive UTC (DuckDB TIMESTAMP)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


class PriceStore:
    def __init__(self, settings: Settings, path: Path | str | None = None, read_only: bool = False) -> None:
        self.settings = settings
        learn_settings(settings)
        self.path = Path(path if path is not None else settings.db)
        self.read_only = read_only
        self.conn = self._connect()
        self._lift_lock = threading.Lock()
        self._lifts = 0  # pieces of work running with DuckDB's memory limit lifted (memory_lifted)
        self._bound_memory()
        self._write_lock = threading.Lock()
        self.version = 0  # bumped after every committed write; the API caches answers on it
        # Why the last write failed (disk full, file made read-only), until a write succeeds: /healthz shows it.
        self.write_problem: str | None = None
        self._memos: dict[str, tuple[int, Any]] = {}  # name → (version read at, value): read again after a write
        if not read_only:
            try:
                self.migrate()
            except BaseException:
                self.conn.close()
                raise
        self._fx: FxTable | None = None

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file, or raise `StoreUnavailable` saying why not (busy, corrupt, read-only, …)."""
        try:
            if not self.read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _probe_writable(self.path.parent)
            return duckdb.connect(str(self.path), read_only=self.read_only)
        except Exception as exc:
            problem = explain(self.path, exc)
            if problem is None:
                raise
            raise problem from exc

    def _bound_memory(self) -> None:
        """DuckDB's memory limit as set (it is the database's, shared by every cursor of this process).
        Its allocator (jemalloc, on Linux) keeps the pages a query freed until it allocates again, unless
        the query's peak passed `allocator_flush_threshold` (128 MB): loading 50,000 current offers left
        ~55 MB of such pages in the process. Its background threads give them back to the system."""
        self.conn.execute("SET allocator_background_threads = true")
        if self.settings.db_memory_mb:
            self.conn.execute(f"SET memory_limit = '{int(self.settings.db_memory_mb)}MB'")
        else:
            self.conn.execute("RESET memory_limit")

    @contextlib.contextmanager
    def memory_lifted(self) -> Iterator[None]:
        """DuckDB's memory limit lifted while one piece of work runs: compaction sorts every observation,
        and reading the runs held since the compaction (56-64 MB for a day of runs at 50,000 offers)
        needs more than serving's share of the memory budget. The limit is the database's, so it is
        set again only when the last of the pieces of work running at once is done."""
        with self._lift_lock:
            if self._lifts == 0:
                self.conn.execute("RESET memory_limit")
            self._lifts += 1
        try:
            yield
        finally:
            with self._lift_lock:
                self._lifts -= 1
                if self._lifts == 0:
                    self._bound_memory()

    # ----- plumbing ------------------------------------------------------------------------
    def cursor(self) -> duckdb.DuckDBPyConnection:
        return self.conn.cursor()

    def close(self) -> None:
        # Closing checkpoints the WAL into the file, which a full disk refuses; every committed run
        # is still in the WAL (replayed at the next open), and the error that matters was reported.
        with contextlib.suppress(duckdb.Error):
            self.conn.close()

    @contextlib.contextmanager
    def _transaction(self, moves_version: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """The one way to write: under the write lock, in one transaction on its own cursor. Committed
        when the block ends, rolled back if it raises (the rollback never hides the block's error);
        `version` moves after the commit, so readers' caches move on (unless the write changes no
        answer: see `keep_with`)."""
        with self._write_lock:
            cur = self.cursor()
            cur.begin()
            try:
                yield cur
                cur.commit()
            except Exception:
                _rollback(cur)
                raise
            if moves_version:
                self.version += 1

    @_storage_faults
    def migrate(self) -> None:
        with self._transaction() as cur:
            cur.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)"
            )
            done = {row[0] for row in cur.execute("SELECT version FROM schema_migrations").fetchall()}
        for version, name, statements in MIGRATIONS:
            if version in done:
                continue
            with self._transaction() as cur:
                for statement in statements:
                    cur.execute(statement)
                cur.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, utc_naive(clock.now())])

    def schema_version(self) -> int:
        row = self.cursor().execute("SELECT max(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0) if row else 0

    @_storage_faults
    def write(self, statements: Sequence[tuple[str, Sequence[object]]]) -> None:
        """Run a few writes in one transaction (digests, deliveries); readers' caches move on."""
        with self._transaction() as cur:
            for sql, params in statements:
                cur.execute(sql, list(params))

    # ----- FX -------------------------------------------------------------------------------
    def fx_table(self) -> FxTable:
        if self._fx is None:
            rows = self.cursor().execute("SELECT date, currency, rate, source FROM fx_rates").fetchall()
            self._fx = FxTable.from_rates(FxRate(date=d, currency=c, rate=r, source=s) for d, c, r, s in rows)
        return self._fx

    @_storage_faults
    def record_fx(self, run: RunRecord, rates: Iterable[FxRate]) -> int:
        rates = list(rates)
        with self._transaction() as cur:
            run_id = self._insert_run(cur, run, quote_count=len(rates))
            if run.status is RunStatus.OK:
                cur.executemany(
                    "INSERT OR REPLACE INTO fx_rates VALUES (?, ?, ?, ?, ?)",
                    [[r.date, r.currency, r.rate, r.source, run_id] for r in rates],
                )
            self._fx = None  # read again after this write (harmless if it is rolled back)
        return run_id

    # ----- price runs -----------------------------------------------------------------------
    @_storage_faults
    def record_run(self, run: RunRecord) -> int:
        """Write one provider run in one transaction; on success its quotes replace the
        provider's current offers for the pricings the run covered, except those it held."""
        fx = self.fx_table()
        rows = (
            [self._observation_row(quote, run.offline, fx) for quote in run.quotes]
            if run.status is RunStatus.OK
            else []
        )
        placeholders = ", ".join("?" for _ in QUOTE_COLUMNS)
        covered = sorted(p.value for p in run.pricings)
        with self._transaction() as cur:
            held: list[tuple[int, tuple[str, str, str, str], str]] = []
            if run.status is RunStatus.OK:
                held = self._replaced_offers(cur, run, covered)
            run_id = self._insert_run(cur, run, quote_count=len(rows))
            if run.status is RunStatus.OK:
                # Many rows per INSERT: DuckDB's executemany runs one statement per row (about 2 ms each).
                one_row = f"(nextval('observation_ids'), {run_id}, {placeholders})"
                for start in range(0, len(rows), _ROWS_PER_INSERT):
                    chunk = rows[start : start + _ROWS_PER_INSERT]
                    values = [value for row in chunk for value in row]
                    cur.execute(f"INSERT INTO observations VALUES {', '.join(one_row for _ in chunk)}", values)
                cur.execute(
                    "DELETE FROM offers WHERE provider = ? AND list_contains(?, pricing) "
                    "AND NOT list_contains(?, observation_id)",
                    [run.provider, covered, [observation_id for observation_id, _, _ in held]],
                )
                cur.execute("INSERT INTO offers SELECT * FROM observations WHERE run_id = ?", [run_id])
                if held:
                    cur.executemany(
                        "INSERT INTO held_offers VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [[run_id, observation_id, *key, reason] for observation_id, key, reason in held],
                    )
                self._replace_zones(cur, run, run_id)
        return run_id

    @staticmethod
    def _replace_zones(cur: duckdb.DuckDBPyConnection, run: RunRecord, run_id: int) -> None:
        surveyed_at = utc_naive(run.finished_at)
        for region, offerings in run.zones.items():
            cur.execute("DELETE FROM instance_zones WHERE provider = ? AND region = ?", [run.provider, region])
            rows = {(o.sku, o.zone) for o in offerings if o.region == region}
            if rows:
                cur.executemany(
                    "INSERT INTO instance_zones VALUES (?, ?, ?, ?, ?, ?)",
                    [[run.provider, region, sku, zone, run_id, surveyed_at] for sku, zone in sorted(rows)],
                )

    def _replaced_offers(
        self, cur: duckdb.DuckDBPyConnection, run: RunRecord, covered: list[str]
    ) -> list[tuple[int, tuple[str, str, str, str], str]]:
        """The offers this run holds, as (observation id, key, reason): listed before, not accepted
        now, their new quote rejected. Adds to the run's notes how many it held and withdrew."""
        listed = cur.execute(
            "SELECT observation_id, region, sku, pricing FROM offers WHERE provider = ? AND list_contains(?, pricing)",
            [run.provider, covered],
        ).fetchall()
        accepted = {quote.key for quote in run.quotes}
        gone = [(o, (run.provider, r, s, p)) for o, r, s, p in listed if (run.provider, r, s, p) not in accepted]
        held = [(o, key, run.rejected_offers[key]) for o, key in gone if key in run.rejected_offers]
        if held:
            run.notes.append(
                f"held {len(held)} offer(s) at their last good price, stale: their new quote was rejected "
                "(see the run's rejections)"
            )
        if len(gone) > len(held):
            run.notes.append(f"withdrew {len(gone) - len(held)} offer(s) the source no longer lists")
        return held

    def _remembered(self, name: str, read: Callable[[duckdb.DuckDBPyConnection], R]) -> R:
        version, memo = self._memos.get(name, (-1, None))
        if version != self.version:
            version = self.version
            memo = read(self.cursor())
            self._memos[name] = (version, memo)
        return memo

    def _in_memory(self, name: str) -> tuple[bool, Any]:
        version, memo = self._memos.get(name, (-1, None))
        return version == self.version, memo

    def last_export_in_memory(self) -> tuple[bool, ExportAttempt | None]:
        """(fresh, attempt): the remembered export attempt and whether no write has happened since
        it was read, so /healthz can answer on the event loop without a query."""
        return self._in_memory("export")

    def last_export(self) -> ExportAttempt | None:
        """The newest attempt to write the export files, read again only after a write (/healthz
        asks for it on every probe; `version` moves with every write, this one's included)."""
        return self._remembered("export", last_export)

    def last_publish_in_memory(self) -> tuple[bool, PublishAttempt | None]:
        return self._in_memory("publish")

    def last_publish(self) -> PublishAttempt | None:
        """The newest attempt to publish a snapshot (pricedb.replication), like `last_export`."""
        return self._remembered("publish", last_publish)

    @_storage_faults
    def record_publish(self, attempt: PublishAttempt) -> None:
        with self._transaction() as cur:
            cur.execute(
                "INSERT INTO publishes VALUES (?, ?, ?, ?, ?)",
                [utc_naive(attempt.at), attempt.version, attempt.last_run_id, attempt.targets, attempt.error],
            )

    @_storage_faults
    def write_with(self, work: Callable[[duckdb.DuckDBPyConnection], R]) -> R:
        """`work(cursor)` in one transaction (a replica loading a snapshot): readers see all of it or
        none, and every cache of what the store holds moves on."""
        with self._transaction() as cur:
            result = work(cur)
            self._fx = None
        return result

    def keep_with(self, work: Callable[[duckdb.DuckDBPyConnection], R]) -> R:
        """`work(cursor)` in one transaction that changes no answer (answers about past days kept as
        built, byte for byte the ones built on demand): `version` stays, so the current offers and
        every cached answer are not read again for it."""
        with self._transaction(moves_version=False) as cur:
            return work(cur)

    @_storage_faults
    def compact_history(self) -> int:
        """Lay the observations out by offer (pricedb.history_layout); returns the newest id laid out."""
        with self.memory_lifted():
            with self._transaction() as cur:
                upto = compact(cur)
            self.write_history_files()
            return upto

    def write_history_files(self) -> None:
        """The layout just committed, also as files beside the database (pricedb.history_files), read in
        one snapshot; a failure leaves no file (history questions then read DuckDB) and is logged, never
        raised: the compaction itself is done."""
        cur = self.cursor()
        try:
            with self.memory_lifted():  # sorted like the compaction, by series and time
                cur.begin()
                try:
                    write_point_files(cur, self.path, self.settings.history_files_mb * 1024 * 1024)
                finally:
                    _rollback(cur)  # read only: nothing to keep
        except (OSError, duckdb.Error):
            log.warning("the compacted history could not be written beside the database", exc_info=True)
            with contextlib.suppress(OSError):
                remove_point_files(files_folder(self.path))

    @_storage_faults
    def record_export(self, run_id: int, error: str | None) -> None:
        """Record whether the export files were written after run `run_id` (error None: they were)."""
        with self._transaction() as cur:
            cur.execute(
                "UPDATE runs SET exported_at = ?, export_error = ? WHERE run_id = ?",
                [utc_naive(clock.now()), error, run_id],
            )

    def _insert_run(self, cur: duckdb.DuckDBPyConnection, run: RunRecord, quote_count: int) -> int:
        row = cur.execute("SELECT nextval('run_ids')").fetchone()
        assert row is not None
        run_id = int(row[0])
        cur.execute(
            f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' for _ in _RUN_COLUMNS)})",
            [
                run_id,
                run.provider,
                run.scope,
                sorted(p.value for p in run.pricings),
                utc_naive(run.started_at),
                utc_naive(run.finished_at),
                run.status.value,
                run.error,
                quote_count,
                len(run.rejected),
                json.dumps(run.rejected, ensure_ascii=False) if run.rejected else None,
                json.dumps(run.notes, ensure_ascii=False) if run.notes else None,
                run.offline,
                run.stale_after_minutes,
            ],
        )
        return run_id

    def _observation_row(self, quote: Quote, offline: bool, fx: FxTable) -> list[object]:
        figures = normalize(quote, fx, self.settings)
        values = {
            **quote.model_dump(mode="python", exclude={"price_steps"}),
            "pricing": quote.pricing.value,
            "unit": quote.unit.value,
            "availability": quote.availability.value,
            "price_steps": json.dumps([s.model_dump() for s in quote.price_steps]) if quote.price_steps else None,
            "observed_at": utc_naive(quote.observed_at),
            "offline": offline,
            "fx_rate": figures.fx_rate,
            "fx_date": figures.fx_date,
            "fx_note": figures.fx_note,
            "cny_per_hour": figures.cny_per_hour,
            "cny_per_gpu_hour": figures.cny_per_gpu_hour,
            "cny_per_gb_hour": figures.cny_per_gb_hour,
        }
        return [values[column] for column in QUOTE_COLUMNS]
