"""The `gpuprice` parser and its entry point. Problems a user can act on end the command with one
line on stderr and a status of api.exits, never with a traceback.

Building the parser imports no command's work: each handler imports what its command needs when it
runs, since every `gpuprice` start pays for its imports (`--help` and `--version` need nothing more,
`collect lambda` no other provider's SDK; tests/test_project.py holds this)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from api import exits
from api.cli import data, prices, service
from pricedb.version import VERSION


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuprice", description="What GPU rental really costs, everywhere.")
    parser.add_argument("--version", action="version", version=f"gpuprice {VERSION}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="DuckDB file (default GPUPRICE_DB or ./gpuprice.duckdb)")
    common.add_argument("--json", action="store_true", help="print exactly the JSON the HTTP API returns")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (service, prices, data):
        group.add_commands(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    except Exception as exc:
        status = exits.status_for(exc)
        if status is None:  # a bug: its traceback is what helps
            raise
        from rich.markup import escape

        from api.cli.runner import errors

        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        return status
