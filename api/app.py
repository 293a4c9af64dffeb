"""The FastAPI application: read-only (GET only), one process holding the only DuckDB connection,
with the collection scheduler running in its lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from apscheduler.triggers.cron import CronTrigger
from fastapi import FastAPI
from fastapi.responses import Response

from api.answer_cache import AnswerCache
from api.digests import run_digest_job
from api.errors import install_error_handlers
from api.routes import cheapest, digest, estimate, export, offers, providers
from api.routes.deps import json_response
from api.state import AppState, dumps
from collectors.schedule import ExtraJob, build_scheduler
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore

log = get_logger("gpuprice.api")

VERSION = "0.1.0"


def digest_jobs(store: PriceStore, settings: Settings) -> list[ExtraJob]:
    """The daily digest at GPUPRICE_DIGEST_TIME in GPUPRICE_DIGEST_TIME_ZONE (default 09:00 Asia/Shanghai)."""
    hour, minute = (int(part) for part in settings.digest_time.split(":"))
    trigger = CronTrigger(hour=hour, minute=minute, timezone=settings.digest_zone)

    async def digest_job() -> None:  # a coroutine function, so APScheduler awaits it on the event loop
        await run_digest_job(store, settings)

    return [("digest", digest_job, trigger)]


def create_app(settings: Settings | None = None, store: PriceStore | None = None, schedule: bool = True) -> FastAPI:
    """The app. With `store` given (tests), it is used as is and not closed; with `schedule`, the
    collectors run at start-up and then on their intervals."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_store = store is None
        price_store = store or PriceStore(settings)
        app.state.gpuprice = AppState(price_store, settings)
        scheduler = build_scheduler(price_store, settings, digest_jobs(price_store, settings)) if schedule else None
        if scheduler is not None:
            scheduler.start()
            log.info("scheduler started with %d jobs", len(scheduler.get_jobs()))
        try:
            yield
        finally:
            if scheduler is not None:
                scheduler.shutdown(wait=False)
            if own_store:
                price_store.close()

    app = FastAPI(
        title="gpuprice",
        version=VERSION,
        summary="What GPU rental really costs: A100 quotes from many clouds in CNY per GB of GPU memory per hour.",
        lifespan=lifespan,
    )
    install_error_handlers(app)
    app.add_middleware(AnswerCache, owner=app)
    for module in (cheapest, estimate, offers, providers, digest, export):
        app.include_router(module.router)

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        return json_response(
            dumps(
                {
                    "service": "gpuprice",
                    "version": VERSION,
                    "endpoints": [
                        "/cheapest?mem=60GB&hours=200",
                        "/cheapest?model=llama-2-70b&workload=inference&precision=int4&batch=16&hours=200",
                        "/estimate?model=qwen2.5-14b&workload=lora&context=4096",
                        "/offers",
                        "/offers/history",
                        "/digest",
                        "/digest.atom",
                        "/export?format=csv",
                        "/providers",
                        "/healthz",
                        "/docs",
                    ],
                }
            )
        )

    return app
