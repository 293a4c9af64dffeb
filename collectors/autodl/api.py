"""Asking AutoDL's web API with the user's login token: the region list, the GPU types (with idle
and total GPU counts) of a region group, and the paged machine list; every answer's
`{"code", "msg", "data"}` envelope checked, errors turned into clear FetchErrors."""

from __future__ import annotations

import re
from typing import Any

from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http, json_bytes

API = "https://api.autodl.com"
REGION_TAG_URL = "https://fe-config-backend.autodl.com/api/v1/autodl/region/tag"
GPU_TYPE_URL = f"{API}/api/v1/machine/region/gpu_type"
MACHINE_LIST_URL = f"{API}/api/v1/user/machine/list"
PAGE_SIZE = 10  # what the web console's market list asks for
MAX_PAGES = 100  # a walk this long means the paging has gone wrong
OK_CODES = frozenset({"Success", "OK"})
EXPIRED = "AuthorizeFailed"

_CODE = re.compile(r'"code"\s*:\s*"((?:[^"\\]|\\.)*)"')
_MSG = re.compile(r'"msg"\s*:\s*"((?:[^"\\]|\\.)*)"')


def api_error(code: str, msg: str, label: str, http_error: FetchError | None = None) -> FetchError:
    """AutoDL's code and message first; for an HTTP error, the status, URL and words after them."""
    answered = f" [{http_error}]" if http_error is not None else ""
    if code == EXPIRED:
        return FetchError(
            f"AutoDL refused the login token on {label} ({code}: {msg}): it has expired or is not a login "
            "token; log in at autodl.com again, copy the request's Authorization value and update "
            f"GPUPRICE_AUTODL_TOKEN{answered}"
        )
    return FetchError(f"AutoDL API error on {label}: {code}: {msg}".rstrip(": ") + answered)


def machine_list_body(signs: list[str], gpu_names: list[str], page: int) -> dict[str, Any]:
    """The console's market-list filter: pay-as-you-go machines of these GPU types in these
    regions, idle or not (`gpu_idle_num` 0), so that sold-out machines still show their price.
    `region_sign_list` and `page_index` come last and together: the replay manifest keys on them."""
    return {
        "charge_type": "payg",
        "region_sign": "",
        "gpu_type_name": gpu_names,
        "machine_tag_name": [],
        "gpu_idle_num": 0,
        "mount_net_disk": False,
        "instance_disk_size_order": "",
        "date_range": "",
        "date_from": "",
        "date_to": "",
        "pay_price_order": "",
        "gpu_idle_type": "",
        "default_order": True,
        "region_sign_list": signs,
        "page_index": page,
        "page_size": PAGE_SIZE,
    }


async def call(http: Http, method: str, url: str, token: str, label: str, body: Any = None) -> tuple[RawResponse, Any]:
    """One request; the raw answer and its `data`, or a FetchError with AutoDL's code and message."""
    headers = {"Authorization": token, "Accept": "application/json"}  # the bare token, no "Bearer"
    kwargs: dict[str, Any] = {}
    if body is not None:
        headers["Content-Type"] = "application/json"
        kwargs["content"] = json_bytes(body)
    try:
        raw = await http.fetch(method, url, label=label, headers=headers, **kwargs)
    except FetchError as exc:
        said = exc.body or str(exc)
        code, msg = _CODE.search(said), _MSG.search(said)
        if code is None:
            raise
        raise api_error(code.group(1), msg.group(1) if msg else "", label, exc) from exc
    answer = raw.json()
    if not isinstance(answer, dict) or "code" not in answer:
        found = ", ".join(map(str, answer)) if isinstance(answer, dict) else type(answer).__name__
        raise ParseError(f"{url}: no 'code' in the answer to {label} (found: {found}); has the AutoDL API changed?")
    if answer["code"] not in OK_CODES:
        raise api_error(str(answer["code"]), str(answer.get("msg") or ""), label)
    return raw, answer.get("data")


async def machine_pages(
    http: Http, token: str, signs: list[str], gpu_names: list[str], label: str
) -> list[RawResponse]:
    """Every page of the machine list for these regions and GPU types, `page_index` 1 to `max_page`
    (past `max_page` the API answers the last page again, so the walk stops there)."""
    pages: list[RawResponse] = []
    page, last = 1, 1
    while page <= last:
        if page > MAX_PAGES:
            raise FetchError(f"the {label} machine list passed {MAX_PAGES} pages without an end")
        body = machine_list_body(signs, gpu_names, page)
        raw, data = await call(http, "POST", MACHINE_LIST_URL, token, f"{label} page {page}", body)
        if not isinstance(data, dict) or not isinstance(data.get("list"), list):
            raise ParseError(f"{raw.url}: the {label} page {page} answer has no data.list")
        max_page = data.get("max_page")
        if isinstance(max_page, bool) or not isinstance(max_page, int) or max_page < 0:
            raise ParseError(f"{raw.url}: the {label} page {page} answer has no usable max_page ({max_page!r})")
        pages.append(raw)
        page, last = page + 1, max_page
    return pages
