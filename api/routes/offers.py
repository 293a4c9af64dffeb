from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.answers import offers_answer
from api.history import TRIED_AT_ONCE, history_answer, history_answer_at_once
from api.json_encoding import accept_encoding_of, encoded_json
from api.query import HistoryParams, OffersParams
from api.routes.deps import State, encoded_json_response, json_response, off_the_loop
from api.routes.responses import errors

router = APIRouter(tags=["offers"])


@router.get("/offers", responses=errors(422, 503))
async def offers(request: Request, params: Annotated[OffersParams, Query()], state: State) -> Response:
    """Current offers (the latest good observation of each), filterable like `/cheapest` and
    sortable (`sort`, `desc`), with every normalized figure and the FX rate used. With
    `date=YYYY-MM-DD`: the market at the end of that UTC day (offers withdrawn by then left out,
    staleness as of then)."""
    body = await off_the_loop(state, lambda: offers_answer(state, params), heavy=bool(params.date))
    state.remember_raw(request.url.path, request.scope["query_string"], body)
    return json_response(body)


@router.get("/offers/history", responses=errors(422, 503))
async def offers_history(request: Request, params: Annotated[HistoryParams, Query()], state: State) -> Response:
    """Observations over time, one series per offer (provider, region, sku, pricing), each point
    with `observed_at`, the native `price`, `cny_per_hour` and `cny_per_gb_hour`. Filters as
    `/offers` plus `sku`; `since`/`until` are ISO dates or date-times (UTC unless an offset is
    given; a bare `until` date includes that whole day; default: the last 30 days). Series are
    paged with `limit`/`offset`."""
    accept_encoding = accept_encoding_of(request.scope["headers"])
    tried = TRIED_AT_ONCE in request.scope  # by api.front, which answers what is at hand itself
    at_once = None if tried else history_answer_at_once(state, params, accept_encoding)  # small, cached records
    if at_once is not None:
        return encoded_json_response(at_once)
    encoded = await off_the_loop(
        state, lambda: encoded_json([history_answer(state, params)], accept_encoding), heavy=True
    )
    return encoded_json_response(encoded)
