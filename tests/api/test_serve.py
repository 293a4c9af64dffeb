"""`gpuprice serve`'s address file and listening socket (the fault rows are in
test_fault_matrix_storage.py)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import NoReturn

import pytest

from api import exits, server_address
from api.cli import main as cli
from pricedb import files
from pricedb.settings import Settings


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:18200"),
        ("0.0.0.0", "http://127.0.0.1:18200"),  # every interface: this machine reaches it on loopback
        ("::", "http://[::1]:18200"),
        ("::1", "http://[::1]:18200"),
        ("localhost", "http://localhost:18200"),
    ],
)
def test_the_recorded_url_is_one_a_client_here_can_use(host: str, url: str) -> None:
    assert server_address.local_url(host, 18200) == url


def test_the_address_is_recorded_readable_and_removed_only_by_its_writer(settings: Settings) -> None:
    address = server_address.record(settings.db, "0.0.0.0", 18200)
    path = server_address.address_file(settings.db)
    assert path == settings.db.with_name("test.duckdb.server.json")
    assert server_address.running(settings.db) == address and address.pid == os.getpid()
    assert address.url == "http://127.0.0.1:18200" and address.started_at.endswith("Z")
    assert path.stat().st_mode & 0o777 == files.public_mode()  # like any file the user makes, not mkstemp's 0600
    # A newer server's file (another pid) is not this process's to remove.
    other = subprocess.Popen(["sleep", "30"])
    try:
        path.write_text(json.dumps({**json.loads(path.read_text()), "pid": other.pid}))
        server_address.forget(settings.db)
        assert path.exists() and server_address.running(settings.db).pid == other.pid
    finally:
        other.kill()
        other.wait()
    assert server_address.running(settings.db) is None  # its process is gone: ignored
    path.write_text(json.dumps({**json.loads(path.read_text()), "pid": os.getpid()}))
    server_address.forget(settings.db)
    assert not path.exists()


@pytest.mark.parametrize("content", ["", "{not json", '{"host": "x"}', '{"host": "h", "port": "80", "pid": 1, '
                                     '"started_at": "", "url": "u"}'])  # fmt: skip
def test_an_unreadable_address_file_is_ignored(settings: Settings, content: str) -> None:
    server_address.address_file(settings.db).write_text(content)
    assert server_address.running(settings.db) is None


def test_a_host_that_is_not_this_machine_s_is_refused_in_one_line(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine, so bind() refuses it.
    assert cli(["serve", "--db", str(settings.db), "--host", "192.0.2.1", "--port", "0", "--no-schedule"]) == 4
    err = capsys.readouterr().err
    assert (
        err.startswith("error: cannot listen on 192.0.2.1: not an address of this machine (") and "check --host" in err
    )
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert exits.SERVER == 4 and not server_address.address_file(settings.db).exists()


def test_serve_writes_the_market_page_ahead_even_without_the_scheduler(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --no-schedule` collects nothing but still writes the market page ahead (api.web.warm)."""
    import api.serve

    made: dict[str, object] = {}

    class Made(Exception):
        pass

    def create_app(*args: object, **kwargs: object) -> NoReturn:
        made.update(kwargs)
        raise Made

    monkeypatch.setattr(api.serve, "create_app", create_app)
    with pytest.raises(Made):
        api.serve.serve(settings, "127.0.0.1", 0, schedule=False, say=lambda _: None)
    assert made["schedule"] is False and made["warm"] is True
