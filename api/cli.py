"""`gpuprice`: the command line (CONTRACT §5). Tables for people; `--json` prints exactly the JSON
the HTTP API returns, because both come from api.answers.

Query commands read the database directly. While `gpuprice serve` holds it (DuckDB allows one
writer process), they ask the running server instead: where it recorded its address beside the
database (`<db>.server.json`), else at GPUPRICE_HOST:GPUPRICE_PORT.

Problems a user can act on end the command with one line and a status of api.exits."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from api import exits, render, server_address
from api.answers import cheapest_answer, estimate_answer, offers_answer, providers_answer
from api.app import VERSION
from api.errors import ApiError
from api.exits import CliError, ServerUnavailable
from api.query import CheapestParams, EstimateParams, EstimatorFields, OffersParams
from api.state import AppState
from pricedb.export import ExportFailed
from pricedb.files import sweep_leftovers
from pricedb.models import RunStatus
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreBusy, StoreUnavailable

console = Console()
errors = Console(stderr=True)


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    if getattr(args, "db", None):
        overrides["db"] = args.db
    if getattr(args, "offline", False):
        overrides["offline"] = True
    return Settings(**overrides)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"--{where.replace('_', '-')}: {message}" if where else message)
    return "; ".join(parts)


def _params(model: type, values: dict[str, Any]) -> Any:
    try:
        return model(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise CliError(_validation_message(exc)) from None


def _ask_server(settings: Settings, busy: StoreBusy, path: str, query: dict[str, Any]) -> bytes:
    recorded = server_address.running(settings.db)
    base = recorded.url if recorded else server_address.local_url(settings.host, settings.port)
    url = f"{base}{path}"
    params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items() if v is not None}
    try:
        response = httpx.get(url, params=params, timeout=30)
    except httpx.HTTPError as exc:
        if recorded:
            where = f"the gpuprice serve recorded in {server_address.address_file(settings.db)} (pid {recorded.pid})"
            todo = "is it still starting? try again"
        else:
            where = "no gpuprice serve recorded its address, and GPUPRICE_HOST:GPUPRICE_PORT"
            todo = "wait for the other process (a `gpuprice collect`?) to finish, or start `gpuprice serve`"
        raise ServerUnavailable(
            f"database {settings.db} is {busy.reason}, and {where} does not answer at {base} ({exc}); {todo}"
        ) from None
    if response.status_code >= 400:
        try:
            message = response.json().get("message", response.text)
        except ValueError:
            message = response.text
        raise CliError(message)
    return response.content


def _answer_bytes(settings: Settings, local: Callable[[AppState], bytes], path: str, query: dict[str, Any]) -> bytes:
    """Answer from the database file, or from the running server when it holds the file."""
    if not settings.db.exists():
        raise CliError(f"no database at {settings.db} yet: run `gpuprice collect` (or `--offline`) first")
    try:
        store = PriceStore(settings, read_only=True)
    except StoreBusy as busy:
        return _ask_server(settings, busy, path, query)
    try:
        return local(AppState(store, settings))
    except ApiError as exc:
        raise CliError(f"--{exc.parameter}: {exc.message}" if exc.parameter else exc.message) from None
    finally:
        store.close()


def _answer(settings: Settings, local: Callable[[AppState], bytes], path: str, query: dict[str, Any]) -> Any:
    return json.loads(_answer_bytes(settings, local, path, query))


def _emit(args: argparse.Namespace, payload: Any, table: Callable[[Any], None]) -> None:
    if args.json:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")
    else:
        table(payload)


# ----- commands --------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from api.serve import serve

    settings = _settings(args)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    host = args.host or settings.host
    port = args.port if args.port is not None else settings.port
    if settings.offline:
        console.print("[yellow]offline: replaying recorded fixtures, no network[/yellow]")
    serve(settings, host, port, schedule=not args.no_schedule, say=console.print)
    return exits.OK


def cmd_collect(args: argparse.Namespace) -> int:
    from collectors.registry import COLLECTORS
    from collectors.runner import collect

    settings = _settings(args)
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
        }
        for s in summaries
    ]
    export_error = exports.error if exports else None
    _emit(
        args,
        {"runs": payload, "exports": str(settings.export_path), "export_error": export_error},
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
    return exits.OK


def _filter_values(args: argparse.Namespace) -> dict[str, Any]:
    """The options every offer filter takes (`_filters` adds them to a command)."""
    return {
        "pricing": args.pricing,
        "provider": args.provider,
        "region": args.region,
        "gpu": args.gpu,
        "include_unavailable": args.include_unavailable,
        "include_stale": args.include_stale,
    }


def cmd_cheapest(args: argparse.Namespace) -> int:
    settings = _settings(args)
    values = {
        "mem": args.mem,
        "hours": args.hours,
        **_filter_values(args),
        "single_gpu": args.single_gpu,
        "interruptible": args.interruptible,
        "rank_by": args.rank_by,
        "limit": args.limit,
        **_estimator_values(args),
    }
    params = _params(CheapestParams, values)
    payload = _answer(settings, lambda state: cheapest_answer(state, params), "/cheapest", values)
    _emit(args, payload, render.cheapest_table)
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    """Needs no prices, so no database."""
    params = _params(EstimateParams, _estimator_values(args))
    _emit(args, json.loads(estimate_answer(params)), render.estimate_table)
    return 0


def cmd_offers(args: argparse.Namespace) -> int:
    settings = _settings(args)
    values = {
        **_filter_values(args),
        "sort": args.sort,
        "desc": args.desc,
        "limit": args.limit,
        "date": args.date,
    }
    params = _params(OffersParams, values)
    payload = _answer(settings, lambda state: offers_answer(state, params), "/offers", values)
    _emit(args, payload, render.offers_table)
    return 0


def cmd_providers(args: argparse.Namespace) -> int:
    settings = _settings(args)
    payload = _answer(settings, providers_answer, "/providers", {})
    _emit(args, payload, render.providers_table)
    return 0


# ----- parser ----------------------------------------------------------------------------
def _bool_option(parser: argparse.ArgumentParser, name: str, help_text: str) -> None:
    parser.add_argument(f"--{name}", nargs="?", const="true", default=None, metavar="BOOL", help=help_text)


def _filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pricing", help="comma list: on_demand, spot, monthly, reserved_1y, reserved_3y")
    parser.add_argument("--provider", help="comma list of provider slugs")
    parser.add_argument("--region", help="comma list of regions")
    parser.add_argument("--gpu", default=None, help="GPU model (default A100)")
    _bool_option(parser, "include-unavailable", "include sold-out offers")
    _bool_option(parser, "include-stale", "include offers of providers whose last run failed or is old")


ESTIMATOR_HELP = {
    "model": "catalog name or Hugging Face id (llama-2-13b, Qwen/Qwen2.5-14B)",
    "params": "parameter count instead of a model: 7B, 13e9",
    "workload": "inference (default), lora, qlora, full_finetune",
    "precision": "fp32, bf16 (default), fp16, int8, int4",
    "context": "tokens per sequence (prompt + output)",
    "batch": "concurrent sequences (training: micro-batch per GPU)",
    "gpus": "GPUs the job runs on (cheapest: only machines with that many)",
    "zero": "ZeRO stage 0-3 (training; default: chosen per GPU count)",
    "gradient_checkpointing": "true/false (training; default true)",
    "optimizer": "adamw (default), adamw8bit, sgd",
    "lora_rank": "LoRA rank (default 64)",
    "engine": "hf (default) or vllm (inference)",
}


def _estimator_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the job to estimate (instead of --mem)")
    for name in EstimatorFields.model_fields:
        group.add_argument(f"--{name.replace('_', '-')}", help=ESTIMATOR_HELP.get(name, "architecture override"))


def _estimator_values(args: argparse.Namespace) -> dict[str, Any]:
    return {name: getattr(args, name) for name in EstimatorFields.model_fields}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpuprice", description="What GPU rental really costs, everywhere.")
    parser.add_argument("--version", action="version", version=f"gpuprice {VERSION}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", help="DuckDB file (default GPUPRICE_DB or ./gpuprice.duckdb)")
    common.add_argument("--json", action="store_true", help="print exactly the JSON the HTTP API returns")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", parents=[common], help="HTTP API and collection scheduler")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--offline", action="store_true", help="replay recorded fixtures instead of the network")
    serve.add_argument("--no-schedule", action="store_true", help="serve what is stored; collect nothing")
    serve.set_defaults(handler=cmd_serve)

    collect = commands.add_parser("collect", parents=[common], help="collect prices now, with progress")
    collect.add_argument("providers", nargs="*", metavar="PROVIDER")
    collect.add_argument("--offline", action="store_true", help="replay recorded fixtures instead of the network")
    collect.set_defaults(handler=cmd_collect)

    cheapest = commands.add_parser("cheapest", parents=[common], help="cheapest viable options for a job")
    cheapest.add_argument("--mem", help="GPU memory needed: 60GB, 60 GiB or 60 (or describe the job: --model …)")
    cheapest.add_argument("--hours", default=None, help="wall-clock hours (default 1)")
    _filters(cheapest)
    _bool_option(cheapest, "single-gpu", "the whole need on one GPU")
    _bool_option(cheapest, "interruptible", "include spot (default true; --interruptible false drops it)")
    cheapest.add_argument("--rank-by", default=None, help="total (default) or per_mtoken (inference estimates)")
    cheapest.add_argument("--limit", type=int, default=None)
    _estimator_options(cheapest)
    cheapest.set_defaults(handler=cmd_cheapest)

    estimate = commands.add_parser("estimate", parents=[common], help="GPU memory a workload needs")
    _estimator_options(estimate)
    estimate.set_defaults(handler=cmd_estimate)

    offers = commands.add_parser("offers", parents=[common], help="current offers")
    _filters(offers)
    offers.add_argument("--sort", default=None, help="cny_per_gb_hour (default), cny_per_hour, price, provider, …")
    _bool_option(offers, "desc", "sort descending")
    offers.add_argument("--limit", type=int, default=None)
    offers.add_argument("--date", help="the market at the end of this UTC day (YYYY-MM-DD) instead of now")
    offers.set_defaults(handler=cmd_offers)

    providers = commands.add_parser("providers", parents=[common], help="each provider's last run")
    providers.set_defaults(handler=cmd_providers)

    from api.cli_data import add_data_commands  # history, digest, export: beside the core commands

    add_data_commands(commands, common, _filters)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (CliError, StoreUnavailable, ServerUnavailable, ExportFailed) as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        return exits.status_for(exc) or exits.USAGE
    except KeyboardInterrupt:
        return exits.INTERRUPTED


if __name__ == "__main__":
    # Run the importable module's main, so commands defined beside it (api.cli_data) share its CliError.
    from api.cli import main as canonical_main

    raise SystemExit(canonical_main())
