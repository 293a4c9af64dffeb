from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.answers import cheapest_answer
from api.filters import CheapestParams
from api.routes.deps import State, json_response

router = APIRouter(tags=["cheapest"])


@router.get("/cheapest")
async def cheapest(request: Request, params: Annotated[CheapestParams, Query()], state: State) -> Response:
    """Ranked cheapest viable options for `mem` GB of GPU memory over `hours` of wall-clock time.

    An option is viable when `gpu_count × gpu_memory_gb ≥ mem` (per GPU with `single_gpu`). Each
    shows `billed_hours` and `total_cny` (billing rule per provider; monthly = ceil(hours/730)
    months; reserved = the whole term), sorted by total, then ¥/GB·h. Stale and sold-out offers
    are left out unless `include_stale` / `include_unavailable`; `interruptible=false` drops spot."""
    body = cheapest_answer(state, params)
    state.remember_raw(request.url.path, request.scope["query_string"], body)
    return json_response(body)
