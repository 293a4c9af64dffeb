"""Where a running `gpuprice serve` listens, recorded beside its database file.

`serve` writes `<db>.server.json` (host, port, pid, start time, URL) once its port is bound, and
removes it when it stops. While the server holds the database, the query commands read the file to
ask it wherever it listens (`--port 18200`, port 0, another host name); a file left by a server
that died (its pid no longer runs) is ignored, and the next `serve` replaces it."""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from pricedb import clock
from pricedb.files import atomic_write_text, pid_running

SUFFIX = ".server.json"


@dataclass(frozen=True)
class ServerAddress:
    host: str  # as `serve` was told to listen (0.0.0.0 and :: mean every interface)
    port: int  # the port it really bound (port 0 asks the OS for a free one)
    pid: int
    started_at: str
    url: str  # where a client on this machine reaches it


def address_file(db: Path) -> Path:
    return db.with_name(db.name + SUFFIX)


def local_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server listening on host:port."""
    reach = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    try:
        literal = ipaddress.ip_address(reach)
    except ValueError:
        literal = None
    if literal is not None and literal.version == 6:
        reach = f"[{reach}]"
    return f"http://{reach}:{port}"


def record(db: Path, host: str, port: int) -> ServerAddress:
    started = clock.now().replace(microsecond=0).isoformat().replace("+00:00", "Z")
    address = ServerAddress(host, port, os.getpid(), started, local_url(host, port))
    atomic_write_text(address_file(db), json.dumps(asdict(address), indent=2) + "\n")
    return address


def running(db: Path) -> ServerAddress | None:
    """The address of the server holding `db`, if one recorded it and its process still runs."""
    try:
        data = json.loads(address_file(db).read_text(encoding="utf-8"))
        address = ServerAddress(**data)
    except (OSError, ValueError, TypeError):
        return None
    if not (isinstance(address.pid, int) and isinstance(address.port, int) and isinstance(address.url, str)):
        return None
    return address if pid_running(address.pid) else None


def forget(db: Path) -> None:
    """Remove the address file if this process wrote it (a newer server may have replaced it)."""
    path = address_file(db)
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        return
