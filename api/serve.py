"""`gpuprice serve`: open the database, bind the port, clear what a crash left behind, record the
address, run the API with its scheduler — and say in one line why not, when one of them fails.

The database is opened before anything listens (a corrupt, read-only or busy file ends `serve`
with exit status 3), and the port is bound before the app starts (a port in use ends it with 4),
so neither becomes a traceback from inside uvicorn's start-up.

With `GPUPRICE_REPLICA_OF` (`--replica-of SOURCE`) it serves a published snapshot instead, from its
own folder (`GPUPRICE_REPLICA_DIR`), and collects nothing (api.replica)."""

from __future__ import annotations

import errno
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from api import server_address
from api.app import create_app
from api.exits import ServerUnavailable
from api.process_memory import give_large_blocks_back
from api.replica import Replica
from pricedb.files import sweep_leftovers, sweep_temp_files
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore
from pricedb.version import VERSION

log = get_logger("gpuprice.serve")

BACKLOG = 2048  # uvicorn's default


def _port_problem(host: str, port: int, exc: OSError, db: Path) -> str:
    where = f"port {port} on {host}"
    if exc.errno == errno.EADDRINUSE:
        other = server_address.running(db)
        who = f"by gpuprice serve (pid {other.pid}) for this database" if other and other.port == port else ""
        return (
            f"{where} is already in use{' ' + who if who else ''}; stop what listens there, or choose another "
            "port with --port (or GPUPRICE_PORT)"
        )
    if exc.errno == errno.EACCES:
        return f"{where}: permission denied (ports below 1024 need privileges); choose another port with --port"
    if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
        return f"cannot listen on {host}: not an address of this machine ({exc.strerror or exc}); check --host"
    return f"cannot listen on {where}: {exc.strerror or exc}; check --host and --port"


def bind(host: str, port: int, db: Path) -> socket.socket:
    """A listening socket on host:port (port 0: a free port the OS picks), or `ServerUnavailable`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # As uvicorn does: a restart may reuse the port while old connections linger in TIME_WAIT
        # (on Linux this never lets two servers listen on one port).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)  # clients that come before uvicorn's loop accepts wait in the backlog
    except OSError as exc:
        sock.close()
        raise ServerUnavailable(_port_problem(host, port, exc, db)) from None
    return sock


class _Stopped(Exception):
    """SIGTERM arrived: uvicorn has shut down gracefully and re-raised the signal to us."""


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """After its graceful shutdown uvicorn re-raises SIGTERM to the handler it found; the default one
    would end the process on the spot, before the address file is removed. This one unwinds instead."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def replica_settings(settings: Settings) -> Settings:
    """A replica keeps everything in its own folder: its database (so a collector's file beside it is
    never opened), the files it downloaded, and the address file the query commands read."""
    folder = settings.replica_path
    return settings.model_copy(
        update={"db": folder / "replica.duckdb", "export_dir": folder / "exports", "replica_dir": folder}
    )


def serve(settings: Settings, host: str, port: int, schedule: bool, say: Callable[[str], None]) -> None:
    import uvicorn

    replica_of = settings.replica_of
    if replica_of:
        settings = replica_settings(settings)
    store = PriceStore(settings)  # StoreUnavailable: the caller prints its one line
    try:
        replica = Replica(settings, store) if replica_of else None
        sock = bind(host, port, settings.db)
        try:
            leftovers = sweep_leftovers(settings.export_path)
            if replica is not None:
                leftovers += sweep_temp_files(settings.replica_path)
            for path in leftovers:
                log.info("removed %s, left behind by a gpuprice process that is gone", path)
            actual = sock.getsockname()[1]
            address = server_address.record(settings.db, host, actual)
            if replica is not None:
                say(f"gpuprice {VERSION}: replica of {replica.where}, its copy in {settings.replica_path.resolve()}")
            else:
                say(f"gpuprice {VERSION}: database {settings.db.resolve()}, exports in {settings.export_path}")
            say(f"listening on {address.url} (recorded in {server_address.address_file(settings.db)})")
            say(f"try: {address.url}/cheapest?mem=60GB&hours=200")
            give_large_blocks_back()
            app = create_app(settings, store=store, schedule=schedule and replica is None, replica=replica, warm=True)
            config = uvicorn.Config(app, host=host, port=actual, workers=1, log_level="info")
            server = uvicorn.Server(config)
            try:
                with _sigterm_unwinds():
                    server.run(sockets=[sock])
            except _Stopped:
                pass
            except SystemExit:  # uvicorn's way of saying the app did not start; its log says why
                raise ServerUnavailable("the server did not start (its log above says why)") from None
            finally:
                server_address.forget(settings.db)
        finally:
            sock.close()
    finally:
        store.close()
