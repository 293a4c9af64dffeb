"""Fault matrix, storage rows (issue 9): disk, database and port faults, made for real.

- Exports folder not writable, or its disk full: every run is recorded; the failure is stored on
  the run and shown by `/providers`, `/healthz` (degraded) and `collect` (one line, exit 5); the
  next good write clears it.
- Database folder read-only, file read-only, file corrupt, disk full: one line naming the file and
  what to do, exit status 3, never a traceback; the first error is the one reported (not DuckDB's
  "cannot rollback - no transaction is active" after it).
- Port busy: one line naming the port, exit status 4; the database is let go.
- Query commands after `serve --port N`: they ask that server, found through `<db>.server.json`;
  a file left by a dead server is ignored.
- Crash leftovers and sheet modes: temp files and folders of dead processes go at the next start,
  live ones stay; sheets follow the umask.

Faults come from tests/support/faultfs.py: immutable or read-only folders and files, a private tmpfs
filled to its last page, a file size limit — the OS refuses, nothing is mocked — except where a
test says it simulates one because the machine cannot make it.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api import exits, server_address
from api.cli import main as cli
from collectors.runner import collect
from collectors.schedule import build_scheduler
from pricedb import clock, files, tls
from pricedb.formats.exports import write_current_exports
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreUnavailable
from tests.conftest import OfflineRound
from tests.helpers import held_by_another_process, serving
from tests.support.faultfs import FILL, can_mount, gpuprice_argv, on_tiny_disk, run, unwritable
from tests.support.ports import free_ports


def error_line(err: str) -> str:
    """The one line a fault prints (stderr may also hold collect's progress lines, never a traceback)."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


def offline(settings: Settings) -> Settings:
    return settings.model_copy(update={"offline": True})


def collect_offline(settings: Settings, names: list[str]) -> None:
    store = PriceStore(offline(settings))
    try:
        asyncio.run(collect(store, offline(settings), names))
    finally:
        store.close()


def runs_in(db: Path) -> dict[str, tuple[str, str | None]]:
    """provider → (status, export_error) of its newest run, read from the file."""
    store = PriceStore(Settings(db=db), read_only=True)
    try:
        rows = store.cursor().execute(
            "SELECT provider, arg_max(status, run_id), arg_max(export_error, run_id) FROM runs GROUP BY provider"
        )
        return {provider: (status, export_error) for provider, status, export_error in rows.fetchall()}
    finally:
        store.close()


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def live_pid() -> Iterator[int]:
    child = subprocess.Popen(["sleep", "60"])
    yield child.pid
    child.kill()
    child.wait()


def free_port() -> int:
    """A free port a `gpuprice serve` child binds later: below the ephemeral range (see free_ports)."""
    return free_ports(1)[0]


# ----- Exports folder not writable ----------------------------------------------------------------
def test_exports_folder_not_writable_loses_no_run_and_says_so(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    db, exports = str(settings.db), settings.export_path
    exports.mkdir(parents=True)
    with unwritable(exports):
        status = cli(["collect", "--offline", "--json", "--db", db, "lambda", "azure", "e2e"])
    out, err = capsys.readouterr()
    assert status == exits.EXPORTS == 5
    line = error_line(err)
    assert line.startswith(f"error: price sheets not written to {exports}: ") and "GPUPRICE_EXPORT_DIR" in line
    runs = {r["provider"]: r for r in json.loads(out)["runs"]}
    assert {p: r["status"] for p, r in runs.items()} == {"fx": "ok", "lambda": "ok", "azure": "ok", "e2e": "ok"}
    for name in ("lambda", "azure", "e2e"):
        assert runs[name]["export_error"].startswith(f"price sheets not written to {exports}: ")
    assert list(exports.iterdir()) == []  # nothing half-written, no temp file left behind
    # Every run and its offers are stored, with the export failure on the run.
    assert {p: (s, e is not None) for p, (s, e) in runs_in(settings.db).items()} == {
        "fx": ("ok", False), "lambda": ("ok", True), "azure": ("ok", True), "e2e": ("ok", True),
    }  # fmt: skip

    store = PriceStore(offline(settings))
    try:
        with serving(settings, store, clock.now()) as client:
            providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
            health = client.get("/healthz").json()
            assert providers["azure"]["status"] == "ok" and providers["azure"]["offers"] > 0
            assert providers["azure"]["export_error"] == runs["azure"]["export_error"]
            assert health["status"] == "degraded" and len(health["problems"]) == 1
            assert health["problems"][0].startswith(f"price sheets not written to {exports}: ")
            assert health["exports"]["error"] == health["problems"][0]
            # The folder writable again: the next run writes the sheets and the service is healthy.
            asyncio.run(collect(store, offline(settings), ["lambda"], include_fx=False))
            health = client.get("/healthz").json()
            assert health["status"] == "ok" and health["problems"] == [] and health["exports"]["error"] is None
            assert client.get("/providers").json()["providers"][0]["export_error"] is None
    finally:
        store.close()
    assert {"offers.csv", "offers.parquet", "gpuhunt", "skypilot"} <= {p.name for p in exports.iterdir()}


def test_sheets_that_stop_updating_under_serve_are_logged_and_recorded(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    settings.export_path.mkdir(parents=True)
    store = PriceStore(offline(settings))
    try:
        scheduler = build_scheduler(store, offline(settings), run_at_start=False)
        job = scheduler.get_job("collect:lambda:all")
        with unwritable(settings.export_path), caplog.at_level(logging.INFO, logger="gpuprice.schedule"):
            asyncio.run(job.func())
        (logged,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert logged.getMessage().startswith(f"price sheets not written to {settings.export_path}: ")
        assert not logged.exc_info  # one line, not a traceback
    finally:
        store.close()
    assert runs_in(settings.db)["lambda"] == ("ok", logged.getMessage())


def test_exports_disk_full_loses_no_run(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    exports = settings.export_path
    if can_mount():  # a real tmpfs, filled to its last page before the round
        argv = gpuprice_argv("collect", "--offline", "--db", str(settings.db), "lambda", "azure")
        (ran,) = on_tiny_disk(exports, 256, [FILL, argv], tmp_path / "records")
        status, err = ran.status, ran.err
    else:  # no mount privileges here: the OS's answer is simulated where the sheets are written
        from pricedb.formats import exports as export

        def full(rows: object, path: Path) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

        monkeypatch.setattr(export, "write_parquet", full)
        status = cli(["collect", "--offline", "--db", str(settings.db), "lambda", "azure"])
        err = capsys.readouterr().err
    assert status == exits.EXPORTS
    reason = f"price sheets not written to {exports}: no space left on the disk"
    assert error_line(err).startswith(f"error: {reason}")
    runs = runs_in(settings.db)
    assert {p: s for p, (s, _) in runs.items()} == {"fx": "ok", "lambda": "ok", "azure": "ok"}
    assert runs["lambda"][1].startswith(reason) and runs["azure"][1].startswith(reason)


# ----- Database folder read-only / file read-only / file corrupt / disk full ----------------------
def test_database_folder_read_only(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    collect_offline(settings, ["lambda"])
    db, folder = str(settings.db), settings.db.parent
    with unwritable(folder):
        assert cli(["collect", "--offline", "--db", db, "lambda"]) == exits.DATABASE == 3
        assert error_line(capsys.readouterr().err) == (
            f"error: database {db}: permission denied on {folder}; make the folder {folder} writable, "
            "or set GPUPRICE_DB to a file in a writable folder"
        )
        # Reading needs no write: the query commands still answer from the file.
        assert cli(["providers", "--json", "--db", db]) == 0
        assert json.loads(capsys.readouterr().out)["providers"]
    # A new database in a folder that refuses files: the same one line.
    fresh = folder / "new" / "gpuprice.duckdb"
    with unwritable(folder):
        assert cli(["collect", "--offline", "--db", str(fresh), "lambda"]) == exits.DATABASE
    assert f"permission denied on {fresh.parent}; make the folder {folder} writable" in error_line(
        capsys.readouterr().err
    )


def test_a_folder_that_turns_read_only_under_a_running_store_reports_the_first_error(settings: Settings) -> None:
    """The write that meets the refusal reports it (the WAL's "Permission denied" / "Operation not
    permitted"), not DuckDB's "cannot rollback - no transaction is active" that used to mask it;
    /healthz says degraded until a write succeeds again."""
    collect_offline(settings, ["lambda"])
    store = PriceStore(offline(settings))
    try:
        store.cursor().execute("CHECKPOINT")  # the WAL is folded in: the next commit must create it anew
        with serving(settings, store, clock.now()) as client:
            assert client.get("/healthz").json()["status"] == "ok"
            with unwritable(settings.db.parent), pytest.raises(StoreUnavailable) as caught:
                asyncio.run(collect(store, offline(settings), ["azure"], include_fx=False))
            message = str(caught.value)
            assert message == (
                f"database {settings.db}: permission denied on {settings.db}.wal; make the folder "
                f"{settings.db.parent} writable, or set GPUPRICE_DB to a file in a writable folder"
            )
            assert "cannot rollback" not in message and "Failed to commit" in str(caught.value.__cause__)
            health = client.get("/healthz").json()
            assert health["status"] == "degraded" and health["problems"] == [message]
            # Writable again: the next run lands and the store is healthy.
            asyncio.run(collect(store, offline(settings), ["azure"], include_fx=False))
            assert client.get("/healthz").json()["status"] == "ok"
    finally:
        store.close()
    assert runs_in(settings.db)["azure"][0] == "ok"


def test_database_file_read_only(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    collect_offline(settings, ["lambda"])
    db = str(settings.db)
    with unwritable(settings.db):
        assert cli(["collect", "--offline", "--db", db, "lambda"]) == exits.DATABASE
        assert error_line(capsys.readouterr().err) == (
            f"error: database {db}: permission denied on {db}; make {db} writable (chmod u+w), "
            "or set GPUPRICE_DB to a file gpuprice may write"
        )
        assert cli(["providers", "--json", "--db", db]) == 0


@pytest.mark.parametrize("damage", ["random bytes", "truncated"])
def test_database_file_corrupt(
    damage: str, settings: Settings, offline_round: OfflineRound, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(settings.db)
    if damage == "random bytes":
        settings.db.write_bytes(os.urandom(64 * 1024))
    else:
        shutil.copyfile(offline_round.db, settings.db)
        with settings.db.open("r+b") as handle:
            handle.truncate(5000)
    for argv in (
        ["collect", "--offline", "--db", db, "lambda"],
        ["providers", "--db", db],
        ["cheapest", "--mem", "60GB", "--db", db],
        ["serve", "--db", db, "--port", str(free_port()), "--no-schedule"],
    ):
        assert cli(argv) == exits.DATABASE, argv
        line = error_line(capsys.readouterr().err)
        assert line.startswith(f"error: database {db}: not a readable DuckDB database (")
        assert line.endswith(f"move it aside (mv {db} {db}.broken) and run `gpuprice collect` to start a new one, "
                             "or restore a backup")  # fmt: skip


@pytest.mark.parametrize("refusal", ["disk full (tmpfs)", "file size limit"])
def test_database_disk_full(refusal: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The disk fills between two rounds: the second says so in one line (exit 3), and the file
    stays readable with what it held."""
    folder = tmp_path / "disk"
    db = str(folder / "gpuprice.duckdb")

    def gpuprice(*args: str) -> list[str]:
        return gpuprice_argv(*args, "--db", db)

    if refusal == "disk full (tmpfs)":
        if not can_mount():
            pytest.skip("no mount privileges here (root or user namespaces); the file size limit case covers this")
        steps = [gpuprice("collect", "--offline", "lambda"), FILL, gpuprice("collect", "--offline", "oci"),
                 gpuprice("providers", "--json")]  # fmt: skip
        first, full, providers = on_tiny_disk(folder, 4096, steps, tmp_path / "records")
        assert first.status == 0, first.err
        states = json.loads(providers.out)["providers"]
        reason = f"no space left on the disk holding {db}.wal; free some space, or set GPUPRICE_DB to another disk"
    else:  # the same refusal from a file size limit; then, with the limit gone, collecting works again
        collect_offline(Settings(db=folder / "gpuprice.duckdb"), ["lambda"])
        full = run(gpuprice("collect", "--offline", "oci"), file_size_limit=1024)
        assert cli(["providers", "--json", "--db", db]) == 0
        states = json.loads(capsys.readouterr().out)["providers"]
        assert cli(["collect", "--offline", "--db", db, "oci"]) == 0
        reason = f"{db}.wal reached the size limit for files (ulimit -f); raise the limit for gpuprice's user"
    assert full.status == exits.DATABASE, full.err
    assert error_line(full.err) == f"error: database {db}: {reason}"
    assert {p["provider"]: p["status"] for p in states if p["provider"] in ("fx", "lambda", "oci")} == {
        "fx": "ok", "lambda": "ok", "oci": "never_run",
    }  # fmt: skip


# ----- Port busy ------------------------------------------------------------------------------------
def test_port_busy(settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    collect_offline(settings, ["lambda"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli(["serve", "--db", str(settings.db), "--port", str(port), "--no-schedule"]) == exits.SERVER == 4
    assert error_line(capsys.readouterr().err) == (
        f"error: port {port} on 127.0.0.1 is already in use; stop what listens there, or choose another port "
        "with --port (or GPUPRICE_PORT)"
    )
    assert not server_address.address_file(settings.db).exists()
    PriceStore(settings).close()  # the database was let go


# ----- Query commands after `serve --port N` ---------------------------------------------------------
@pytest.fixture
def served_copy(offline_round: OfflineRound, tmp_path: Path) -> Path:
    db = tmp_path / "served.duckdb"
    shutil.copyfile(offline_round.db, db)
    return db


def wait_for_address(db: Path, server: subprocess.Popen[str], seconds: float = 60) -> server_address.ServerAddress:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        address = server_address.running(db)
        if address is not None and address.pid == server.pid:
            return address
        assert server.poll() is None, server.communicate()
        time.sleep(0.1)
    raise AssertionError(f"serve recorded no address in {seconds} s")


def test_query_commands_find_the_server_wherever_it_listens(
    served_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # not GPUPRICE_PORT's 8000: the commands must learn it from the server
    argv = gpuprice_argv("serve", "--db", str(served_copy), "--port", str(port), "--no-schedule")
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        address = wait_for_address(served_copy, server)
        assert (address.host, address.port, address.url) == ("127.0.0.1", port, f"http://127.0.0.1:{port}")
        recorded = json.loads(server_address.address_file(served_copy).read_text())
        assert set(recorded) == {"host", "port", "pid", "started_at", "url"}
        db, today = str(served_copy), clock.now().date().isoformat()
        for argv, path in (
            (["providers", "--json"], "/providers"),
            (["cheapest", "--mem", "60GB", "--hours", "200", "--json"], "/cheapest?mem=60GB&hours=200"),
            (["offers", "--provider", "azure", "--json"], "/offers?provider=azure"),
            (
                ["history", "--provider", "lambda", "--since", "2000-01-01", "--until", today, "--json"],
                f"/offers/history?provider=lambda&since=2000-01-01&until={today}",
            ),  # fixed: no "now" in the echo
        ):
            assert cli([*argv, "--db", db]) == 0, capsys.readouterr().err
            assert (
                json.loads(capsys.readouterr().out)
                == httpx.get(f"{address.url}{path}", verify=tls.client_context()).json()
            )
        assert cli(["export", "--format", "csv", "--provider", "lambda", "--db", db]) == 0
        assert (
            capsys.readouterr().out
            == httpx.get(f"{address.url}/export?format=csv&provider=lambda", verify=tls.client_context()).text
        )
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    assert "Traceback" not in err
    assert not server_address.address_file(served_copy).exists()  # removed on a clean shutdown


def test_an_address_left_by_a_dead_server_is_ignored(
    served_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file of a server that was killed names a port nobody serves; the commands must not trust
    it, and say in one line (exit 4) what holds the database instead."""
    stale = {"host": "127.0.0.1", "port": free_port(), "pid": dead_pid(), "started_at": "2026-01-01T00:00:00Z"}
    stale["url"] = f"http://127.0.0.1:{stale['port']}"
    server_address.address_file(served_copy).write_text(json.dumps(stale))
    assert server_address.running(served_copy) is None
    fallback = free_port()
    monkeypatch.setenv("GPUPRICE_PORT", str(fallback))
    with held_by_another_process(served_copy) as holder:
        assert cli(["providers", "--db", str(served_copy)]) == exits.SERVER
    line = error_line(capsys.readouterr().err)
    assert line.startswith(f"error: database {served_copy} is in use by another gpuprice process (pid {holder})")
    assert f"does not answer at http://127.0.0.1:{fallback} " in line and str(stale["port"]) not in line


# ----- Leftovers of crashed processes; sheet modes --------------------------------------------------
def test_leftovers_of_dead_processes_are_removed_at_the_next_start(
    settings: Settings, tmp_path: Path, live_pid: int, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    system_temp = tmp_path / "system-temp"
    system_temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_temp))
    exports, dead, hours_ago = settings.export_path, dead_pid(), time.time() - 2 * 3600
    (exports / "gpuhunt").mkdir(parents=True)
    # Names exactly as the writers make them, for this process; then the same shapes for others.
    ours = Path(tempfile.mkstemp(dir=exports, prefix=files.temp_file_prefix(exports / "offers.csv"), suffix=".tmp")[1])
    ours_dir = Path(tempfile.mkdtemp(prefix=files.workdir_prefix("aws")))
    gone = [
        exports / f".offers.csv.{dead}.a1b2c3d4.tmp",
        exports / "gpuhunt" / f".vastai.csv.{dead}.zz9_x8y7.tmp",
        exports / ".offers.parquet.q1w2e3r4.tmp",  # from before names carried a pid, hours old
        system_temp / f"gpuprice-{dead}-aws-k3j4h5g6",
        system_temp / "gpuprice-azure-abcd1234",  # old-style, hours old
    ]
    kept = [
        ours, ours_dir,
        exports / f".offers.csv.{live_pid}.a1b2c3d4.tmp",  # another process still writing
        exports / ".offers.csv.m1n2b3v4.tmp",  # old-style but fresh: may be a running older version's
        exports / "offers.csv", exports / "notes.tmp",
        system_temp / f"gpuprice-{live_pid}-gcp-k3j4h5g6",
        system_temp / "gpuprice-aws-bench-k3j4h5g6",  # a benchmark's folder, not a run's
        system_temp / "other-program-k3j4h5g6",
    ]  # fmt: skip
    for path in gone + kept:
        if path.name.startswith(("gpuprice-", "other-")):
            path.mkdir(exist_ok=True)
            (path / "part.csv").write_text("half a download")
        elif not path.exists():
            path.write_text("half a sheet")
    for old in (gone[2], gone[4]):
        os.utime(old, (hours_ago, hours_ago))
    now = time.time()
    os.utime(kept[3], (now, now))  # fresh by this process's clock too (CI also runs the suite with a faked one)

    assert cli(["collect", "--offline", "--db", str(settings.db), "lambda"]) == 0
    err = capsys.readouterr().err
    assert [p for p in gone if p.exists()] == [] and [p for p in kept if not p.exists()] == []
    for path in gone:
        assert f"removed {path}, left behind by a gpuprice process that is gone" in err


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_sheets_are_written_with_the_umask_s_mode(umask: int, mode: int, offline_store: PriceStore) -> None:
    previous = os.umask(umask)
    try:
        written = write_current_exports(offline_store, offline_store.settings)
    finally:
        os.umask(previous)
    assert len(written) > 4
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in written} == {
        path.name: oct(mode) for path in written
    }
