"""api.front answers what memory holds before the middleware, exactly as the app answers it through
its middleware: the whole HTTP response (status, every header, body) of the front and of the same app
entered below the front (`FastAPI.__call__`), on a few thousand random requests over random offers —
new questions by `mem` and by model (valid and invalid: repeated, empty, encoded and unknown
parameters), the same questions again with other hours or exactly again (answered from the raw
cache), HEAD as well as GET, `/offers` — with the same request timings and cache counts in `/metrics`.
The answers by `mem` are also the plain reference's (api.cheapest.select), byte for byte: a question
asked again with other hours is answered from what it kept without them (api.cheapest_hours)."""

from __future__ import annotations

import asyncio
import random
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI

from api.answers import cheapest_json
from api.app import create_app
from api.limits import limits_of
from api.query import CheapestParams, as_routed
from pricedb.queries import CurrentOffers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.api.test_cheapest_fast import OBSERVED, random_offer, random_question
from tests.api.test_query_fast import random_query

Response = tuple[int, list[tuple[bytes, bytes]], bytes]
LATENCY = "gpuprice_http_request_duration_seconds_count"


def requests_timed(app: FastAPI) -> dict[tuple[tuple[str, str], ...], float]:
    """How many requests `/metrics` timed, by label set."""
    registry = app.state.metrics_registry
    return {
        tuple(sorted(s.labels.items())): s.value for m in registry.collect() for s in m.samples if s.name == LATENCY
    }


def holding(app: FastAPI, current: CurrentOffers) -> None:
    """The app's current offers are `current`, as if read from its store at its version."""
    state = app.state.gpuprice
    state._current, state._version = current, state.store.version


async def call(enter: Any, method: str, target: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> Response:
    path, _, query = target.partition("?")
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": query.encode("latin-1"),
        "headers": [(b"host", b"testserver"), (b"accept", b"*/*"), *headers], "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await enter(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], list(start["headers"]), body


def random_target(rng: random.Random, asked: list[str]) -> str:
    draw = rng.random()
    if asked and draw < 0.1:  # exactly again: the raw cache's
        return rng.choice(asked)
    if asked and draw < 0.25:  # again with other hours
        path, _, query = rng.choice(asked).partition("?")
        kept = [part for part in query.split("&") if not part.startswith("hours=")]
        hours = rng.choice(("1", "24", "731", "0.5", "", "abc", str(rng.uniform(0, 9000))))
        return f"{path}?{'&'.join([*kept, f'hours={hours}'])}"
    if draw < 0.3:
        return f"/offers?{urlencode({'limit': rng.choice(('5', '50')), 'gpu': rng.choice(('A100', 'L4'))})}"
    if draw < 0.65:
        return "/cheapest?" + urlencode(random_question(rng))
    return "/cheapest?" + random_query(rng).decode("latin-1")


def reference(target: str, current: CurrentOffers, settings: Settings) -> bytes | None:
    """The plain reference's answer to a `/cheapest` question the parameter model accepts."""
    with limits_of(settings):
        params = CheapestParams.model_validate(as_routed(target.partition("?")[2].encode("latin-1")))
    return cheapest_json(params, current, settings, None)


@pytest.mark.parametrize("seed", range(4))
def test_the_front_answers_as_the_app_does(store: PriceStore, settings: Settings, seed: int) -> None:
    rng = random.Random(seed)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(300))}.values(), key=lambda o: o.key)
    current = CurrentOffers(offers, OBSERVED, None)
    settings = settings.model_copy(update={"max_limit": 50})
    front, below = create_app(settings, store=store, schedule=False), create_app(settings, store=store, schedule=False)

    async def run() -> tuple[int, int, int]:
        async with front.router.lifespan_context(front), below.router.lifespan_context(below):
            for app in (front, below):
                holding(app, current)
                status, _, _ = await call(app, "GET", "/cheapest?mem=1")  # the route builds the columns
                assert status == 200 and app.state.gpuprice.answers_from_memory()
            asked: list[str] = []
            computed = refused = compared = 0
            for _ in range(500):
                target = random_target(rng, asked)
                method = "HEAD" if rng.random() < 0.1 else "GET"
                answered = await call(front, method, target)
                assert answered == await call(lambda *a: FastAPI.__call__(below, *a), method, target), target
                status, headers, body = answered
                cache = dict(headers).get(b"x-gpuprice-cache")
                computed += cache == b"computed"
                refused += status == 422
                if status == 200 and target.startswith("/cheapest"):
                    asked.append(target)
                    if method == "GET" and rng.random() < 0.3:
                        assert body == reference(target, current, settings), target
                        compared += 1
            for state in (front.state.gpuprice, below.state.gpuprice):
                assert state.cache_hits["request"] > 0
            assert front.state.gpuprice.cache_hits == below.state.gpuprice.cache_hits
            assert front.state.gpuprice.cache_misses == below.state.gpuprice.cache_misses
            return computed, refused, compared

    computed, refused, compared = asyncio.run(run())
    assert computed > 200 and refused > 30 and compared > 50  # every kind of answer was compared
    timed = [requests_timed(app) for app in (front, below)]
    assert timed[0] == timed[1] and len(timed[0]) >= 3
