"""The promises made to a newcomer: README's two quick-start commands, CI running exactly the
README's test command (and again a year ahead), and the console script."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:sh|bash|console)?\n(.*?)```", section, re.DOTALL)
    assert block, "README's quick start has no code block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_readme_quick_start_is_exactly_two_commands() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2, commands
    assert "gpuprice serve" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert quick_start_commands()[1] in ci.splitlines()


DATE_PROOF = (
    "FAKETIME_FORCE_MONOTONIC_FIX=0 faketime --exclude-monotonic -f '+365d' "
    ".venv/bin/python -m pytest -m 'not real_clock_peer'"
)


def test_ci_runs_the_suite_again_a_year_ahead_as_the_readme_says() -> None:
    """The proof that no test depends on today's date: after README's test command, CI runs the
    suite with the system clock a year ahead, with the command README's Development section gives."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert DATE_PROOF in ci
    assert ci.index(quick_start_commands()[1]) < ci.index(DATE_PROOF)
    development = (ROOT / "README.md").read_text().split("## Development", 1)[1].split("\n## ", 1)[0]
    assert f"\n{DATE_PROOF}\n" in development


def test_console_script_and_packages() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["gpuprice"] == "api.cli:main"
    assert project["project"]["requires-python"] == ">=3.11"
    dependencies = " ".join(project["project"]["dependencies"])
    assert "apscheduler>=3.11,<4" in dependencies and "duckdb>=" in dependencies and ",<3" in dependencies


def test_the_suite_cannot_reach_the_network() -> None:
    """conftest refuses every connection that is not to loopback, so a test that forgot its mock
    fails instead of quietly reaching a provider."""
    import httpx
    import pytest

    with pytest.raises(httpx.ConnectError, match="must not touch the network"):
        httpx.get("http://192.0.2.1/", timeout=1)  # TEST-NET-1: never routed


def test_one_version_source(capsys: pytest.CaptureFixture[str]) -> None:
    """pricedb/version.py is the only place the version is written: the package metadata, the CLI,
    the API and the User-Agent all read it."""
    from api.app import create_app
    from api.cli import main
    from collectors.http import USER_AGENT
    from pricedb.version import VERSION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pricedb.version.VERSION"}
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"gpuprice {VERSION}\n"
    assert create_app(schedule=False).version == VERSION
    assert USER_AGENT.startswith(f"gpuprice/{VERSION} ")
    written = [
        path.relative_to(ROOT).as_posix()
        for folder in ("api", "collectors", "pricedb")
        for path in (ROOT / folder).rglob("*.py")
        if re.search(r"""["']0\.1\.0["']""", path.read_text(encoding="utf-8"))
    ]
    assert written == ["pricedb/version.py"]


def test_a_command_imports_only_what_it_needs() -> None:
    """Building the parser (every `gpuprice` start; `--help` and `--version` need nothing more)
    imports no command's work, and the registry imports a collector only when its class is asked
    for: `collect lambda` does not load botocore for AWS."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "heavy = ('duckdb', 'fastapi', 'numpy', 'httpx', 'botocore', 'collectors.aws')\n"
        "from api.cli.entry import build_parser\n"
        "build_parser()\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "from collectors.registry import COLLECTORS\n"
        "assert COLLECTORS['lambda'].name == 'lambda'\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    ran = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    parser, lambda_collector = ran.stdout.splitlines()
    assert parser == "[]"
    assert lambda_collector == "['httpx']"  # its own HTTP client: no database, no web framework, no AWS SDK
