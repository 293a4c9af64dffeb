"""`/export` and the foreign catalogs: files with a filename and validators (ETag, Last-Modified);
a client that sends the ETag it has gets 304 Not Modified. HEAD is answered too (api.head, as for
every GET), so a client can check the validators without downloading."""

from __future__ import annotations

from datetime import UTC
from email.utils import format_datetime
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response

from api import query_schema as qs
from api.exports import FileAnswer, export_answer, gpuhunt_answer, skypilot_answer
from api.query import ExportParams, ForeignParams, known_providers
from api.routes.deps import State, off_the_loop
from api.routes.responses import BINARY, TEXT, errors, file
from pricedb.formats.gpuhunt import GPUHUNT_ALIASES
from pricedb.formats.skypilot import SKYPILOT_COLUMNS, SKYPILOT_UNSUPPORTED

router = APIRouter(tags=["export"])


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag in tags


SHEET_TYPES = {
    "text/csv": TEXT,
    "application/json": {},
    "application/x-ndjson": TEXT,
    "application/vnd.apache.parquet": BINARY,
}
IfNoneMatch = Annotated[
    str | None, Header(description="an ETag you have: the answer is 304 Not Modified if the file still has it")
]
SkypilotCloud = Annotated[
    str,
    qs.schema(
        {"type": "string", "enum": [*SKYPILOT_COLUMNS, *SKYPILOT_UNSUPPORTED]},
        f"any case; {', '.join(SKYPILOT_UNSUPPORTED)} answer 404 with the reason they cannot be written",
    ),
]
GpuhuntProvider = Annotated[
    str,
    qs.schema(
        {"type": "string", "enum": [*known_providers(), *GPUHUNT_ALIASES]},
        "a gpuprice provider or gpuhunt's name for it, any case",
    ),
]


def file_response(if_none_match: str | None, answer: FileAnswer) -> Response:
    headers = {
        "ETag": answer.etag,
        "Cache-Control": "no-cache",  # may be stored, but revalidated (cheap: 304 on a matching ETag)
        "Content-Disposition": f'attachment; filename="{answer.filename}"',
    }
    if answer.last_modified is not None:
        headers["Last-Modified"] = format_datetime(answer.last_modified.replace(tzinfo=UTC), usegmt=True)
    if answer.notes:
        headers["X-Gpuprice-Notes"] = "; ".join(answer.notes)
    if _matches(if_none_match, answer.etag):
        return Response(status_code=304, headers=headers)
    return Response(content=answer.body, media_type=answer.media_type, headers=headers)


@router.get(
    "/export",
    response_class=Response,
    responses={
        **file(**SHEET_TYPES),
        **errors(422, 503),
    },
)
async def export(params: Annotated[ExportParams, Query()], state: State, if_none_match: IfNoneMatch = None) -> Response:
    """The price sheet (CONTRACT §6 columns, in order) as `format=csv|json|ndjson|parquet`: current
    offers, or with `date=YYYY-MM-DD` the market at the end of that UTC day; filterable like
    `/offers`. The CSV is spreadsheet-safe (one header row, ISO dates, dot decimals), so Google
    Sheets' `IMPORTDATA(url)` reads it as is."""
    answer = await off_the_loop(state, lambda: export_answer(state, params), heavy=bool(params.date))
    return file_response(if_none_match, answer)


@router.get(
    "/export/skypilot/{cloud}/vms.csv",
    response_class=Response,
    responses={**file(**{"text/csv": TEXT}), **errors(404, 422, 503)},
)
async def skypilot(
    cloud: SkypilotCloud, params: Annotated[ForeignParams, Query()], state: State, if_none_match: IfNoneMatch = None
) -> Response:
    """SkyPilot's catalog `vms.csv` for `cloud` (aws, azure, lambda, verda, each with its own column
    set): USD per instance-hour, on-demand `Price` and `SpotPrice` in one row per instance type and
    region (aws: per availability zone ID, with disk and EFA columns), `GpuInfo` as SkyPilot reads it.
    gcp, runpod, vast and oci answer 404 with the reason, and so does aws until its zones were
    collected (with AWS credentials). Stale and sold-out offers are left out unless `include_stale` /
    `include_unavailable`."""
    answer = await off_the_loop(state, lambda: skypilot_answer(state, cloud, params), heavy=bool(params.date))
    return file_response(if_none_match, answer)


@router.get(
    "/export/gpuhunt/{provider}.csv",
    response_class=Response,
    responses={**file(**{"text/csv": TEXT}), **errors(404, 422, 503)},
)
async def gpuhunt(
    provider: GpuhuntProvider,
    params: Annotated[ForeignParams, Query()],
    state: State,
    if_none_match: IfNoneMatch = None,
) -> Response:
    """gpuhunt's catalog CSV for one provider (its `CATALOG_V2_FIELDS`): USD per hour, `spot` as
    True/False, GPU memory in GB per GPU, host vCPUs and RAM. `provider` is ours or gpuhunt's name
    (`lambda` or `lambdalabs`, `vast` or `vastai`, `verda` or `datacrunch`); the file is named as
    gpuhunt looks for it, so `GPUHUNT_CATALOG_DIR` pointed at the folder holding it reads it."""
    answer = await off_the_loop(state, lambda: gpuhunt_answer(state, provider, params), heavy=bool(params.date))
    return file_response(if_none_match, answer)
