"""Serve repeated questions, and new `/cheapest` questions, before routing.

Between two data changes the answer to the same request is the same bytes, so a GET whose exact
path and query string were answered before is answered again from memory, without parameter
parsing or routing. Routes put successful answers back with `AppState.remember_raw`.

A new `/cheapest` question is answered here too when the current offers and their columnar form are
in memory (api.cheapest_fast): its parameters are read as FastAPI reads them (a list parameter with
all its repetitions, any other the last one given) into the same `CheapestParams`, and the answer is
the one the route would give, without routing and dependency resolution, which cost more than the
answer itself (a plain `mem` question is read without the model's validation machinery:
api.query_fast). Anything else — parameters the model refuses, an error, offers to be read from the
database first — goes through the app as usual, so every 4xx is the route's own."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.datastructures import QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from api.answers import cheapest_answer
from api.errors import ApiError
from api.limits import limits_of
from api.query import LISTS, CheapestParams
from api.query_fast import plain_params

CACHED_PATHS = frozenset({"/cheapest", "/offers"})
CHEAPEST = "/cheapest"


def _as_routed(query_string: bytes) -> dict[str, Any]:
    """The query as FastAPI hands it to a parameter model (Starlette's parsing)."""
    params = QueryParams(query_string)
    return {key: params.getlist(key) if key in LISTS else params[key] for key in params}


def answer_from_memory(state: Any, query_string: bytes) -> bytes | None:
    """`/cheapest`'s answer computed here, or None when the route must give it."""
    if not state.answers_from_memory():
        return None
    try:
        params = plain_params(query_string, state.settings) or state.reused.params(query_string, state.settings)
        if params is None:
            with limits_of(state.settings):
                params = CheapestParams.model_validate(_as_routed(query_string))
        body = cheapest_answer(state, params)
        state.reused.charge(params)  # what its judge worked out may have grown
        return body
    except (ValidationError, ApiError):
        return None  # the route says why, in its own words


class AnswerCache:
    def __init__(self, app: ASGIApp, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app whose state holds the answers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] in CACHED_PATHS:
            state = getattr(self.owner.state, "gpuprice", None)
            body = state.lookup_raw(scope["path"], scope["query_string"]) if state is not None else None
            cache = b"hit"
            if body is None and state is not None and scope["path"] == CHEAPEST:
                body = answer_from_memory(state, scope["query_string"])
                cache = b"computed"
                if body is not None:
                    state.remember_raw(CHEAPEST, scope["query_string"], body)
            if body is not None:
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"x-gpuprice-cache", cache),
                ]
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
