"""What every query command does the same way, once: settings from the options, the parameters
parsed into the API's own models (api.query), the answer from the database file or, while
`gpuprice serve` holds it (DuckDB allows one writer process), from the running server: where it
recorded its address beside the database (`<db>.server.json`), else at GPUPRICE_HOST:GPUPRICE_PORT.
Then a table for people, or with `--json` exactly the JSON the API returns."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from rich.console import Console

from api import exits, server_address
from api.cli.options import parameters
from api.errors import ApiError
from api.exits import CliError, ServerUnavailable
from api.limits import limits_of
from api.state import AppState
from pricedb import tls
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreBusy

console = Console()
errors = Console(stderr=True)
Params = TypeVar("Params", bound=BaseModel)


def settings_of(args: argparse.Namespace) -> Settings:
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


def parse(model: type[Params], values: dict[str, Any], settings: Settings | None = None) -> Params:
    """The options given (None: not given) as the API's parameter model, within the limits of
    `settings`; a mistake is a CliError naming the option."""
    try:
        with limits_of(settings) if settings is not None else nullcontext():
            return model(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise CliError(_validation_message(exc)) from None


def _ask_server(settings: Settings, busy: StoreBusy, path: str, query: dict[str, Any]) -> bytes:
    recorded = server_address.running(settings.db)
    base = recorded.url if recorded else server_address.local_url(settings.host, settings.port)
    url = f"{base}{path}"
    params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items() if v is not None}
    try:
        response = httpx.get(url, params=params, timeout=30, verify=tls.client_context())
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


def answer_bytes(settings: Settings, local: Callable[[AppState], bytes], path: str, query: dict[str, Any]) -> bytes:
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


@dataclass(frozen=True)
class Question:
    """What a query command asks: the API's path, its parameter model and the answer behind it."""

    path: str
    params: type[BaseModel] | None
    answer: Callable[[AppState, Any], bytes]


def ask(args: argparse.Namespace, question: Question, values: dict[str, Any]) -> bytes:
    """The answer's bytes, exactly as the API would send them."""
    settings = settings_of(args)
    params = parse(question.params, values, settings) if question.params is not None else None
    return answer_bytes(settings, lambda state: question.answer(state, params), question.path, values)


def write_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n")


def emit(args: argparse.Namespace, payload: Any, table: Callable[[Any], None]) -> None:
    if args.json:
        write_json(payload)
    else:
        table(payload)


def answer_command(args: argparse.Namespace, question: Question, table: Callable[[Any], None]) -> int:
    """Ask `question` with the command's options and print the answer as `table` (or JSON)."""
    emit(args, json.loads(ask(args, question, parameters(args))), table)
    return exits.OK
