"""`/docs` without the internet: Swagger UI's script, stylesheet and icon come from gpuprice itself.

FastAPI's default page loads them from a CDN, so on a server without internet access (or behind a
proxy that blocks it) the page stays blank. The files ship in the `swagger-ui-bundle-v2` package
(Swagger UI's own `dist` build, Apache-2.0); only the three the page needs are served, from
`/docs/assets/`. ReDoc, which would need its own CDN script, is not offered."""

from __future__ import annotations

from functools import cache

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from swagger_ui_bundle import swagger_ui_path

from api.errors import ApiError

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
ASSETS_PATH = "/docs/assets"

router = APIRouter(include_in_schema=False)


@cache  # bounded: `name` is one of ASSETS (3 files), checked before
def _asset(name: str) -> bytes:
    return (swagger_ui_path / name).read_bytes()


@router.get("/docs")
def docs(request: Request) -> HTMLResponse:
    app: FastAPI = request.app
    root = request.scope.get("root_path", "")
    return get_swagger_ui_html(
        openapi_url=f"{root}{app.openapi_url}",
        title=f"{app.title} — API",
        swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon-32x32.png",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
    )


@router.get(ASSETS_PATH + "/{name}")
def asset(name: str) -> Response:
    if name not in ASSETS:
        raise ApiError(404, f"no such documentation asset: {name}", "name", name)
    return Response(_asset(name), media_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})
