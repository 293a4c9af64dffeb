"""`/export` and the foreign catalogs: files with a filename and validators (ETag, Last-Modified);
a client that sends the ETag it has gets 304 Not Modified. HEAD is answered too (still read-only),
so a client can check the validators without downloading."""

from __future__ import annotations

from datetime import UTC
from email.utils import format_datetime
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.exports import FileAnswer, export_answer, gpuhunt_answer, skypilot_answer
from api.filters import ExportParams, ForeignParams
from api.routes.deps import State

router = APIRouter(tags=["export"])


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag in tags


def file_response(request: Request, answer: FileAnswer) -> Response:
    headers = {
        "ETag": answer.etag,
        "Cache-Control": "no-cache",  # may be stored, but revalidated (cheap: 304 on a matching ETag)
        "Content-Disposition": f'attachment; filename="{answer.filename}"',
    }
    if answer.last_modified is not None:
        headers["Last-Modified"] = format_datetime(answer.last_modified.replace(tzinfo=UTC), usegmt=True)
    if answer.notes:
        headers["X-Gpuprice-Notes"] = "; ".join(answer.notes)
    if _matches(request.headers.get("if-none-match"), answer.etag):
        return Response(status_code=304, headers=headers)
    return Response(content=answer.body, media_type=answer.media_type, headers=headers)


@router.api_route("/export", methods=["GET", "HEAD"])
async def export(request: Request, params: Annotated[ExportParams, Query()], state: State) -> Response:
    """The price sheet (CONTRACT §6 columns, in order) as `format=csv|json|ndjson|parquet`: current
    offers, or with `date=YYYY-MM-DD` the market at the end of that UTC day; filterable like
    `/offers`. The CSV is spreadsheet-safe (one header row, ISO dates, dot decimals), so Google
    Sheets' `IMPORTDATA(url)` reads it as is."""
    return file_response(request, export_answer(state, params))


@router.api_route("/export/skypilot/{cloud}/vms.csv", methods=["GET", "HEAD"])
async def skypilot(request: Request, cloud: str, params: Annotated[ForeignParams, Query()], state: State) -> Response:
    """SkyPilot's catalog `vms.csv` for `cloud` (aws, azure, lambda, verda, each with its own column
    set): USD per instance-hour, on-demand `Price` and `SpotPrice` in one row per instance type and
    region, `GpuInfo` as SkyPilot reads it. gcp, runpod, vast and oci answer 404 with the reason.
    Stale and sold-out offers are left out unless `include_stale` / `include_unavailable`."""
    return file_response(request, skypilot_answer(state, cloud, params))


@router.api_route("/export/gpuhunt/{provider}.csv", methods=["GET", "HEAD"])
async def gpuhunt(request: Request, provider: str, params: Annotated[ForeignParams, Query()], state: State) -> Response:
    """gpuhunt's catalog CSV for one provider (its `CATALOG_V2_FIELDS`): USD per hour, `spot` as
    True/False, GPU memory in GB per GPU, host vCPUs and RAM. `provider` is ours or gpuhunt's name
    (`lambda` or `lambdalabs`, `vast` or `vastai`, `verda` or `datacrunch`); the file is named as
    gpuhunt looks for it, so `GPUHUNT_CATALOG_DIR` pointed at the folder holding it reads it."""
    return file_response(request, gpuhunt_answer(state, provider, params))
