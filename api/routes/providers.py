from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from api.answers import health_answer, health_body, providers_answer
from api.routes.deps import State, json_response

router = APIRouter(tags=["providers"])


@router.get("/providers")
def providers(state: State) -> Response:
    """Each provider's last run: status, error, offers, last success and whether its offers are stale."""
    return json_response(providers_answer(state))


@router.get("/healthz")
async def healthz(state: State) -> Response:
    """Liveness: the database answers; how many current offers there are; `degraded` with the reasons
    in `problems` when the last write, export or publish failed, or (a replica) when its snapshot is
    older than its staleness setting (`snapshot` says which one it serves, and how old). Answered from memory on
    the event loop while the current offers are loaded (the database is read, in a worker thread,
    only when a run has landed since), so it stays quick whatever else the server is doing."""
    current = state.fresh_current()
    exports_known, export = state.store.last_export_in_memory()
    publish_known, published = state.store.last_publish_in_memory()
    if not state.settings.publish_targets:
        publish_known, published = True, None
    if current is not None and exports_known and publish_known:
        return json_response(health_body(state, current, export, published))
    return json_response(await run_in_threadpool(health_answer, state))
