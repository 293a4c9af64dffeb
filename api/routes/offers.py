from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.answers import offers_answer
from api.filters import OffersParams
from api.routes.deps import State, json_response

router = APIRouter(tags=["offers"])


@router.get("/offers")
async def offers(request: Request, params: Annotated[OffersParams, Query()], state: State) -> Response:
    """Current offers (the latest good observation of each), filterable like `/cheapest` and
    sortable (`sort`, `desc`), with every normalized figure and the FX rate used."""
    body = offers_answer(state, params)
    state.remember_raw(request.url.path, request.scope["query_string"], body)
    return json_response(body)
