"""Reading the Cloud Billing Catalog: the `nextPageToken` walk over the Compute Engine SKUs, with
the API key kept out of everything that is stored, logged or raised.

The key travels as the `key` query parameter (the API's documented way for API keys). The URL a
page is recorded under (`RawResponse.url`, hence every quote's `source_url`) is built without it.
Errors and log lines pass the one redaction point (pricedb.redact), which knows the key (a setting)
and masks any `key=` query value besides.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from urllib.parse import urlencode

import httpx
from pydantic import SecretStr

from collectors.base import RawResponse
from collectors.errors import CollectorError, FetchError, ParseError
from collectors.http import Http
from pricedb import redact

SERVICE_ID = "6F81-5844-456A"  # Compute Engine
SKUS_URL = f"https://cloudbilling.googleapis.com/v1/services/{SERVICE_ID}/skus"
PAGE_SIZE = 5000  # the API's maximum
MAX_PAGES = 100  # Compute Engine has tens of thousands of SKUs: about ten pages of 5000
KEY_SETTING = "GPUPRICE_GCP_API_KEY"


def page_params(token: str | None) -> dict[str, str]:
    return {"pageSize": str(PAGE_SIZE)} | ({"pageToken": token} if token else {})


def page_url(token: str | None) -> str:
    """A page's URL as recorded (and replayed): without the key."""
    return f"{SKUS_URL}?{urlencode(page_params(token))}"


_ERROR_PARTS = {name: re.compile(rf'"{name}"\s*:\s*"?((?:[^"\\]|\\.)*)') for name in ("code", "status", "message")}


def google_error(text: str) -> str | None:
    """'CODE STATUS: message' from a Google error body (`{"error": {"code", "message", "status"}}`),
    read from a whole body or from the shortened copy of one that an HTTP error message carries."""
    found = re.search(r'\{\s*"error"', text)
    if found is None:
        return None
    start = found.start()
    try:
        error = json.loads(text[start:]).get("error")
    except ValueError:  # cut short: take what is there, in the API's own field order
        error = {name: m.group(1).rstrip('",} …') for name, m in
                 ((n, p.search(text, start)) for n, p in _ERROR_PARTS.items()) if m}  # fmt: skip
    if not isinstance(error, dict) or not error.get("message"):
        return None
    head = " ".join(str(error[k]) for k in ("code", "status") if error.get(k))
    return f"{head}: {error['message']}".strip(": ")


async def _get(http: Http, token: str | None, key: str | None, label: str) -> RawResponse:
    params = page_params(token) | ({"key": key} if key else {})
    try:
        raw = await http.get(SKUS_URL, label=label, params=params)
        return replace(raw, url=page_url(token))  # the URL as recorded: without the key
    except (CollectorError, httpx.HTTPError) as exc:
        message = redact.redact(str(exc))  # the key is a setting, so `redact` knows it
        said = google_error(getattr(exc, "body", None) or message)
        if said:
            message = f"Cloud Billing Catalog API refused {label} ({said}); check {KEY_SETTING}. {message}"
        kind = type(exc) if isinstance(exc, CollectorError) else FetchError
        # `from None`: the original exception's message carries the key in its URL.
        raise kind(message) from None


async def walk(http: Http, api_key: SecretStr | None, max_pages: int = MAX_PAGES) -> list[RawResponse]:
    """Every page of the Compute Engine SKU list. `api_key` None: no key is sent (offline replay)."""
    key = api_key.get_secret_value() if api_key is not None else None
    pages: list[RawResponse] = []
    seen: set[str] = set()
    token: str | None = None
    while True:
        if len(pages) >= max_pages:
            raise FetchError(f"the SKU walk passed {max_pages} pages without an end (last pageToken {token!r})")
        raw = await _get(http, token, key, f"page {len(pages) + 1}")
        pages.append(raw)
        body = raw.json_object()
        if "error" in body:
            raise FetchError(f"Cloud Billing Catalog API error on page {len(pages)}: {google_error(raw.text())}")
        token = body.get("nextPageToken") or None
        if token is None:
            return pages
        if not isinstance(token, str):
            raise ParseError(f"{raw.url}: nextPageToken is {type(token).__name__}, not a string")
        if token in seen:
            raise FetchError(f"pagination loop: page {len(pages)} gives pageToken {token!r} again")
        seen.add(token)
