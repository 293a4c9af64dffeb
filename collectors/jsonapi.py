"""JSON APIs' own words when they refuse a request.

`Http` turns an HTTP error into a `FetchError` carrying the status and the (redacted) error body, with
the provider's words or a short excerpt in the message. Providers put the useful part in a few
string fields (`code`, `message`, `suggestion`), nested differently (`{"error": {...}}`,
`{"errors": [{...}]}`, flat); `error_detail` (collectors.error_words) finds them wherever they sit,
and `fetch_explained` re-raises the error with those words first and, for 401/403, the setting the
user should check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from collectors.base import RawResponse
from collectors.error_words import DEFAULT_KEYS, error_detail
from collectors.errors import FetchError
from collectors.http import Http

__all__ = ["DEFAULT_KEYS", "error_detail", "fetch_explained", "status_of"]

_STATUS = re.compile(r"^HTTP (\d{3}) from ")


def status_of(exc: FetchError) -> int | None:
    """The HTTP status an `Http` error reports, or None (timeouts, connect errors)."""
    if exc.status is not None:
        return exc.status
    match = _STATUS.match(str(exc))
    return int(match.group(1)) if match else None


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
        where = f"HTTP {status} from {exc.url}" if exc.url and detail else str(exc)
        raise FetchError("; ".join(parts) + f" [{where}]", status=status, body=exc.body, url=exc.url) from exc
