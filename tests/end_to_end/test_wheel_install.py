"""The product is the wheel, not the checkout: a wheel built from the repository, installed into a fresh
venv in a temporary folder, runs `gpuprice serve --offline` from there and answers
`/cheapest?mem=60GB&hours=200` with ranked options, every provider collected from the recordings the
wheel carries (the `fixtures` package data).

No network: the wheel is built without build isolation (setuptools comes from the test extra), the
fresh venv has no pip and no packages of its own, and it finds gpuprice's dependencies through a .pth
line naming this venv's site-packages (a .pth only adds the folder to sys.path, so the editable
install's finder there is never run and the checkout stays out of reach).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from collectors.registry import COLLECTORS

ROOT = Path(__file__).resolve().parents[2]
# What a wheel is built from; the rest of the checkout (tests, docs, benchmarks, caches) stays behind.
SOURCES = ("pyproject.toml", "README.md", "api", "collectors", "pricedb", "fixtures")
WAIT_S = 60.0


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{argv[:4]} failed:\n{done.stdout}\n{done.stderr}"
    return done


def _build_wheel(work: Path) -> Path:
    source = work / "source"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    dist = work / "dist"
    # setuptools' own PEP 517 hook, the one `pip wheel --no-build-isolation` calls, without pip's start and
    # its separate metadata pass (a child process each: about 1 s of CPU, half of the build)
    build = "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])"
    _run([sys.executable, "-c", build, str(dist)], cwd=source)
    (wheel,) = dist.glob("gpuprice-*.whl")
    return wheel


def _fresh_venv(work: Path, wheel: Path) -> Path:
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python", str(python)]
    _run([*pip, "install", "--quiet", "--no-deps", "--no-index", str(wheel)])
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "gpuprice-test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:  # loopback only
        return json.loads(response.read())


def _wait_for(what: str, check: object, deadline: float, server: subprocess.Popen[str]) -> object:
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server stopped: {server.communicate()[0][-3000:]}"
        found = check()  # type: ignore[operator]
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("gpuprice-wheel"))


def test_the_wheel_carries_every_recording(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    recordings = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "fixtures").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert recordings <= names, sorted(recordings - names)
    pages = {
        path.relative_to(ROOT).as_posix()
        for folder in ("templates", "static")
        for path in (ROOT / "api" / "web" / folder).iterdir()
    }
    assert pages and pages <= names, sorted(pages - names)  # the pages' templates and assets
    assert "fixtures/README.md" in names and "fixtures/__init__.py" in names
    assert not [name for name in names if name.startswith("tests/") or name.endswith("build_fixtures.py")]


def test_an_installed_wheel_serves_offline_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    work = tmp_path / "installed"  # pytest's tmp_path is outside the checkout
    assert not work.is_relative_to(ROOT) and not wheel.is_relative_to(ROOT)
    venv = _fresh_venv(work, wheel)
    cwd, data = work / "cwd", work / "data"
    cwd.mkdir()
    data.mkdir()
    db = data / "gpuprice.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(GPUPRICE_DB=str(db), PYTHONDONTWRITEBYTECODE="1")

    # The interpreter, environment and folder the server runs with import the installed copy, not the checkout.
    probe = (
        "import json, sys, api, collectors, fixtures, pricedb; from pricedb.settings import Settings; "
        "print(json.dumps([m.__file__ for m in (api, collectors, fixtures, pricedb)] "
        "+ [str(Settings().fixtures_dir)] + sys.path))"
    )
    files, fixtures_dir, *path = json.loads(_run([str(venv / "bin" / "python"), "-c", probe], cwd=cwd, env=env).stdout)
    for located in files, fixtures_dir:
        for name in [located] if isinstance(located, str) else located:
            assert Path(name).is_relative_to(venv), name
    dependencies = Path(sysconfig.get_path("purelib")).resolve()  # may lie inside the checkout (.venv)
    checkout = [e for e in path if e and Path(e).resolve().is_relative_to(ROOT.resolve())]
    assert [Path(e).resolve() for e in checkout] == [dependencies], path
    script = venv / "bin" / "gpuprice"
    assert script.read_text().splitlines()[0] == f"#!{venv / 'bin' / 'python'}"

    server = subprocess.Popen(
        [str(script), "serve", "--offline", "--port", "0"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        address_file = db.with_name(db.name + ".server.json")
        _wait_for("the server's address", address_file.exists, deadline, server)
        url = json.loads(address_file.read_text())["url"]

        def collected() -> list[dict] | None:
            providers = _get_json(f"{url}/providers")["providers"]
            done = [p for p in providers if p["provider"] in COLLECTORS and p["status"] != "never_run"]
            return providers if len(done) == len(COLLECTORS) else None

        providers = _wait_for("every provider's first run", collected, deadline, server)
        assert {p["provider"]: p["status"] for p in providers if p["provider"] in COLLECTORS} == dict.fromkeys(
            COLLECTORS, "ok"
        )
        answer = _get_json(f"{url}/cheapest?mem=60GB&hours=200")
        options = answer["options"]
        assert len(options) >= 5 and [o["rank"] for o in options] == list(range(1, len(options) + 1))
        totals = [o["total_cny"] for o in options]
        assert totals == sorted(totals) and totals[0] > 0
        assert all(o["gpu_memory_gb"] * o["gpu_count"] >= 60 for o in options)
        assert {o["provider"] for o in options} <= set(COLLECTORS)
        browser = urllib.request.Request(f"{url}/", headers={"Accept": "text/html"})
        with urllib.request.urlopen(browser, timeout=10) as response:  # the market page, from the wheel's templates
            assert response.headers["content-type"] == "text/html; charset=utf-8"
            page = response.read().decode()
        every_offer = _get_json(f"{url}/offers?limit=5000")["offers"]  # more than /offers' default 500
        rows = page.split('<table id="market"')[1].split("<tbody>")[1].split("</tbody>")[0].count("<tr")
        assert rows == len(every_offer)
        with urllib.request.urlopen(f"{url}/static/app.js", timeout=10) as response:
            assert response.status == 200 and response.read()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)  # a clean stop; a loaded machine may take a while
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert not address_file.exists()  # it stopped cleanly and forgot its address
