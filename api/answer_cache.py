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
from starlette.types import ASGIApp, Receive, Scope, Send

from api.answers import cheapest_answer
from api.cheapest_hours import MEM_ANSWER
from api.errors import ApiError
from api.limits import limits_of
from api.query import CheapestParams, as_routed

CACHED_PATHS = frozenset({"/cheapest", "/offers"})
CHEAPEST = "/cheapest"


def answer_from_memory(state: Any, query_string: bytes) -> bytes | None:
    """`/cheapest`'s answer computed here, or None when the route must give it."""
    memory = state.in_memory()
    if memory is None:
        return None
    try:
        found = state.reused.kept(query_string, state.settings)
        if found is None:
            with limits_of(state.settings):
                params = CheapestParams.model_validate(as_routed(query_string))
            return cheapest_answer(state, params, None, memory)
        params, hours = found
        kept = params.shared.get(MEM_ANSWER)
        body = cheapest_answer(state, params, hours, memory)
        if params.estimate is not None or params.shared.get(MEM_ANSWER) is not kept:
            state.reused.charge(params)  # what its judge worked out may have grown, or its answer without hours
        return body
    except (ValidationError, ApiError):
        return None  # the route says why, in its own words


def from_memory(state: Any, path: str, query_string: bytes) -> tuple[bytes, bytes] | None:
    """The answer to a GET of a cached path and how it was found (`x-gpuprice-cache`: hit or
    computed), or None when the route must give it."""
    body = state.lookup_raw(path, query_string)
    if body is not None:
        return body, b"hit"
    if path == CHEAPEST:
        body = answer_from_memory(state, query_string)
        if body is not None:
            state.remember_raw(CHEAPEST, query_string, body)
            return body, b"computed"
    return None


async def send_answer(send: Send, body: bytes, cache: bytes, with_body: bool = True) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-gpuprice-cache", cache),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body} if with_body else EMPTY_BODY)


EMPTY_BODY = {"type": "http.response.body", "body": b"", "more_body": False}  # a HEAD's, as api.head sends it
LOOKED = "gpuprice.looked_in_memory"  # in a request's scope: api.front looked already, and found nothing


class AnswerCache:
    def __init__(self, app: ASGIApp, owner: Any) -> None:
        self.app = app
        self.owner = owner  # the FastAPI app whose state holds the answers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] in CACHED_PATHS:
            state = getattr(self.owner.state, "gpuprice", None)
            looked = state is None or LOOKED in scope
            found = None if looked else from_memory(state, scope["path"], scope["query_string"])
            if found is not None:
                await send_answer(send, *found)
                return
        await self.app(scope, receive, send)
