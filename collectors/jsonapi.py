"""JSON APIs' own words when they refuse a request.

`Http` turns an HTTP error into a `FetchError` carrying the status and the error body (and a snippet
of it in the message). Providers put the useful part in a few string fields (`code`, `message`,
`suggestion`), nested differently (`{"error": {...}}`, `{"errors": [{...}]}`, flat); `error_detail`
finds them wherever they sit (regexes, which also work on a cut snippet), and `fetch_explained`
re-raises the error with those words first and, for 401/403, the setting the user should check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from collectors.base import RawResponse
from collectors.errors import FetchError
from collectors.http import Http

DEFAULT_KEYS = ("code", "message")
_STATUS = re.compile(r"^HTTP (\d{3}) from ")


def status_of(exc: FetchError) -> int | None:
    """The HTTP status an `Http` error reports, or None (timeouts, connect errors)."""
    if exc.status is not None:
        return exc.status
    match = _STATUS.match(str(exc))
    return int(match.group(1)) if match else None


def error_detail(text: str, keys: Sequence[str] = DEFAULT_KEYS) -> str | None:
    """`"code": "x"`, `"message": "y"` → "x: y" (the keys found, in the order given), or None."""
    found = []
    for key in keys:
        match = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if match:
            found.append(match.group(1).replace('\\"', '"'))
    return ": ".join(found) or None


async def fetch_explained(
    http: Http,
    method: str,
    url: str,
    *,
    source: str,
    auth_hint: str | None = None,
    keys: Sequence[str] = DEFAULT_KEYS,
    label: str = "",
    **kwargs: Any,
) -> RawResponse:
    """`http.fetch`, with the API's own error words (and what to check on 401/403) in the error."""
    try:
        return await http.fetch(method, url, label=label, **kwargs)
    except FetchError as exc:
        detail = error_detail(exc.body or str(exc), keys)
        status = status_of(exc)
        if detail is None and status not in (401, 403):
            raise
        parts = [f"{source} refused {label or url} (HTTP {status})"]
        if detail:
            parts.append(detail)
        if status in (401, 403) and auth_hint:
            parts.append(auth_hint)
        raise FetchError("; ".join(parts) + f" [{exc}]") from exc
