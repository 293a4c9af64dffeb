"""The user's AccessKey pair, and Alibaba Cloud's signature V3 (ACS3-HMAC-SHA256) on an httpx request.

Credentials come from `ALIBABA_CLOUD_ACCESS_KEY_ID` / `ALIBABA_CLOUD_ACCESS_KEY_SECRET` (the variables
Alibaba Cloud's own SDKs and CLI read) or `GPUPRICE_ALIYUN_ACCESS_KEY_ID` /
`GPUPRICE_ALIYUN_ACCESS_KEY_SECRET`, plus `ALIBABA_CLOUD_SECURITY_TOKEN` for STS temporary keys. They
stay `SecretStr` until the moment of signing and are never logged or stored. Offline, a fixed
placeholder pair signs the replayed requests, so the signing path runs end to end without real keys.

Signing follows "V3版本请求体&签名机制" (https://help.aliyun.com/zh/sdk/product-overview/v3-request-structure-and-signature),
the scheme Alibaba Cloud's current SDKs use by default; the signature itself is computed by Alibaba
Cloud's own `alibabacloud_openapi_util` (`Client.get_authorization`), fed from the final request:

- RPC style: the API's parameters travel in the query string, the action and version in the headers
  `x-acs-action` / `x-acs-version`; the canonical URI of an RPC API is always `/`;
- headers `x-acs-date` (UTC, ISO 8601, must be within 15 minutes of the server's clock),
  `x-acs-signature-nonce` (fresh per attempt), `x-acs-content-sha256` (hex SHA-256 of the body, of
  b"" for a GET) and `host` are signed, with `x-acs-security-token` when there is one;
- `Authorization: ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=<names>,Signature=<hex>`.

The callback runs through `Http.request(sign=…)` on every attempt, after `GPUPRICE_ALIYUN_BASE_URL`
has rewritten the URL, so `host` is the host actually contacted and the date and nonce are fresh.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace

import httpx
from pydantic import SecretStr

from collectors.errors import FetchError, MissingCredentials
from collectors.http import Signer
from pricedb import clock
from pricedb.settings import Settings

API_VERSION = "2014-05-26"
ALGORITHM = "ACS3-HMAC-SHA256"
RPC_CANONICAL_URI = "/"

KEY_SETTINGS = "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET"
GPUPRICE_KEY_SETTINGS = "GPUPRICE_ALIYUN_ACCESS_KEY_ID and GPUPRICE_ALIYUN_ACCESS_KEY_SECRET"


@dataclass(frozen=True)
class Credentials:
    access_key_id: str
    access_key_secret: SecretStr = field(repr=False)
    security_token: SecretStr | None = field(default=None, repr=False)
    source: str = ""


# Offline only: the replayed answers do not check signatures, but every request is signed all the same.
OFFLINE_CREDENTIALS = Credentials(
    "LTAI5tGPUPRICEOFFLINE0", SecretStr("offline-replay-placeholder-secret"), None, "offline placeholder"
)


def resolve_credentials(settings: Settings) -> Credentials:
    """The AccessKey pair to sign with, or MissingCredentials naming the settings to add."""
    if settings.offline:
        return OFFLINE_CREDENTIALS
    key, secret = settings.aliyun_access_key_id, settings.aliyun_access_key_secret
    key_id = key.get_secret_value().strip() if key is not None else ""
    key_secret = secret.get_secret_value().strip() if secret is not None else ""
    if not key_id and not key_secret:
        raise MissingCredentials(
            f"Alibaba Cloud prices need an AccessKey pair: set {KEY_SETTINGS} (or {GPUPRICE_KEY_SETTINGS}); "
            "a RAM user with the AliyunECSReadOnlyAccess policy is enough"
        )
    if not key_id or not key_secret:
        missing = "ACCESS_KEY_ID" if not key_id else "ACCESS_KEY_SECRET"
        raise MissingCredentials(
            f"Alibaba Cloud AccessKey pair is incomplete: "
            f"ALIBABA_CLOUD_{missing} (or GPUPRICE_ALIYUN_{missing}) is not set"
        )
    return Credentials(key_id, SecretStr(key_secret), settings.aliyun_security_token, "environment")


def utc_now_iso() -> str:
    return clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def signer(
    credentials: Credentials,
    action: str,
    now: Callable[[], str] = utc_now_iso,
    nonce: Callable[[], str] = lambda: uuid.uuid4().hex,
) -> Signer:
    """Sign an httpx request in place for the ECS RPC API `action` (V3, ACS3-HMAC-SHA256)."""

    def sign(request: httpx.Request) -> None:
        payload = hashlib.sha256(request.content).hexdigest()
        signed = {
            "host": request.headers["host"],
            "x-acs-action": action,
            "x-acs-version": API_VERSION,
            "x-acs-date": now(),
            "x-acs-signature-nonce": nonce(),
            "x-acs-content-sha256": payload,
        }
        if credentials.security_token is not None:
            signed["x-acs-security-token"] = credentials.security_token.get_secret_value()
        query: dict[str, str] = {}
        for name, value in request.url.params.multi_items():
            if name in query:  # the canonical query string has one value per name; the ECS API never repeats one
                raise FetchError(f"cannot sign {action}: query parameter {name!r} appears twice")
            query[name] = value
        unsigned = SimpleNamespace(method=request.method, pathname=RPC_CANONICAL_URI, query=query, headers=signed)
        # Imported here: Alibaba's SDK costs ~0.2 s to import, paid by every CLI start otherwise
        from alibabacloud_openapi_util.client import Client as OpenApiUtil

        authorization = OpenApiUtil.get_authorization(
            unsigned, ALGORITHM, payload, credentials.access_key_id, credentials.access_key_secret.get_secret_value()
        )
        for name, value in signed.items():
            if name != "host":
                request.headers[name] = value
        request.headers["Authorization"] = authorization

    return sign
