"""One error shape for every 4xx answer (pinned by tests/helpers.py `assert_422_naming`):

    {"status": 422, "error": "invalid_parameter", "message": "mem: 'abc' is not a memory size; …",
     "errors": [{"parameter": "mem", "message": "'abc' is not a memory size; …", "value": "abc"}]}

`errors` lists every problem found, each naming its parameter; `message` repeats the first one so
a person reading a terminal sees it at once. Bad input never becomes a 500. What the client sent is
echoed as a short excerpt only (`excerpt`), so a 100 KB parameter gets a small answer. A heavy
answer over its budget is a 503 of the same shape, with `Retry-After`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from api.budget import BudgetExceeded

if TYPE_CHECKING:  # FastAPI is imported by the app that installs the handlers, not by the CLI's answers
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

_ERROR_NAMES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    422: "invalid_parameter",
    503: "over_budget",
}
EXCERPT_CHARS = 80  # of a value the client sent
MESSAGE_CHARS = 400  # of a message, whatever it quotes
_QUOTED = re.compile(f"'[^']{{{EXCERPT_CHARS},}}'|\"[^\"]{{{EXCERPT_CHARS},}}\"")


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> Any:
    """A long text cut to its first `limit` characters and a count of the rest."""
    if not isinstance(value, str) or len(value) <= limit:
        return value
    return f"{value[:limit]}… ({len(value) - limit:,} more characters)"


def short_message(message: str) -> str:
    """A message with every long quoted input cut to an excerpt, and at most MESSAGE_CHARS long."""
    message = _QUOTED.sub(lambda m: m[0][0] + excerpt(m[0][1:-1]) + m[0][-1], message)
    return excerpt(message, MESSAGE_CHARS)


class ApiError(Exception):
    def __init__(self, status: int, message: str, parameter: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.status, self.message, self.parameter, self.value = status, message, parameter, value


def error_body(status: int, problems: list[dict[str, Any]], message: str | None = None) -> dict[str, Any]:
    problems = [
        {
            "parameter": excerpt(p.get("parameter")),
            "message": short_message(str(p.get("message", ""))),
            "value": excerpt(p.get("value")),
        }
        for p in problems
    ]
    first = problems[0] if problems else {}
    if message is None:
        message = f"{first['parameter']}: {first['message']}" if first.get("parameter") else first.get("message", "")
    return {
        "status": status,
        "error": _ERROR_NAMES.get(status, "error"),
        "message": short_message(message),
        "errors": problems,
    }


def _clean(message: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


def validation_problems(exc: RequestValidationError | ValidationError) -> list[dict[str, Any]]:
    """Each problem of a request's parameters (as FastAPI or a parameter model found them), naming its parameter."""
    problems = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ()) if part not in ("query", "path", "body")]
        parameter = location[-1] if location else None
        if error.get("type") == "extra_forbidden":
            message = "unknown parameter"
        else:
            message = _clean(str(error.get("msg", "invalid value")))
        value = error.get("input")
        problems.append(
            {"parameter": parameter, "message": message, "value": value if isinstance(value, str) else None}
        )
    return problems


def install_error_handlers(app: FastAPI) -> None:
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(error_body(422, validation_problems(exc)), status_code=422)

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        problem = {"parameter": exc.parameter, "message": exc.message, "value": exc.value}
        return JSONResponse(error_body(exc.status, [problem]), status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 405:
            message = f"{request.method} is not allowed: gpuprice's API is read-only (GET only)"
        elif exc.status_code == 404:
            message = f"no such endpoint: {excerpt(request.url.path)}"
        else:
            message = str(exc.detail)
        return JSONResponse(
            error_body(exc.status_code, [{"parameter": None, "message": message, "value": None}], message),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(BudgetExceeded)
    async def _over_budget(request: Request, exc: BudgetExceeded) -> JSONResponse:
        problem = {"parameter": None, "message": exc.message, "value": None}
        return JSONResponse(
            error_body(503, [problem], exc.message),
            status_code=503,
            headers={"Retry-After": str(exc.retry_after_s)},
        )
