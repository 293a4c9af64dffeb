"""The CVM API call: `DescribeZoneInstanceConfigInfos`, one region and one charge type at a time.

Request (API 3.0, version 2017-03-12): `POST https://cvm.tencentcloudapi.com/` with headers
`Content-Type: application/json; charset=utf-8`, `X-TC-Action: DescribeZoneInstanceConfigInfos`,
`X-TC-Version: 2017-03-12`, `X-TC-Region: <region>`, `X-TC-Timestamp` and `Authorization` (TC3, see
collectors.tencent.tc3), and a JSON body of two filters, always in this order:

    {"Filters":[{"Name":"instance-family","Values":["GT4","GN10X",…,"HCCPNV4h"]},
                {"Name":"instance-charge-type","Values":["POSTPAID_BY_HOUR"]}]}

(the GPU families of collectors.tencent.instance_types, in its order).

The body names the charge type; the region is only in `X-TC-Region` (the API has no body field for
it and refuses unknown parameters), so recorded answers are matched on that header as well
(`request_headers` in fixtures/tencent/replay.json).

Errors come back with HTTP 200 as `{"Response": {"Error": {"Code", "Message"}, "RequestId"}}`; they
become `FetchError`s carrying code, message and request id, with a hint for `AuthFailure.*` (the keys)
and `UnauthorizedOperation*` (the key's CAM permissions).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import SecretStr

from collectors.base import RawResponse
from collectors.errors import FetchError, MissingCredentials
from collectors.http import Http
from collectors.tencent import tc3
from collectors.tencent.instance_types import FAMILIES
from pricedb.models import Pricing
from pricedb.settings import Settings

ENDPOINT = "https://cvm.tencentcloudapi.com/"
SERVICE = "cvm"
VERSION = "2017-03-12"
ACTION = "DescribeZoneInstanceConfigInfos"
CONTENT_TYPE = "application/json; charset=utf-8"


# Charge type asked for → the pricings its answer yields.
CHARGE_TYPES: dict[str, frozenset[Pricing]] = {
    "POSTPAID_BY_HOUR": frozenset({Pricing.ON_DEMAND}),
    "SPOTPAID": frozenset({Pricing.SPOT}),
    "PREPAID": frozenset({Pricing.MONTHLY, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y}),
}

KEY_SETTINGS = (
    "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (or GPUPRICE_TENCENT_SECRET_ID and GPUPRICE_TENCENT_SECRET_KEY)"
)
# Offline only: replayed answers check no signature, but every request is signed all the same.
OFFLINE_CREDENTIALS = tc3.Tc3Credentials(
    "AKIDgpupriceOFFLINEplaceholder000000", SecretStr("offline-replay-placeholder-secret")
)


def credentials(settings: Settings) -> tc3.Tc3Credentials:
    """The SecretId/SecretKey pair to sign with; MissingCredentials (a skipped run) without one."""
    if settings.offline:
        return OFFLINE_CREDENTIALS
    secret_id, secret_key = settings.tencent_secret_id, settings.tencent_secret_key
    missing = [
        name
        for name, value in (("SecretId", secret_id), ("SecretKey", secret_key))
        if value is None or not value.get_secret_value().strip()
    ]
    if missing:
        raise MissingCredentials(
            f"Tencent Cloud prices need an API key pair ({' and '.join(missing)} not set): set {KEY_SETTINGS}"
        )
    assert secret_id is not None and secret_key is not None
    return tc3.Tc3Credentials(secret_id.get_secret_value().strip(), secret_key)


def request_body(charge_type: str) -> bytes:
    filters = [
        {"Name": "instance-family", "Values": list(FAMILIES)},
        {"Name": "instance-charge-type", "Values": [charge_type]},
    ]
    return json.dumps({"Filters": filters}, separators=(",", ":")).encode()


def source_url(region: str, charge_type: str) -> str:
    return f"{ENDPOINT}?Action={ACTION}&Region={region}&InstanceChargeType={charge_type}"


def label(region: str, charge_type: str) -> str:
    return f"{region}:{charge_type}"


def parse_label(raw: RawResponse) -> tuple[str, str]:
    region, _, charge_type = raw.label.partition(":")
    return region, charge_type


def api_error(payload: Any) -> tuple[str, str, str] | None:
    """(code, message, request id) of an API 3.0 error answer, else None."""
    response = payload.get("Response") if isinstance(payload, dict) else None
    error = response.get("Error") if isinstance(response, dict) else None
    if not isinstance(error, dict):
        return None
    return str(error.get("Code", "?")), str(error.get("Message", "")), str(response.get("RequestId", "?"))


def error_text(code: str, message: str, request_id: str, region: str, charge_type: str) -> str:
    text = f"{ACTION} in {region} ({charge_type}): {code}: {message} (RequestId {request_id})"
    if code.startswith("AuthFailure"):
        text += (
            f". Tencent Cloud refused the API keys: check {KEY_SETTINGS} — a SecretId/SecretKey pair from "
            "https://console.cloud.tencent.com/cam/capi, not disabled — and this machine's clock "
            "(a signature expires after 5 minutes)"
        )
    elif code.startswith("UnauthorizedOperation"):
        text += f". The key's CAM user needs permission for cvm:{ACTION} (e.g. the QcloudCVMReadOnlyAccess policy)"
    return text


async def describe(http: Http, region: str, charge_type: str, keys: tc3.Tc3Credentials) -> RawResponse:
    """One signed call; an API error answered with HTTP 200 becomes a FetchError."""
    headers = {
        "Content-Type": CONTENT_TYPE,
        "X-TC-Action": ACTION,
        "X-TC-Version": VERSION,
        "X-TC-Region": region,
    }
    raw = await http.fetch(
        "POST",
        ENDPOINT,
        label=label(region, charge_type),
        sign=lambda request: tc3.sign(request, keys, SERVICE),
        content=request_body(charge_type),
        headers=headers,
    )
    try:
        payload = json.loads(raw.body)
    except ValueError:
        return raw  # not JSON: the parser says so, naming the answer
    error = api_error(payload)
    if error is not None:
        raise FetchError(error_text(*error, region, charge_type))
    return raw
