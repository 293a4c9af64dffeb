"""The app's front door: what memory answers is sent before the middleware and routing.

A GET (or HEAD) of `/cheapest` or `/offers` that `api.answer_cache` answers from memory (a repeated
request, or a new `/cheapest` question over the columnar offers), and of `/offers/history` that the
history files answer at once (api.history.history_answer_at_once: a named offer's records in the page
cache or memory), costs less than the layers every request passes through (Starlette's error and
telemetry middleware, the body limit, HEAD as GET, the request timer, the answer cache's own
middleware, FastAPI's parameter parsing and dependencies): at 2,000 offers a new question is about
as cheap as those layers. So `GpupriceAPI` answers it first, and does what those layers would have
done for such an answer: the same status, headers and body (a HEAD's without its body, timed as its
GET, as api.head routes it) and the request timed in `/metrics` under the same labels (api.metrics).
Anything else — a question memory cannot answer, another path or method, parameters the model
refuses, an error while answering — goes through the app as before (the answer cache then does not
look again), so every other answer, refusal and error is the app's own. tests/api/test_front.py and
tests/api/test_history_files.py compare the two, byte for byte. A history answer goes compressed
as the route sends it to that client (api.json_encoding)."""

from __future__ import annotations

import time

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from api.answer_cache import CACHED_PATHS, EMPTY_BODY, LOOKED, from_memory, send_answer
from api.history import HISTORY_PATH, history_in_front
from api.json_encoding import EncodedJson

READS = ("GET", "HEAD")


class GpupriceAPI(FastAPI):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in READS:
            path = scope["path"]
            state = getattr(self.state, "gpuprice", None)
            if state is not None and path in CACHED_PATHS:
                started = time.perf_counter()
                try:
                    found = from_memory(state, path, scope["query_string"])
                except Exception:  # the app answers (its error middleware says 500), after looking again
                    found = None
                else:
                    scope[LOOKED] = True
                if found is not None:
                    try:
                        await send_answer(send, *found, with_body=scope["method"] == "GET")
                    finally:
                        self._timed(path, started)
                    return
            elif state is not None and path == HISTORY_PATH:
                started = time.perf_counter()
                try:
                    encoded = history_in_front(state, scope)
                except Exception:  # the route answers, its own way (a 422 for a question too broad)
                    encoded = None
                if encoded is not None:
                    try:
                        await send_json(send, encoded, with_body=scope["method"] == "GET")
                    finally:
                        self._timed(path, started)
                    return
        await super().__call__(scope, receive, send)

    def _timed(self, path: str, started: float) -> None:
        """As api.metrics' RequestTimer: a HEAD is timed as the GET it is answered as."""
        self.state.request_latency.labels(path, "GET", "200").observe(time.perf_counter() - started)


async def send_json(send: Send, encoded: EncodedJson, with_body: bool) -> None:
    """A route's `encoded_json_response(encoded)` as Starlette sends it: its headers, in its order."""
    await send({"type": "http.response.start", "status": 200, "headers": encoded.raw_headers()})
    await send({"type": "http.response.body", "body": encoded.body} if with_body else EMPTY_BODY)
