"""Dependency aliases shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import Response

from api.state import AppState


def get_state(request: Request) -> AppState:
    return request.app.state.gpuprice


State = Annotated[AppState, Depends(get_state)]


def json_response(body: bytes) -> Response:
    return Response(content=body, media_type="application/json")
