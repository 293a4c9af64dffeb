"""A TC3 signature check as Tencent's side would do it, written from the documentation alone (it
shares no code with collectors.tencent.tc3, so the two cannot be wrong in the same way), and a
`serve_replay` gate that answers a bad signature with Tencent's real AuthFailure.SignatureFailure body."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlsplit

from collectors.replay import Gate
from pricedb import clock
from tests.conftest import fixture_bytes

AUTH = re.compile(
    r"^TC3-HMAC-SHA256 Credential=(?P<id>[^/]+)/(?P<date>\d{4}-\d\d-\d\d)/(?P<service>[a-z]+)/tc3_request, "
    r"SignedHeaders=(?P<signed>[a-z;-]+), Signature=(?P<signature>[0-9a-f]{64})$"
)


def signature_problem(
    method: str, target: str, headers: Mapping[str, str], body: bytes, secret_id: str, secret_key: str
) -> str | None:
    """Why the request's TC3 signature is not valid for this key pair, or None if it is."""
    sent = {name.lower(): value for name, value in headers.items()}
    auth = AUTH.match(sent.get("authorization", ""))
    if auth is None:
        return f"malformed Authorization {sent.get('authorization')!r}"
    if auth["id"] != secret_id:
        return f"unknown SecretId {auth['id']}"
    if auth["signed"] != "content-type;host" or auth["service"] != "cvm":
        return f"unexpected scope {auth['service']} / {auth['signed']}"
    timestamp = int(sent.get("x-tc-timestamp", "0"))
    if abs(clock.timestamp() - timestamp) > 300:  # Tencent's side keeps the same time as the tests' world
        return "timestamp more than five minutes off"
    date = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d")
    if auth["date"] != date:
        return f"credential date {auth['date']} is not the UTC date {date} of the timestamp"
    parts = urlsplit(target)
    canonical = "\n".join(
        [
            method,
            parts.path or "/",
            parts.query,
            f"content-type:{sent.get('content-type', '').lower()}\nhost:{sent.get('host', '').lower()}\n",
            "content-type;host",
            hashlib.sha256(body).hexdigest(),
        ]
    )
    to_sign = f"TC3-HMAC-SHA256\n{timestamp}\n{date}/cvm/tc3_request\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = ("TC3" + secret_key).encode()
    for part in (date, "cvm", "tc3_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(expected, auth["signature"]) else "signature mismatch"


def tc3_gate(secret_id: str, secret_key: str, problems: list[str] | None = None) -> Gate:
    """Check every Tencent request (those with X-TC-Action); let the others through."""
    refusal = fixture_bytes("tencent", "error_auth_signature_failure.json")

    def gate(
        method: str, target: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes] | None:
        if not any(name.lower() == "x-tc-action" for name in headers):
            return None
        problem = signature_problem(method, target, headers, body, secret_id, secret_key)
        if problem is None:
            return None
        if problems is not None:
            problems.append(problem)
        return 200, {"content-type": "application/json"}, refusal

    return gate
