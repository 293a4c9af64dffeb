"""The pages (api/web): HTML for browsers at `/` (the market), `/job`, `/offer`, `/status` and
`/digests`, with their static assets. GET only (HEAD as everywhere), and kept out of the OpenAPI
document, which describes the JSON API.

`/` serves the market page to browsers (an `Accept` naming text/html) and the JSON index to API
clients, as it always did; `/index.json` and `/?format=json` are the index whatever is accepted."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from api.errors import ApiError
from api.routes.deps import State, json_response, off_the_loop
from api.state import AppState, dumps
from api.web import market as market_view
from api.web import pages
from api.web.html import Page, Rendered, assets, chosen_encoding, page_response
from api.web.offer_id import link_ids
from api.web.pages import Built
from api.web.params import problem_of
from pricedb.version import VERSION

router = APIRouter(include_in_schema=False)

INDEX = dumps(
    {
        "service": "gpuprice",
        "version": VERSION,
        "endpoints": [
            "/cheapest?mem=60GB&hours=200",
            "/cheapest?model=llama-2-70b&workload=inference&precision=int4&batch=16&hours=200",
            "/estimate?model=qwen2.5-14b&workload=lora&context=4096",
            "/offers",
            "/offers/history",
            "/digest",
            "/digest.atom",
            "/export?format=csv",
            "/providers",
            "/healthz",
            "/metrics",
            "/docs",
        ],
        "pages": ["/", "/job", "/offer", "/status", "/digests"],
    }
)


def wants_html(request: Request) -> bool:
    """A browser asks for text/html; API clients (curl's */*, application/json) get JSON."""
    if request.query_params.get("format", "").lower() == "json":
        return False
    for part in request.headers.get("accept", "").split(","):
        media, _, params = part.partition(";")
        if media.strip().lower() in ("text/html", "application/xhtml+xml"):
            return params.replace(" ", "").rstrip("0").rstrip(".") not in ("q=", "q=0")
    return False


async def serve(
    request: Request,
    state: AppState,
    build: Callable[[Page], Built],
    heavy: bool = False,
    cache: bool = False,
    headers: dict[str, str] | None = None,
    media_type: str = "text/html; charset=utf-8",
) -> Response:
    """Build the page off the event loop (through the heavy gate when it reads the past), kept until
    the data changes when `cache`, with its bytes in the encoding the client takes (compressed there
    too, and kept with it); a parameter the answer refuses is the page again, with its message."""
    page = Page.of(request, offline=state.settings.offline)
    page.link_source = partial(link_ids, state)  # read off the event loop, by the first link written

    def work() -> Built:
        try:
            built = state.cached_value(page.cache_key, lambda _: build(page)) if cache else build(page)
        except ApiError as exc:
            built = pages.refused(page, problem_of(exc), exc.status)
        rendered = built[0]
        encoding = chosen_encoding(request, len(rendered.body))
        if not rendered.has(encoding):  # compressed here, off the event loop, and kept with the page
            rendered.encoded_as(encoding)
            if cache:
                state.refit(page.cache_key, built)
        return built

    rendered, status = await off_the_loop(state, work, heavy=heavy)
    return page_response(request, rendered, status, media_type, headers if status == 200 else None)


@router.get("/")
async def index(request: Request, state: State) -> Response:
    if not wants_html(request):
        index = json_response(INDEX)
        index.headers["Vary"] = "Accept"  # the same URL is a page for browsers: caches must tell them apart
        return index
    return await serve(request, state, lambda page: pages.market_page(state, page), **_market_options(request))


@router.get("/index.json")
def index_json() -> Response:
    return json_response(INDEX)


def _market_options(request: Request) -> dict[str, Any]:
    return {"heavy": bool(request.query_params.get("date")), "cache": True}


def _market_file(state: AppState, page: Page, markdown: bool) -> Built:
    found = market_view.market(state, page)
    if found.problems:
        return pages.refused(page, found.problems, 422)
    text = found.markdown() if markdown else found.csv()
    return Rendered.of(text), 200


async def _serve_market_file(request: Request, state: State, markdown: bool) -> Response:
    kind, suffix = ("markdown", "md") if markdown else ("csv", "csv")
    return await serve(
        request,
        state,
        lambda page: _market_file(state, page, markdown=markdown),
        media_type=f"text/{kind}; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="gpuprice-market.{suffix}"'},
        **_market_options(request),
    )


@router.get("/market.csv")
async def market_csv(request: Request, state: State) -> Response:
    """The market page's table as shown (columns, order, currency, language), as CSV."""
    return await _serve_market_file(request, state, markdown=False)


@router.get("/market.md")
async def market_markdown(request: Request, state: State) -> Response:
    """The same as Markdown."""
    return await _serve_market_file(request, state, markdown=True)


@router.get("/job")
async def job(request: Request, state: State) -> Response:
    """`/cheapest` as a form, answered by cheapest_answer."""
    parameters = request.app.openapi()["paths"]["/cheapest"]["get"]["parameters"]
    return await serve(request, state, lambda page: pages.job_page(state, page, parameters))


@router.get("/offer")
async def offer(request: Request, state: State) -> Response:
    """One offer: its history (history_answer) as charts, its current quote, FX and run record."""
    return await serve(request, state, lambda page: pages.offer_page(state, page), heavy=True)


@router.get("/status")
async def status(request: Request, state: State) -> Response:
    """Each provider's last runs, errors, staleness and schedule (providers_answer)."""
    return await serve(request, state, lambda page: pages.status_page(state, page))


@router.get("/digests")
async def digests(request: Request, state: State) -> Response:
    """A day's digest (digest_answer), with the days around it and the Atom feed."""
    return await serve(request, state, lambda page: pages.digests_page(state, page), heavy=True)


@router.get("/static/{name}")
def static(name: str) -> Response:
    asset = assets().get(name)
    if asset is None:
        raise ApiError(404, f"no such page asset: {name}", "name", name)
    return Response(
        asset.body,
        media_type=asset.media_type,
        headers={"Cache-Control": "public, max-age=86400", "ETag": f'"{asset.etag}"'},
    )
