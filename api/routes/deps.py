"""Dependency aliases shared by the routers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from api.json_encoding import EncodedJson
from api.state import AppState

T = TypeVar("T")


async def get_state(request: Request) -> AppState:  # async: no worker thread for a lookup
    return request.app.state.gpuprice


State = Annotated[AppState, Depends(get_state)]


def json_response(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")


def encoded_json_response(encoded: EncodedJson) -> Response:
    """A JSON answer compressed for its client (api.json_encoding)."""
    return Response(content=encoded.body, media_type="application/json", headers=encoded.headers)


async def off_the_loop(state: AppState, work: Callable[[], T], heavy: bool) -> T:
    """`work()` in a worker thread; a heavy one (reading the observations: history, a past day, a
    digest built on demand) through the heavy-answer gate, with its slot and budget (api.budget)."""
    return await state.heavy.run(work) if heavy else await run_in_threadpool(work)
