from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.answers import cheapest_answer
from api.query import CheapestParams
from api.routes.deps import State, json_response, off_the_loop
from api.routes.responses import errors

router = APIRouter(tags=["cheapest"])


@router.get("/cheapest", responses=errors(422))
async def cheapest(request: Request, params: Annotated[CheapestParams, Query()], state: State) -> Response:
    """Ranked cheapest viable options for `mem` GB of GPU memory over `hours` of wall-clock time, or
    for a job described by the estimator's inputs (`model` or `params`, `workload`, … as `/estimate`).

    With `mem`, an option is viable when `gpu_count × gpu_memory_gb ≥ mem` (per GPU with `single_gpu`).
    With estimator inputs, each option is re-estimated for its own GPU count and is viable when the
    per-GPU need (the band's high end) fits the usable part of each card (`GPUPRICE_GPU_MEMORY_HEADROOM`,
    default 90%); the answer has the estimate, and per option `per_gpu_need_gb` against `usable_gb`.
    Inference options get an estimated `tokens_per_s` and `cny_per_mtoken`; `rank_by=per_mtoken`
    ranks by the latter. Each
    shows `billed_hours` and `total_cny` (billing rule per provider; monthly = ceil(hours/730)
    months; reserved = the whole term), sorted by total, then ¥/GB·h. Stale and sold-out offers
    are left out unless `include_stale` / `include_unavailable`; `interruptible=false` drops spot."""
    if state.answers_from_memory():  # a few array operations (api.cheapest_fast): cheaper than a thread hop
        body = cheapest_answer(state, params)
    else:  # the offers must be read from the database first, or their columns built: not on the event loop
        body = await off_the_loop(state, lambda: cheapest_answer(state, params), heavy=False)
    state.remember_raw(request.url.path, request.scope["query_string"], body)
    return json_response(body)
