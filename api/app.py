"""The FastAPI application: read-only (GET, and HEAD wherever GET), one process holding the only
DuckDB connection, with the collection scheduler running in its lifespan.

The event loop only routes: handlers that read the database or files are plain `def` (FastAPI runs
them in its worker threads) or hand heavy work to `AppState.heavy` (api.budget); what runs on the
loop itself reads memory only (AnswerCache, the index)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from apscheduler.triggers.cron import CronTrigger
from fastapi import FastAPI

from api import docs
from api.answer_cache import AnswerCache
from api.digests import run_compaction_job, run_digest_job
from api.errors import install_error_handlers
from api.front import GpupriceAPI
from api.head import HeadAsGet
from api.limits import LimitsFromSettings, limits_of
from api.metrics import install_metrics
from api.replica import Replica
from api.routes import cheapest, digest, estimate, export, offers, pages, providers
from api.state import AppState
from api.web.warm import keep_warm
from collectors.publishing import publisher_for
from collectors.schedule import ExtraJob, build_scheduler
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore
from pricedb.version import VERSION

log = get_logger("gpuprice.api")

# How long a thread may hold the interpreter while another waits for it (Python's default: 5 ms).
# Heavy answers run Python in worker threads; at 1 ms the event loop gets the interpreter back
# quickly enough that /healthz stays well under 100 ms while they run (benchmarks/api_under_load.py).
SWITCH_INTERVAL_S = 0.001
API_DESCRIPTION = (
    "Read-only: every operation is a GET, and answers HEAD too (the same status and headers, no body). "
    "Bad input is a 4xx JSON naming the parameter; a heavy answer that outruns its budget "
    "(`GPUPRICE_API_BUDGET_S`) is a 503 with `Retry-After`."
)


def digest_jobs(store: PriceStore, settings: Settings) -> list[ExtraJob]:
    """The daily digest at GPUPRICE_DIGEST_TIME in GPUPRICE_DIGEST_TIME_ZONE (default 09:00 Asia/Shanghai),
    then the history laid out by offer again (pricedb.history_layout)."""
    hour, minute = (int(part) for part in settings.digest_time.split(":"))
    trigger = CronTrigger(hour=hour, minute=minute, timezone=settings.digest_zone)

    async def digest_job() -> None:  # a coroutine function, so APScheduler awaits it on the event loop
        await run_digest_job(store, settings)
        await run_compaction_job(store, settings)

    return [("digest", digest_job, trigger)]


def create_app(
    settings: Settings | None = None,
    store: PriceStore | None = None,
    schedule: bool = True,
    replica: Replica | None = None,
    warm: bool | None = None,
) -> FastAPI:
    """The app. With `store` given (tests), it is used as is and not closed; with `schedule`, the
    collectors run at start-up and then on their intervals. With `replica` (serve --replica-of), the
    store is the replica's copy of a published snapshot, kept up to date by polling its source, and
    nothing is collected; the answers are the same. With `warm` (by default when data lands while
    serving: scheduled or a replica; `gpuprice serve` always), the market page is written ahead
    at start and whenever the current offers change (api.web.warm)."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_store = store is None
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL_S))
        price_store = replica.loader.store if replica is not None else store or PriceStore(settings)
        app.state.gpuprice = AppState(price_store, settings, replica=replica)
        background: list[asyncio.Task[object]] = []
        scheduler = None
        if replica is not None:
            background.append(asyncio.create_task(replica.poll()))
            log.info("replica of %s, checking every %g s", replica.where, settings.replica_poll_s)
        elif schedule:
            scheduler = build_scheduler(price_store, settings, digest_jobs(price_store, settings))
            scheduler.start()
            log.info("scheduler started with %d jobs", len(scheduler.get_jobs()))
        warming = warm if warm is not None else scheduler is not None or replica is not None  # data lands while serving
        if warming:
            background.append(asyncio.create_task(keep_warm(app.state.gpuprice)))
        publisher = publisher_for(price_store, settings) if replica is None else None
        if publisher is not None:  # what is stored may be newer than what was published
            background.append(asyncio.create_task(publisher.now()))
        try:
            yield
        finally:
            for task in background:
                task.cancel()
            if scheduler is not None:
                scheduler.shutdown(wait=False)
            if own_store:
                price_store.close()
            sys.setswitchinterval(switch_interval)

    app = GpupriceAPI(
        title="gpuprice",
        version=VERSION,
        summary="What GPU rental really costs: A100 quotes from many clouds in CNY per GB of GPU memory per hour.",
        description=API_DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # api.docs serves the page with its assets, no CDN
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
    )
    install_error_handlers(app)
    app.add_middleware(LimitsFromSettings, settings=settings)
    app.add_middleware(AnswerCache, owner=app)
    install_metrics(app)  # /metrics, and the request timer outside the cache (a cached answer is timed too)
    app.add_middleware(HeadAsGet)  # outermost: a HEAD is routed (and served from cache) as its GET
    for module in (cheapest, estimate, offers, providers, digest, export, docs, pages):
        app.include_router(module.router)
    document = app.openapi

    def openapi() -> dict[str, Any]:  # the limits it states are this app's settings
        with limits_of(settings):
            return document()

    app.openapi = openapi  # type: ignore[method-assign]

    return app
