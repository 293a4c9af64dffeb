"""Calling the ECS OpenAPI (version 2014-05-26, RPC style): URLs, signed GETs, API errors, paging.

Every call is `GET https://ecs.{region}.aliyuncs.com/?<API parameters>` with the action in the signed
`x-acs-action` header (signature V3, see collectors.aliyun.signing). The API parameters are the whole
query string, in a fixed order, with no timestamp or nonce in it: a recorded answer (`--offline`,
`fixtures/aliyun/replay.json`) or a local stand-in reached through `GPUPRICE_ALIYUN_BASE_URL` matches a
request by its path and query alone, and `RegionId` in the query tells the regions apart.

Errors: the API answers 4xx/5xx with `{"RequestId", "HostId", "Code", "Message", "Recommend"}` (older
gateways put `Recommend` first and `Code` last). `Http` keeps that body on the `FetchError`, so the
code and message are read from the whole document, not from the message's 300-character snippet
(a `SignatureDoesNotMatch` message quotes the server's whole string-to-sign, which would push `Code`
out of it). Known causes get a hint: price inquiry (询价) not enabled or not permitted for the key.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from collectors.aliyun.signing import Credentials, signer
from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http

ENDPOINT = "https://ecs.{region}.aliyuncs.com/"
MAX_PAGES = 20

_HINTS = {
    "InvalidAction": "this account cannot call {action}: price inquiry (询价) is not enabled for it — "
    "older accounts must ask Alibaba Cloud support (a ticket) to enable DescribePrice",
    "Forbidden": "the AccessKey is not allowed to call {action}: grant its RAM user ecs:DescribePrice, "
    "ecs:DescribeAvailableResource and ecs:DescribeInstanceTypes (the AliyunECSReadOnlyAccess policy has them); "
    "if it has them, price inquiry (询价) may not be enabled for the account",
    "InvalidAccessKeyId": "check ALIBABA_CLOUD_ACCESS_KEY_ID (or GPUPRICE_ALIYUN_ACCESS_KEY_ID)",
    "SignatureDoesNotMatch": "check ALIBABA_CLOUD_ACCESS_KEY_SECRET (or GPUPRICE_ALIYUN_ACCESS_KEY_SECRET)",
    "IncompleteSignature": "check ALIBABA_CLOUD_ACCESS_KEY_SECRET (or GPUPRICE_ALIYUN_ACCESS_KEY_SECRET)",
    "Throttling": "the API's rate limit was hit; the next run will try again",
}


def endpoint(region: str) -> str:
    return ENDPOINT.format(region=region)


def url(region: str, params: list[tuple[str, str]]) -> str:
    return endpoint(region) + "?" + urlencode(params, quote_via=quote)


def api_error(body: str | bytes | None) -> tuple[str, str] | None:
    """(Code, Message) of an Alibaba Cloud error document, or None if `body` is not one."""
    if not body:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("Code"), str):
        return None
    return document["Code"], str(document.get("Message") or "")


def explain(action: str, region: str, code: str, message: str) -> str:
    text = f"Alibaba Cloud {action} in {region}: {code}: {message}".rstrip(": ")
    family = code.split(".", 1)[0]
    hint = _HINTS.get(code) or _HINTS.get(family)
    return f"{text} ({hint.format(action=action)})" if hint else text


async def call(
    http: Http, credentials: Credentials, region: str, action: str, params: list[tuple[str, str]], label: str
) -> RawResponse:
    """One signed GET; an API error becomes a FetchError with its Code and Message."""
    try:
        raw = await http.fetch(
            "GET",
            url(region, params),
            label=label,
            sign=signer(credentials, action),
            headers={"Accept": "application/json"},
        )
    except FetchError as exc:
        error = api_error(exc.body)
        if error is None:
            raise
        raise FetchError(explain(action, region, *error), status=exc.status, body=exc.body) from exc
    error = api_error(raw.body)
    if error is not None and _is_error_only(raw):  # an error envelope answered with 200
        raise FetchError(explain(action, region, *error))
    return raw


def _is_error_only(raw: RawResponse) -> bool:
    """A 2xx body that is nothing but an error envelope (no result fields besides the envelope's)."""
    document = raw.json()
    return isinstance(document, dict) and set(document) <= {"RequestId", "HostId", "Code", "Message", "Recommend"}


def json_object(raw: RawResponse) -> dict[str, Any]:
    document = raw.json_object()
    error = api_error(raw.body)
    if error is not None and _is_error_only(raw):
        raise ParseError(f"{raw.url}: an Alibaba Cloud error, not a result: {error[0]}: {error[1]}")
    return document


def next_token(raw: RawResponse) -> str | None:
    token = json_object(raw).get("NextToken")
    if token is not None and not isinstance(token, str):
        raise ParseError(f"{raw.url}: NextToken is {type(token).__name__}, not a string")
    return token or None


async def call_pages(
    http: Http,
    credentials: Credentials,
    region: str,
    action: str,
    params: list[tuple[str, str]],
    label: str,
) -> list[RawResponse]:
    """Every page of a `NextToken`-paged answer (`NextToken` absent or empty on the last page)."""
    pages: list[RawResponse] = []
    token: str | None = None
    seen: set[str] = set()
    for number in range(1, MAX_PAGES + 1):
        page_params = [*params, ("NextToken", token)] if token else params
        raw = await call(http, credentials, region, action, page_params, f"{label}:{number}")
        pages.append(raw)
        token = next_token(raw)
        if token is None:
            return pages
        if token in seen:
            raise FetchError(f"Alibaba Cloud {action}: NextToken {token!r} repeats; giving up")
        seen.add(token)
    raise FetchError(f"Alibaba Cloud {action}: more than {MAX_PAGES} pages")
