"""`gpuprice history`, `gpuprice digest` and `gpuprice export`: the same answers as `/offers/history`,
`/digest` and `/export` (and the SkyPilot / gpuhunt catalogs), from the database file or, while
`gpuprice serve` holds it, from the running server. `digest --store` does what the daily job does.
Each command imports its answer when it runs (api/cli/entry.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api import exits
from api.cli.options import offer_filters, parameter, parameters, snapshot_date
from api.exits import CliError

if TYPE_CHECKING:
    from api.cli.runner import Question


def cmd_history(args: argparse.Namespace) -> int:
    from api import render
    from api.cli.runner import Question, answer_command
    from api.history import history_answer
    from api.query import HistoryParams

    return answer_command(args, Question("/offers/history", HistoryParams, history_answer), render.history_table)


def _store_digest(args: argparse.Namespace) -> int:
    """Build, store and deliver a digest now (what the daily job does)."""
    import asyncio

    from api.cli.runner import console, settings_of
    from api.digests import run_digest_job
    from api.parsing import parse_day
    from api.state import now_utc
    from pricedb.digest import day_window
    from pricedb.store import PriceStore

    settings = settings_of(args)
    day = None
    if args.date:
        try:
            day = parse_day(args.date)
        except ValueError as exc:
            raise CliError(f"--date: {exc}") from None
    if day is not None and day_window(day, settings.digest_zone)[1] > now_utc():
        raise CliError(f"--date: {day} is not over yet in {settings.digest_time_zone}; only whole days are stored")
    store = PriceStore(settings)  # held by `serve` (which builds it on its own schedule): exit status 3
    try:
        digest = asyncio.run(run_digest_job(store, settings, day))
    finally:
        store.close()
    if digest is None:
        raise CliError("the digest could not be built (see the log above)")
    console.print(f"digest {digest['date']} stored: {digest['summary']}")
    for delivery in digest["deliveries"]:
        outcome = "delivered" if delivery["status"] == "ok" else f"[red]failed[/red]: {delivery['error']}"
        console.print(f"  {delivery['target']}: {outcome}")
    return exits.RUN_FAILED if any(d["status"] != "ok" for d in digest["deliveries"]) else exits.OK


def cmd_digest(args: argparse.Namespace) -> int:
    if args.store:
        return _store_digest(args)
    from api.cli.runner import Question, ask, write_json
    from api.digests import digest_answer
    from api.query import DigestParams

    values = {**parameters(args), "format": "json" if args.json else args.format}
    body = ask(args, Question("/digest", DigestParams, lambda state, params: digest_answer(state, params)[0]), values)
    if values["format"] == "json":
        write_json(json.loads(body))
    else:
        sys.stdout.write(body.decode())
    return exits.OK


def _catalog(args: argparse.Namespace) -> Question:
    """The SkyPilot or gpuhunt catalog asked for; its notes go to stderr when answered here."""
    from api.cli.runner import Question
    from api.exports import FileAnswer, gpuhunt_answer, skypilot_answer
    from api.query import ForeignParams
    from api.state import AppState

    def answer(state: AppState, params: ForeignParams) -> bytes:
        if args.skypilot:
            file: FileAnswer = skypilot_answer(state, args.skypilot, params)
        else:
            file = gpuhunt_answer(state, args.gpuhunt, params)
        for note in file.notes:
            print(f"note: {note}", file=sys.stderr)
        return file.body

    path = f"/export/skypilot/{args.skypilot}/vms.csv" if args.skypilot else f"/export/gpuhunt/{args.gpuhunt}.csv"
    return Question(path, ForeignParams, answer)


def _sheet() -> Question:
    from api.cli.runner import Question
    from api.exports import export_answer
    from api.query import ExportParams

    return Question("/export", ExportParams, lambda state, params: export_answer(state, params).body)


def cmd_export(args: argparse.Namespace) -> int:
    from api.cli.runner import ask, console

    catalog = bool(args.skypilot or args.gpuhunt)
    values = parameters(args)
    if catalog:
        del values["format"]  # the catalogs have one format each
    body = ask(args, _catalog(args) if catalog else _sheet(), values)
    if args.output:
        try:
            Path(args.output).write_bytes(body)
        except OSError as exc:
            raise CliError(f"--output: cannot write {args.output} ({exc.strerror or exc})") from None
        console.print(f"wrote {len(body):,} bytes to {args.output}")
    elif args.format == "parquet" and not catalog and sys.stdout.isatty():
        raise CliError("Parquet is binary: give --output FILE (or redirect stdout)")
    else:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    return exits.OK


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    history = commands.add_parser("history", parents=[common], help="price history of offers over time")
    offer_filters(history)
    parameter(history, "since", help="start: YYYY-MM-DD or an ISO date-time (default: 30 days before --until)")
    parameter(history, "until", help="end: YYYY-MM-DD (that whole day) or an ISO date-time (default: now)")
    parameter(history, "sku", help="comma list of instance types / SKUs")
    parameter(history, "limit", type=int, default=None, help="series per page (default 100)")
    parameter(history, "offset", type=int, default=None)
    history.set_defaults(handler=cmd_history)

    digest = commands.add_parser("digest", parents=[common], help="what changed on a day (the daily digest)")
    parameter(digest, "date", help="the day (YYYY-MM-DD; default: yesterday in the digest time zone)")
    parameter(digest, "format", choices=["md", "json"], default="md", help="md (default) or json (= --json)")
    digest.add_argument("--store", action="store_true", help="build, store and deliver it now, as the daily job does")
    digest.set_defaults(handler=cmd_digest)

    export = commands.add_parser("export", parents=[common], help="the price sheet as CSV, JSON, NDJSON or Parquet")
    offer_filters(export)
    parameter(export, "format", choices=["csv", "json", "ndjson", "parquet"], default="csv")
    snapshot_date(export)
    export.add_argument("--output", "-o", help="write to this file instead of stdout")
    catalog = export.add_mutually_exclusive_group()
    catalog.add_argument(
        "--skypilot", metavar="CLOUD", help="SkyPilot's vms.csv for this cloud (aws, azure, lambda, verda)"
    )
    catalog.add_argument(
        "--gpuhunt",
        metavar="PROVIDER",
        help="gpuhunt's catalog CSV for this provider (ours, or gpuhunt's name: lambdalabs, vastai, datacrunch)",
    )
    export.set_defaults(handler=cmd_export)
