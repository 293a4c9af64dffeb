"""Asking the Vast.ai offer search: the JSON filter of each search, the request, and the API's
error bodies turned into clear errors."""

from __future__ import annotations

import re
from typing import Any

from collectors.base import RawResponse
from collectors.errors import FetchError
from collectors.http import Http, json_bytes
from collectors.vast.offers import STANDARD_DISK_GB
from pricedb.models import Pricing

BUNDLES_URL = "https://console.vast.ai/api/v0/bundles/"
LIMIT = 1000  # offers per search; an answer this long may be cut short (noted)
# The search `type` per pricing, as the vastai CLI sends it ("interruptible" is sent as "bid").
SEARCH_TYPE = {Pricing.ON_DEMAND: "on-demand", Pricing.SPOT: "bid"}

_MSG = re.compile(r'"msg"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ERROR = re.compile(r'"error"\s*:\s*"((?:[^"\\]|\\.)*)"')
_DETAIL = re.compile(r'"detail"\s*:\s*"((?:[^"\\]|\\.)*)"')


def search_body(pricing: Pricing, countries: list[str] | None = None) -> dict[str, Any]:
    """The filter of one search: rentable, unrented, verified offers of every GPU with room for the
    standard disk, best-scored first (the vastai CLI's defaults)."""
    body: dict[str, Any] = {
        "verified": {"eq": True},
        "external": {"eq": False},
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "disk_space": {"gte": STANDARD_DISK_GB},
    }
    if countries:
        body["geolocation"] = {"in": [c.upper() for c in countries]}
    body.update(
        {
            "order": [["score", "desc"]],
            "type": SEARCH_TYPE[pricing],
            "limit": LIMIT,
            "allocated_storage": STANDARD_DISK_GB,
        }
    )
    return body


def api_message(text: str) -> str | None:
    """The API's own words from an error body: `{"error": ..., "msg": ...}` or `{"detail": ...}`."""
    msg, error, detail = _MSG.search(text), _ERROR.search(text), _DETAIL.search(text)
    if msg or error:
        return ": ".join(m.group(1) for m in (error, msg) if m)
    return detail.group(1) if detail else None


async def search(http: Http, pricing: Pricing, countries: list[str], api_key: str | None) -> RawResponse:
    label = SEARCH_TYPE[pricing]
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        raw = await http.fetch(
            "POST", BUNDLES_URL, label=label, content=json_bytes(search_body(pricing, countries)), headers=headers
        )
    except FetchError as exc:
        message = api_message(exc.body or str(exc))
        if message is None:
            raise
        hint = ""
        if "key" in message.lower():
            hint = (
                "; check the key in GPUPRICE_VAST_API_KEY (or VAST_API_KEY)"
                if api_key
                else "; the search asked for an API key: set GPUPRICE_VAST_API_KEY (or VAST_API_KEY)"
            )
        raise FetchError(f"Vast.ai refused the {label} offer search ({message}){hint}: {exc}") from exc
    body = raw.json_object()
    if "offers" not in body and ("error" in body or "msg" in body or body.get("success") is False):
        message = api_message(raw.text()) or str(body)
        raise FetchError(f"Vast.ai refused the {label} offer search: {message}")
    return raw
