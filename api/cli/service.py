"""`gpuprice serve` (the API and the scheduler in one process) and `gpuprice collect` (one run now,
with progress and a summary). Each command imports what it needs when it runs (api/cli/entry.py)."""

from __future__ import annotations

import argparse
from typing import Any

from api import exits
from api.exits import CliError


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from api.cli.runner import console, settings_of
    from api.serve import serve
    from pricedb.replication.storage import open_storage

    settings = settings_of(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    if args.replica_of:
        settings = settings.model_copy(update={"replica_of": args.replica_of})
    if settings.replica_of:
        if args.offline or args.no_schedule:
            raise CliError("--replica-of collects nothing: leave out --offline and --no-schedule")
        try:
            open_storage(settings.replica_of, settings)
        except ValueError as exc:
            raise CliError(f"--replica-of {exc}") from None
    elif settings.offline:
        console.print("[yellow]offline: replaying recorded fixtures, no network[/yellow]")
    serve(settings, host, port, schedule=not args.no_schedule, say=console.print)
    return exits.OK


def cmd_collect(args: argparse.Namespace) -> int:
    import asyncio

    from rich.markup import escape

    from api import render
    from api.cli.runner import emit, errors, settings_of
    from collectors.registry import COLLECTORS
    from collectors.runner import collect
    from pricedb.files import sweep_leftovers
    from pricedb.models import RunStatus
    from pricedb.store import PriceStore

    settings = settings_of(args)
    args.providers = [p.lower() for p in args.providers]  # provider names are case-insensitive everywhere
    unknown = [p for p in args.providers if p not in COLLECTORS]
    if unknown:
        raise CliError(f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(COLLECTORS)}")
    store = PriceStore(settings)  # unusable (busy, read-only, corrupt): one line, exit status 3
    for path in sweep_leftovers(settings.export_path):
        errors.print(f"removed {escape(str(path))}, left behind by a gpuprice process that is gone", soft_wrap=True)
    mode = "offline (replaying fixtures)" if settings.offline else "live"
    errors.print(f"collecting {', '.join(args.providers) or 'all providers'} — {mode}")

    def progress(event: str, provider: str, detail: str) -> None:
        if event == "start":
            errors.print(f"  … {provider} ({detail})")
        else:
            errors.print(f"  ✓ {provider}: {detail}" if detail == "ok" else f"  ✗ {provider}: {detail}")

    try:
        summaries = asyncio.run(collect(store, settings, args.providers or None, progress=progress))
        exports = store.last_export()  # runs end in any order: the sheets are what the last attempt left
        published = store.last_publish() if settings.publish_targets else None
    finally:
        store.close()
    payload = [
        {
            "provider": s.provider,
            "scope": s.scope,
            "status": s.status.value,
            "quotes": s.quotes,
            "rejected": s.rejected,
            "seconds": round(s.seconds, 2),
            "offline": s.offline,
            "error": s.error,
            "notes": s.notes,
            "export_error": s.export_error,
            "publish_error": s.publish_error,
        }
        for s in summaries
    ]
    export_error = exports.error if exports else None
    publish = None
    if published is not None:
        publish = {"version": published.version, "targets": published.targets, "error": published.error}
    emit(
        args,
        {"runs": payload, "exports": str(settings.export_path), "export_error": export_error, "publish": publish},
        render.collect_table,
    )
    named = set(args.providers)
    failed = [
        s for s in summaries if s.status is RunStatus.FAILED or (s.status is RunStatus.SKIPPED and s.provider in named)
    ]
    if failed:
        return exits.RUN_FAILED
    if export_error:
        errors.print(f"[red]error:[/red] {escape(export_error)}", soft_wrap=True, highlight=False)
        return exits.EXPORTS
    if published is not None and published.error:
        errors.print(f"[red]error:[/red] {escape(published.error)}", soft_wrap=True, highlight=False)
        return exits.PUBLISH
    return exits.OK


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", parents=[common], help="HTTP API and collection scheduler")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--offline", action="store_true", help="replay recorded fixtures instead of the network")
    serve.add_argument("--no-schedule", action="store_true", help="serve what is stored; collect nothing")
    serve.add_argument(
        "--replica-of",
        metavar="SOURCE",
        help="serve what another gpuprice publishes (a folder, https://…, s3://bucket/prefix); collect nothing",
    )
    serve.set_defaults(handler=cmd_serve)

    collect = commands.add_parser("collect", parents=[common], help="collect prices now, with progress")
    collect.add_argument("providers", nargs="*", metavar="PROVIDER")
    collect.add_argument("--offline", action="store_true", help="replay recorded fixtures instead of the network")
    collect.set_defaults(handler=cmd_collect)
