"""Builders for tests that need quotes and runs without a provider behind them."""

from __future__ import annotations

import asyncio
import gc
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError

from api.app import create_app
from api.limits import limits_of
from api.query import as_routed
from collectors import fx_ecb
from collectors.replay import Replay, serve_replay
from collectors.runner import RunSummary, collect
from pricedb.models import FxRate, InstanceZone, Pricing, Quote, RunStatus, Unit
from pricedb.settings import Settings
from pricedb.store import PriceStore, RunRecord, utc_naive
from tests.conftest import FIXTURES

T = TypeVar("T")

NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


def make_quote(
    provider: str = "aws",
    region: str = "us-east-1",
    sku: str = "p4d.24xlarge",
    pricing: Pricing = Pricing.ON_DEMAND,
    price: float = 21.957642,
    currency: str = "USD",
    unit: Unit = Unit.HOUR,
    gpu_count: int = 8,
    gpu_memory_gb: float = 40.0,
    observed_at: datetime = NOW,
    gpu_model: str = "A100",
    **extra: object,
) -> Quote:
    return Quote(
        provider=provider, region=region, sku=sku, gpu_model=gpu_model, gpu_memory_gb=gpu_memory_gb,
        gpu_count=gpu_count, pricing=pricing, price=price, currency=currency, unit=unit,
        source_url=f"https://example.test/{provider}", observed_at=observed_at, **extra,
    )  # fmt: skip


def make_run(
    provider: str,
    quotes: list[Quote],
    status: RunStatus = RunStatus.OK,
    finished_at: datetime = NOW,
    pricings: frozenset[Pricing] | None = None,
    error: str | None = None,
    stale_after_minutes: int = 48 * 60,
    zones: dict[str, list[InstanceZone]] | None = None,
) -> RunRecord:
    covered = pricings if pricings is not None else frozenset(q.pricing for q in quotes) or frozenset(Pricing)
    return RunRecord(
        provider=provider, scope="all", pricings=covered, started_at=finished_at - timedelta(seconds=5),
        finished_at=finished_at, status=status, offline=False, stale_after_minutes=stale_after_minutes,
        error=error, quotes=quotes if status is RunStatus.OK else [], zones=zones or {},
    )  # fmt: skip


def seed_fx(store: PriceStore, day: datetime = NOW, usd: float = 1.0, cny: float = 7.0, inr: float = 90.0) -> None:
    """FX so that 1 USD = cny/usd CNY on `day` (defaults: 1 USD = ¥7)."""
    on = day.date()
    rates = [FxRate(date=on, currency=c, rate=r, source="test") for c, r in (("USD", usd), ("CNY", cny), ("INR", inr))]
    store.record_fx(make_run("fx", [], pricings=frozenset(), finished_at=day), rates)


def freeze_survivors() -> None:
    """Before a memory measure: collect, then freeze what survives out of later collections (as the
    suite does after collecting, tests/conftest.py), so the measure's own collections walk only what it
    makes. Late in a whole-suite run an xdist worker holds millions of objects; each walk of them took
    ~0.3-0.9 s. Garbage the measure makes is still collected: nothing frozen can come to refer to it.
    Never unfrozen: `gc.unfreeze()` would also undo the suite's freeze, for every later test of the worker."""
    gc.collect()
    gc.freeze()


class Sleeps:
    """A stand-in for `asyncio.sleep` in `Http(..., sleep=...)` that records the retry delays."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def assert_422_naming(response, parameter: str, message: str) -> None:
    """The one 4xx error shape (api/errors.py), with a problem naming `parameter` whose message says `message`."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"status", "error", "message", "errors"}
    assert body["status"] == 422 and body["error"] == "invalid_parameter"
    problem = next(p for p in body["errors"] if p["parameter"] == parameter)
    assert message in problem["message"]
    assert body["message"].startswith(f"{body['errors'][0]['parameter']}: ")


@contextmanager
def serving(settings: Settings, store: PriceStore, now: datetime) -> Iterator[TestClient]:
    """A test client over `store` whose clock reads `now` (naive UTC)."""
    app = create_app(settings, store=store, schedule=False)
    with TestClient(app) as client:
        app.state.gpuprice.clock = lambda: utc_naive(now)
        yield client


@dataclass
class LiveRound:
    """A live collect whose every base URL pointed at a local server holding the recorded answers."""

    store: PriceStore
    summaries: list[RunSummary]
    requests: list[tuple[str, str, dict[str, str], bytes]]  # method, path, headers, body

    def __iter__(self) -> Iterator[object]:  # store, summaries, requests = collect_through_local_server(...)
        return iter((self.store, self.summaries, self.requests))


def collect_through_local_server(settings: Settings, names: list[str], **overrides: object) -> LiveRound:
    """Collect `names` (FX first) live, through GPUPRICE_<PROVIDER>_BASE_URL, from a local replay server."""
    every = [*names, fx_ecb.NAME]
    with serve_replay([Replay.load(FIXTURES, name) for name in every]) as server:
        live = settings.model_copy(update={"base_urls": {name: server.url for name in every}, **overrides})
        store = PriceStore(live)
        summaries = asyncio.run(collect(store, live, list(names)))
        requests = list(server.requests)
    return LiveRound(store, summaries, requests)


def collect_offline_beside(settings: Settings, names: list[str], read: Callable[[PriceStore], T]) -> T:
    """Collect `names` offline (the recorded answers replayed in-process) into a second database and
    return `read` of it: what a live round through a local server must equal."""
    offline = settings.model_copy(update={"offline": True, "db": settings.db.with_name("offline.duckdb")})
    store = PriceStore(offline)
    try:
        asyncio.run(collect(store, offline, list(names)))
        return read(store)
    finally:
        store.close()


@contextmanager
def held_by_another_process(db: Path) -> Iterator[int]:
    """Another process holds `db` open (DuckDB: one writing process) inside the block; yields its pid."""
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(db)!r}); "
         "print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        yield holder.pid
    finally:
        holder.communicate("", timeout=10)


@contextmanager
def uvicorn_serving(app: FastAPI) -> Iterator[str]:
    """`app` behind uvicorn (one worker) on a free loopback port, in a thread; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def written_query(rng: random.Random, names: list[str], values: dict[str, list[str]], safe: str) -> bytes:
    """A query string giving each of `names` one of its `values`, written as clients write it: mostly
    percent-encoded (but for `safe`), now and then with `+` for spaces."""
    parts = []
    for name in names:
        value = rng.choice(values[name])
        written = quote(value, safe=safe) if rng.random() < 0.7 else value.replace(" ", "+")
        parts.append(f"{name}={written}")
    return "&".join(parts).encode()


def read_both_ways(
    queries: Iterable[bytes], fast_reader: Callable[[bytes], Any], model: type[BaseModel], settings: Settings
) -> Iterator[tuple[bytes, Any, Any]]:
    """Each query string read by `fast_reader` and by the parameter `model` (as the route reads it),
    for the tests holding the two readings equal: a query the model refuses must not be read fast
    (the model must say why, in its 422); yields (query, fast, model's) where both read it."""
    for query in queries:
        fast = fast_reader(query)
        try:
            with limits_of(settings):
                read = model.model_validate(as_routed(query))
        except ValidationError:
            assert fast is None, query
            continue
        if fast is not None:
            yield query, fast, read
