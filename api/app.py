"""The FastAPI application: read-only (GET only), one process holding the only DuckDB connection,
with the collection scheduler running in its lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.responses import Response

from api.answer_cache import AnswerCache
from api.errors import install_error_handlers
from api.routes import cheapest, estimate, offers, providers
from api.routes.deps import json_response
from api.state import AppState, dumps
from collectors.schedule import build_scheduler
from pricedb.settings import Settings
from pricedb.store import PriceStore

log = logging.getLogger("gpuprice.api")

VERSION = "0.1.0"


def create_app(settings: Settings | None = None, store: PriceStore | None = None, schedule: bool = True) -> FastAPI:
    """The app. With `store` given (tests), it is used as is and not closed; with `schedule`, the
    collectors run at start-up and then on their intervals."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own_store = store is None
        price_store = store or PriceStore(settings)
        app.state.gpuprice = AppState(price_store, settings)
        scheduler = build_scheduler(price_store, settings) if schedule else None
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
    for module in (cheapest, estimate, offers, providers):
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
                        "/providers",
                        "/healthz",
                        "/docs",
                    ],
                }
            )
        )

    return app
