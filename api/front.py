"""The app's front door: what memory answers is sent before the middleware and routing.

A GET (or HEAD) of `/cheapest` or `/offers` that `api.answer_cache` answers from memory (a repeated
request, or a new `/cheapest` question over the columnar offers) costs less than the layers every
request passes through (Starlette's error and telemetry middleware, the body limit, HEAD as GET, the
request timer, the answer cache's own middleware): at 2,000 offers a new question is about as cheap
as those layers. So `GpupriceAPI` answers it first, and does what those layers would have done for
such an answer: the same status, headers and body (a HEAD's without its body, timed as its GET, as
api.head routes it) and the request timed in `/metrics` under the same labels (api.metrics). Anything
else — a question memory cannot answer, another path or method, an error while answering — goes
through the app as before (the answer cache then does not look again), so every other answer,
refusal and error is the app's own. tests/api/test_front.py compares the two, byte for byte."""

from __future__ import annotations

import time

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from api.answer_cache import CACHED_PATHS, LOOKED, from_memory, send_answer

READS = ("GET", "HEAD")


class GpupriceAPI(FastAPI):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in CACHED_PATHS and scope["method"] in READS:
            state = getattr(self.state, "gpuprice", None)
            if state is not None:
                started = time.perf_counter()
                try:
                    found = from_memory(state, scope["path"], scope["query_string"])
                except Exception:  # the app answers (its error middleware says 500), after looking again
                    found = None
                else:
                    scope[LOOKED] = True
                if found is not None:
                    try:
                        await send_answer(send, *found, with_body=scope["method"] == "GET")
                    finally:  # as api.metrics' RequestTimer: a HEAD is timed as the GET it is answered as
                        self.state.request_latency.labels(scope["path"], "GET", "200").observe(
                            time.perf_counter() - started
                        )
                    return
        await super().__call__(scope, receive, send)
