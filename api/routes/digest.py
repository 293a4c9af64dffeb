"""`/digest` (JSON or Markdown) and `/digest.atom` (one entry per stored day)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.digests import atom_answer, digest_answer
from api.query import DigestParams
from api.routes.deps import State, off_the_loop
from api.routes.responses import TEXT, errors, ok

router = APIRouter(tags=["digest"])


@router.get("/digest", responses={**ok(**{"application/json": {}, "text/markdown": TEXT}), **errors(422, 503)})
async def digest(params: Annotated[DigestParams, Query()], state: State) -> Response:
    """What changed on `date` (default: yesterday in the digest's time zone) against the day before:
    `changes` (old → new, absolute and %, native and ¥/GB·h), `new`, `withdrawn`, `failed_providers`,
    `cheapest` per GPU memory size and pricing. A provider whose run failed never produces withdrawn
    offers. `format=md` gives the same as Markdown."""
    body, media_type = await off_the_loop(state, lambda: digest_answer(state, params), heavy=True)
    return Response(content=body, media_type=media_type)


@router.get("/digest.atom", response_class=Response, responses={**ok(**{"application/atom+xml": TEXT}), **errors(503)})
async def digest_atom(request: Request, state: State) -> Response:
    """The stored daily digests as an Atom feed (newest first), with stable tag: ids per day."""
    base = (state.settings.public_url or str(request.base_url)).rstrip("/")
    body = await off_the_loop(state, lambda: atom_answer(state, base), heavy=False)
    return Response(content=body, media_type="application/atom+xml; charset=utf-8")
