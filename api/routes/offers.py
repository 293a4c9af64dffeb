from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from api.answers import offers_answer
from api.filters import OffersParams
from api.routes.deps import State, json_response

router = APIRouter(tags=["offers"])


@router.get("/offers")
async def offers(params: Annotated[OffersParams, Query()], state: State) -> Response:
    """Current offers (the latest good observation of each), filterable like `/cheapest` and
    sortable (`sort`, `desc`), with every normalized figure and the FX rate used."""
    return json_response(offers_answer(state, params))
