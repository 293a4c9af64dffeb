"""A local stand-in for the ECS OpenAPI that checks request signatures, for the Alibaba Cloud tests.

It answers from `fixtures/aliyun/replay.json` (through `collectors.replay.Replay`), but only after
recomputing each request's ACS3-HMAC-SHA256 signature from what it received — method, query, signed
headers, body hash — with the secret it was given, written here from the V3 signing document
independently of the collector's code (which uses Alibaba Cloud's `alibabacloud_openapi_util`). It
also checks the AccessKeyId, the signed-header set, the date window, nonce reuse, the body hash and
that `x-acs-action` is the action the recorded answer belongs to. A failed check is answered as the
API does: HTTP 400 with Alibaba Cloud's `SignatureDoesNotMatch` error body (or 404
`InvalidAccessKeyId.NotFound` for an unknown key).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote, urlsplit

from collectors.replay import Replay
from pricedb import clock
from tests.conftest import FIXTURES

AUTHORIZATION = re.compile(
    r"^ACS3-HMAC-SHA256 Credential=(?P<key>[^,]+),SignedHeaders=(?P<signed>[a-z0-9;-]+),"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
REQUIRED_SIGNED = {
    "host",
    "x-acs-action",
    "x-acs-version",
    "x-acs-date",
    "x-acs-signature-nonce",
    "x-acs-content-sha256",
}


def _encode(value: str) -> str:
    return quote(value, safe="-_.~")


def acs3_signature(method: str, query: dict[str, str], headers: dict[str, str], signed: list[str], secret: str) -> str:
    """The V3 signature as the document defines it (RPC: canonical URI `/`)."""
    canonical_query = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(query.items()))
    canonical_headers = "".join(f"{name}:{headers[name].strip()}\n" for name in signed)
    canonical_request = "\n".join(
        [method, "/", canonical_query, canonical_headers, ";".join(signed), headers["x-acs-content-sha256"]]
    )
    string_to_sign = "ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical_request.encode()).hexdigest()
    return hmac.new(secret.encode(), string_to_sign.encode(), hashlib.sha256).hexdigest()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    verdict: str  # "ok" or why it was refused


@dataclass
class VerifyingServer:
    url: str
    requests: list[Seen] = field(default_factory=list)


def _actions() -> dict[str, str]:
    manifest = json.loads((FIXTURES / "aliyun" / "replay.json").read_text(encoding="utf-8"))
    return {route["file"]: route["action"] for route in manifest["routes"]}


def check(method: str, path: str, headers: dict[str, str], body: bytes, key: str, secret: str, action: str) -> str:
    """'ok', or why the request must be refused."""
    auth = AUTHORIZATION.match(headers.get("authorization", ""))
    if auth is None:
        return "no ACS3-HMAC-SHA256 Authorization header"
    if auth["key"] != key:
        return "unknown AccessKeyId"
    signed = auth["signed"].split(";")
    if signed != sorted(signed) or not set(signed) >= REQUIRED_SIGNED or any(n not in headers for n in signed):
        return f"signed headers {signed} are not the sorted required set"
    when = datetime.strptime(headers["x-acs-date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    if abs((clock.now() - when).total_seconds()) > 15 * 60:
        return "x-acs-date is more than 15 minutes off"
    if headers["x-acs-content-sha256"] != hashlib.sha256(body).hexdigest():
        return "x-acs-content-sha256 is not the body's hash"
    if headers["x-acs-version"] != "2014-05-26" or headers["x-acs-action"] != action:
        return f"x-acs-action {headers['x-acs-action']!r} is not {action!r} for this request"
    query = dict(parse_qsl(urlsplit(path).query, keep_blank_values=True))
    expected = acs3_signature(method, query, headers, signed, secret)
    if not hmac.compare_digest(expected, auth["signature"]):
        return "signature mismatch"
    return "ok"


@contextmanager
def serve_verifying(key: str, secret: str) -> Iterator[VerifyingServer]:
    replay = Replay.load(FIXTURES, "aliyun")
    actions = _actions()
    nonces: set[str] = set()
    state = VerifyingServer("")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            route = replay.find(self.command, self.path, body)
            if route is None:
                status, content, verdict = (
                    404,
                    b'{"Code":"InvalidParameter","Message":"no recorded answer"}',
                    "no route",
                )
            else:
                verdict = check(self.command, self.path, headers, body, key, secret, actions[route.file.name])
                with lock:
                    nonce = headers.get("x-acs-signature-nonce", "")
                    if verdict == "ok" and nonce in nonces:
                        verdict = "nonce reused"
                    nonces.add(nonce)
                if verdict == "ok":
                    status, _, content = replay.answer(self.command, self.path, body)
                elif verdict == "unknown AccessKeyId":
                    status, content = 404, (FIXTURES / "aliyun" / "error_invalid_access_key.json").read_bytes()
                else:
                    status, content = 400, (FIXTURES / "aliyun" / "error_signature_does_not_match.json").read_bytes()
            state.requests.append(Seen(self.command, self.path, headers, verdict))
            self.send_response(status)
            self.send_header("Content-Type", "application/json;charset=utf-8")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # A short poll interval: shutdown() waits for the loop to notice, 0.5 s by default.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
