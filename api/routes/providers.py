from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from api.answers import health_answer, providers_answer
from api.routes.deps import State, json_response

router = APIRouter(tags=["providers"])


@router.get("/providers")
async def providers(state: State) -> Response:
    """Each provider's last run: status, error, offers, last success and whether its offers are stale."""
    return json_response(providers_answer(state))


@router.get("/healthz")
async def healthz(state: State) -> Response:
    """Liveness: the database answers; how many current offers there are."""
    return json_response(health_answer(state))
