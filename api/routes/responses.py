"""What each route may answer, for the OpenAPI document: content types, error statuses, headers.

Pinned by the schemathesis run in tests/fault_matrix/test_api.py: an answer whose status or content
type is not declared here fails it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class Problem(BaseModel):
    parameter: str | None
    message: str
    value: str | None


class ErrorBody(BaseModel):
    """api/errors.py: one shape for every error."""

    status: int
    error: str
    message: str
    errors: list[Problem]


_WHY = {
    404: "not found: the path names nothing gpuprice has (the message says why and what exists)",
    422: "bad input: the body names each parameter and what was wrong with it",
    503: "over budget: the answer would take longer than GPUPRICE_API_BUDGET_S; narrow the question or retry",
}
TEXT = {"schema": {"type": "string"}}
BINARY = {"schema": {"type": "string", "format": "binary"}}
RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before asking again", "schema": {"type": "integer"}}}
FILE_HEADERS = {
    "ETag": {"description": "a hash of the exact bytes; send it back as If-None-Match", "schema": {"type": "string"}},
    "Last-Modified": {"description": "when the last run that changed the data landed", "schema": {"type": "string"}},
    "Content-Disposition": {"description": "the file's name", "schema": {"type": "string"}},
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    declared: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        declared[status] = {"model": ErrorBody, "description": _WHY[status]}
        if status == 503:
            declared[status]["headers"] = RETRY_AFTER
    return declared


def ok(**content: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    """200 in these content types (media type → its schema)."""
    return {200: {"description": "the answer", "content": content}}


def file(**content: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    return {
        200: {"description": "the file", "content": content, "headers": FILE_HEADERS},
        304: {"description": "not modified: the If-None-Match sent holds this file's ETag", "headers": FILE_HEADERS},
    }
