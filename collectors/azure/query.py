"""Asking the Azure Retail Prices API: the N-series `$filter`, the first URL, and the NextPageLink walk
with its loop guard and error-body handling."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urljoin, urlsplit

from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http

PRICES_URL = "https://prices.azure.com/api/retail/prices"
MAX_PAGES = 500  # the N-series over every region is ~150 pages of 100; 500 means the paging has gone wrong
SKU_PREFIX = "Standard_N"  # every GPU size is N-series: NC, ND, NG, NV (and NP, FPGAs, dropped when read)
FULL_PAGE_SIZES = (100, 1000)  # the default version pages by 100 with a filter, preview by 1000


def odata_filter(region: str | None = None) -> str:
    """The `$filter` of one walk: the N-series sizes, optionally in one region."""
    clauses = ["serviceName eq 'Virtual Machines'"]
    if region:
        clauses.append("armRegionName eq '{}'".format(region.replace("'", "''")))
    clauses.append(f"startswith(armSkuName, '{SKU_PREFIX}')")
    return " and ".join(clauses)


def first_page_url(odata: str) -> str:
    """The walk's first URL, encoded the way the API writes its own next-page links."""
    return f"{PRICES_URL}?$filter={quote(odata, safe='')}"


def _page_key(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Identity of a page regardless of host, port and query encoding."""
    parts = urlsplit(url)
    return parts.path.rstrip("/"), tuple(sorted(parse_qsl(parts.query, keep_blank_values=True)))


_MESSAGE = re.compile(r'"Message"\s*:\s*"((?:[^"\\]|\\.)*)"')
_CODE = re.compile(r'"Code"\s*:\s*"((?:[^"\\]|\\.)*)"')


def api_error_message(error: Any) -> str | None:
    """The API's own words from an error envelope (a parsed `Error` value, or text holding one)."""
    if isinstance(error, Mapping):
        code, message = error.get("Code"), error.get("Message")
        return ": ".join(str(part) for part in (code, message) if part) or None
    if not isinstance(error, str):
        return None
    message = _MESSAGE.search(error)
    if message is None:
        return None
    code = _CODE.search(error)
    return f"{code.group(1)}: {message.group(1)}" if code else message.group(1)


async def _get_page(http: Http, url: str, label: str) -> RawResponse:
    try:
        return await http.get(url, label=label)
    except FetchError as exc:
        message = api_error_message(exc.body or str(exc))
        if message is None:
            raise
        raise FetchError(f"Azure Retail Prices API refused {label} ({message}); is the $filter valid? {exc}") from exc


async def walk(http: Http, url: str, label: str, notes: list[str], max_pages: int = MAX_PAGES) -> list[RawResponse]:
    """Read a page and every page its `NextPageLink`s lead to."""
    pages: list[RawResponse] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    next_url: str | None = url
    while next_url is not None:
        key = _page_key(next_url)
        if key in seen:
            raise FetchError(f"pagination loop in the {label} walk: page {len(pages)} links back to {next_url}")
        if len(pages) >= max_pages:
            raise FetchError(f"the {label} walk passed {max_pages} pages without an end; stopped at {next_url}")
        seen.add(key)
        raw = await _get_page(http, next_url, f"{label} page {len(pages) + 1}")
        pages.append(raw)
        body = raw.json_object()
        if "Error" in body:
            message = api_error_message(body["Error"]) or str(body["Error"])
            raise FetchError(f"Azure Retail Prices API error on {label} page {len(pages)}: {message}")
        link = body.get("NextPageLink")
        if link is not None and not isinstance(link, str):
            raise ParseError(f"{raw.url}: NextPageLink is {type(link).__name__}, not a URL")
        items = body.get("Items")
        if not link and isinstance(items, list) and len(items) in FULL_PAGE_SIZES:
            notes.append(f"{label}: last page was full ({len(items)} items) but had no NextPageLink; may be truncated")
        next_url = urljoin(next_url, link) if link else None
    return pages
