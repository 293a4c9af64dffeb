"""TC3-HMAC-SHA256, the request signature of Tencent Cloud API 3.0 ("Signature v3").

As documented (CVM API docs, "Signature v3", https://www.tencentcloud.com/document/product/213/33224,
in Chinese "签名方法 v3", https://cloud.tencent.com/document/api/213/30654; the same page appears under
every product), for a POST with a JSON body:

    CanonicalRequest = "POST\\n" + CanonicalURI ("/") + "\\n" + CanonicalQueryString ("" for POST) + "\\n"
                       + "content-type:<value>\\nhost:<value>\\n" + "\\n" + "content-type;host" + "\\n"
                       + hex(sha256(body))
    StringToSign     = "TC3-HMAC-SHA256\\n" + <X-TC-Timestamp> + "\\n" + "<UTC date>/<service>/tc3_request\\n"
                       + hex(sha256(CanonicalRequest))
    Signature        = hex(HMAC(SecretSigning, StringToSign)), SecretSigning derived from "TC3" + SecretKey,
                       the UTC date, the service and "tc3_request"
    Authorization    = "TC3-HMAC-SHA256 Credential=<SecretId>/<UTC date>/<service>/tc3_request,
                        SignedHeaders=content-type;host, Signature=<Signature>"

The key derivation and the final HMAC are Tencent's own code, `Sign.sign_tc3` from
`tencentcloud-sdk-python-common` (the only public TC3 entry point that package has: its canonical
request is built inside the SDK's private client methods, whose signatures differ between its sync
and async clients). The canonical request and string to sign are built here from the request as it
will be sent — after `GPUPRICE_TENCENT_BASE_URL` rewriting, so the `host` signed is the host
contacted — and tests/collectors/tencent/test_signing.py reproduces the documented worked example byte for byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from pydantic import SecretStr

from pricedb import clock

ALGORITHM = "TC3-HMAC-SHA256"
SIGNED_HEADERS = "content-type;host"


@dataclass(frozen=True)
class Tc3Credentials:
    """A SecretId/SecretKey pair. The key stays a SecretStr until the moment it signs."""

    secret_id: str
    secret_key: SecretStr


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def utc_date(timestamp: int) -> str:
    """The credential scope's date: the UTC date of X-TC-Timestamp (never the local one)."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")


def canonical_request(method: str, path: str, query: str, content_type: str, host: str, body: bytes) -> str:
    headers = f"content-type:{content_type.strip().lower()}\nhost:{host.strip().lower()}\n"
    return "\n".join((method.upper(), path or "/", query, headers, SIGNED_HEADERS, _sha256_hex(body)))


def string_to_sign(timestamp: int, service: str, canonical: str) -> str:
    scope = f"{utc_date(timestamp)}/{service}/tc3_request"
    return "\n".join((ALGORITHM, str(timestamp), scope, _sha256_hex(canonical.encode("utf-8"))))


def signature(secret_key: SecretStr, timestamp: int, service: str, to_sign: str) -> str:
    from tencentcloud.common.sign import Sign  # imported here, not by every CLI start

    return Sign.sign_tc3(secret_key.get_secret_value(), utc_date(timestamp), service, to_sign)


def authorization(credentials: Tc3Credentials, timestamp: int, service: str, signed: str) -> str:
    scope = f"{utc_date(timestamp)}/{service}/tc3_request"
    return f"{ALGORITHM} Credential={credentials.secret_id}/{scope}, SignedHeaders={SIGNED_HEADERS}, Signature={signed}"


def request_signature(request: httpx.Request, secret_key: SecretStr, service: str, timestamp: int) -> str:
    """The signature of `request` as it stands (also what a server recomputes to check one)."""
    canonical = canonical_request(
        request.method,
        request.url.path,
        request.url.query.decode("ascii"),
        request.headers.get("content-type", ""),
        request.headers["host"],
        request.content,
    )
    return signature(secret_key, timestamp, service, string_to_sign(timestamp, service, canonical))


def sign(request: httpx.Request, credentials: Tc3Credentials, service: str, timestamp: int | None = None) -> None:
    """Sign `request` in place: a fresh X-TC-Timestamp (the API refuses one more than five minutes
    off) and the Authorization header over its method, path, query, content type, host and body."""
    when = int(clock.timestamp()) if timestamp is None else timestamp
    request.headers["X-TC-Timestamp"] = str(when)
    signed = request_signature(request, credentials.secret_key, service, when)
    request.headers["Authorization"] = authorization(credentials, when, service, signed)
