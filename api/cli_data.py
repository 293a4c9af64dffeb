"""`gpuprice history`, `gpuprice digest` and `gpuprice export`: the same answers as `/offers/history`,
`/digest` and `/export` (and the SkyPilot / gpuhunt catalogs), from the database file or, while
`gpuprice serve` holds it, from the running server."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api import render
from api.cli import CliError, _answer, _answer_bytes, _emit, _filter_values, _params, _settings, console
from api.digests import digest_answer, run_digest_job
from api.exports import FileAnswer, export_answer, gpuhunt_answer, skypilot_answer
from api.history import history_answer
from api.parsing import parse_day
from api.query import DigestParams, ExportParams, ForeignParams, HistoryParams
from api.state import now_utc
from pricedb.digest import day_window
from pricedb.store import PriceStore


def cmd_history(args: argparse.Namespace) -> int:
    settings = _settings(args)
    values = {
        **_filter_values(args),
        "since": args.since,
        "until": args.until,
        "sku": args.sku,
        "limit": args.limit,
        "offset": args.offset,
    }
    params = _params(HistoryParams, values)
    payload = _answer(settings, lambda state: history_answer(state, params), "/offers/history", values)
    _emit(args, payload, render.history_table)
    return 0


def _store_digest(args: argparse.Namespace) -> int:
    """Build, store and deliver a digest now (what the daily job does)."""
    settings = _settings(args)
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
    return 1 if any(d["status"] != "ok" for d in digest["deliveries"]) else 0


def cmd_digest(args: argparse.Namespace) -> int:
    if args.store:
        return _store_digest(args)
    settings = _settings(args)
    fmt = "json" if args.json else args.format
    values = {"date": args.date, "format": fmt}
    params = _params(DigestParams, values)
    body = _answer_bytes(settings, lambda state: digest_answer(state, params)[0], "/digest", values)
    if fmt == "json":
        sys.stdout.write(json.dumps(json.loads(body), ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(body.decode())
    return 0


def _export_local(args: argparse.Namespace, values: dict[str, Any]) -> tuple[Callable[[Any], bytes], str]:
    if args.skypilot or args.gpuhunt:
        params = _params(ForeignParams, {k: v for k, v in values.items() if k != "format"})

        def foreign(state: Any) -> bytes:
            if args.skypilot:
                answer: FileAnswer = skypilot_answer(state, args.skypilot, params)
            else:
                answer = gpuhunt_answer(state, args.gpuhunt, params)
            for note in answer.notes:
                print(f"note: {note}", file=sys.stderr)
            return answer.body

        path = f"/export/skypilot/{args.skypilot}/vms.csv" if args.skypilot else f"/export/gpuhunt/{args.gpuhunt}.csv"
        return foreign, path
    params = _params(ExportParams, values)
    return (lambda state: export_answer(state, params).body), "/export"


def cmd_export(args: argparse.Namespace) -> int:
    settings = _settings(args)
    values = {**_filter_values(args), "date": args.date, "format": args.format}
    local, path = _export_local(args, values)
    query = {k: v for k, v in values.items() if not (path != "/export" and k == "format")}
    body = _answer_bytes(settings, local, path, query)
    if args.output:
        try:
            Path(args.output).write_bytes(body)
        except OSError as exc:
            raise CliError(f"--output: cannot write {args.output} ({exc.strerror or exc})") from None
        console.print(f"wrote {len(body):,} bytes to {args.output}")
    elif args.format == "parquet" and not (args.skypilot or args.gpuhunt) and sys.stdout.isatty():
        raise CliError("Parquet is binary: give --output FILE (or redirect stdout)")
    else:
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
    return 0


def add_data_commands(commands: Any, common: argparse.ArgumentParser, filters: Callable[[Any], None]) -> None:
    history = commands.add_parser("history", parents=[common], help="price history of offers over time")
    filters(history)
    history.add_argument("--since", help="start: YYYY-MM-DD or an ISO date-time (default: 30 days before --until)")
    history.add_argument("--until", help="end: YYYY-MM-DD (that whole day) or an ISO date-time (default: now)")
    history.add_argument("--sku", help="comma list of instance types / SKUs")
    history.add_argument("--limit", type=int, default=None, help="series per page (default 100)")
    history.add_argument("--offset", type=int, default=None)
    history.set_defaults(handler=cmd_history)

    digest = commands.add_parser("digest", parents=[common], help="what changed on a day (the daily digest)")
    digest.add_argument("--date", help="the day (YYYY-MM-DD; default: yesterday in the digest time zone)")
    digest.add_argument("--format", choices=["md", "json"], default="md", help="md (default) or json (= --json)")
    digest.add_argument("--store", action="store_true", help="build, store and deliver it now, as the daily job does")
    digest.set_defaults(handler=cmd_digest)

    export = commands.add_parser("export", parents=[common], help="the price sheet as CSV, JSON, NDJSON or Parquet")
    filters(export)
    export.add_argument("--format", choices=["csv", "json", "ndjson", "parquet"], default="csv")
    export.add_argument("--date", help="the market at the end of this UTC day (YYYY-MM-DD) instead of now")
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
