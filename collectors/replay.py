"""Recorded responses, served back: offline mode and local stand-ins for providers.

Each provider's fixtures folder has a `replay.json` manifest listing the requests its collector
makes and the recorded file that answers each one:

    {"routes": [
      {"method": "GET", "url": "https://prices.azure.com/api/retail/prices?$filter=...",
       "file": "retail_prices_page1.json", "content_type": "application/json"},
      {"method": "POST", "url": "https://api.runpod.io/graphql", "body_contains": "gpuTypes",
       "file": "gpu_types.json", "status": 200, "headers": {"Retry-After": "1"}},
      {"method": "POST", "url": "https://cvm.tencentcloudapi.com/", "body_contains": "POSTPAID_BY_HOUR",
       "request_headers": {"X-TC-Region": "ap-beijing"}, "file": "ap-beijing_postpaid.json"}
    ]}

A request matches a route when method, path and query parameters are equal (the host is ignored,
so the same manifest serves a local server reached through a `*_BASE_URL`; parameters listed in a
route's `ignore_params`, such as an API key, are left out of the comparison), if given, the body
contains `body_contains`, and, if given, the request carries each of `request_headers` (names
case-insensitive, values exact: for APIs such as Tencent Cloud's that name the region only in a
header). `headers` are the *response's* headers. `ReplayTransport` plugs this into httpx for
`--offline`; `serve_replay` (tests, demos) answers real HTTP on a local port.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import httpx

MANIFEST = "replay.json"


def _request_key(url: str, ignore: tuple[str, ...] = ()) -> tuple[str, tuple[tuple[str, str], ...]]:
    parts = urlsplit(url)
    params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in ignore]
    return parts.path or "/", tuple(sorted(params))


@dataclass(frozen=True)
class Route:
    method: str
    url: str
    file: Path
    status: int = 200
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body_contains: str | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    ignore_params: tuple[str, ...] = ()

    def matches(self, method: str, url: str, body: bytes, headers: Mapping[str, str] | None = None) -> bool:
        ignore = self.ignore_params
        if method.upper() != self.method.upper() or _request_key(url, ignore) != _request_key(self.url, ignore):
            return False
        if self.body_contains is not None and self.body_contains.encode() not in body:
            return False
        sent = {name.lower(): value for name, value in (headers or {}).items()}
        return all(sent.get(name.lower()) == value for name, value in self.request_headers.items())


@dataclass(frozen=True)
class Replay:
    provider: str
    routes: tuple[Route, ...]

    @classmethod
    def load(cls, fixtures_dir: Path, provider: str) -> Replay:
        folder = fixtures_dir / provider
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        routes = tuple(
            Route(
                method=item.get("method", "GET"),
                url=item["url"],
                file=folder / item["file"],
                status=int(item.get("status", 200)),
                content_type=item.get("content_type"),
                headers=dict(item.get("headers", {})),
                body_contains=item.get("body_contains"),
                request_headers=dict(item.get("request_headers", {})),
                ignore_params=tuple(item.get("ignore_params", ())),
            )
            for item in manifest["routes"]
        )
        return cls(provider, routes)

    def find(self, method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None) -> Route | None:
        return next((route for route in self.routes if route.matches(method, url, body, headers)), None)

    def answer(
        self, method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        route = self.find(method, url, body, headers)
        if route is None:
            message = f"no recorded {self.provider} response for {method} {url}"
            return 404, {"content-type": "text/plain; charset=utf-8"}, message.encode()
        headers = dict(route.headers)
        if route.content_type:
            headers["content-type"] = route.content_type
        return route.status, headers, route.file.read_bytes()


class ReplayTransport(httpx.AsyncBaseTransport):
    """An httpx transport that answers from a `Replay` instead of the network."""

    def __init__(self, replay: Replay) -> None:
        self.replay = replay

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        status, headers, content = self.replay.answer(request.method, str(request.url), body, request.headers)
        return httpx.Response(status, headers=headers, content=content, request=request)


@dataclass
class ReplayServer:
    url: str  # base URL to put in GPUPRICE_<PROVIDER>_BASE_URL
    requests: list[tuple[str, str, dict[str, str], bytes]]  # method, path, headers, body


# A stand-in's own check of a request (a signature, say): None lets the request through to the
# recorded answers, a (status, headers, body) is answered instead.
Gate = Callable[[str, str, dict[str, str], bytes], "tuple[int, dict[str, str], bytes] | None"]


@contextmanager
def serve_replay(
    replays: list[Replay], host: str = "127.0.0.1", port: int = 0, gate: Gate | None = None
) -> Iterator[ReplayServer]:
    """Serve recorded responses over real HTTP on a local port.

    Every request is kept in `requests` (method, path, headers, body), so a test can check what a
    collector sent (signature headers, for instance). `gate`, if given, sees each request first and
    may answer it itself, as a provider that checks signatures would."""
    seen: list[tuple[str, str, dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            sent = dict(self.headers)
            seen.append((self.command, self.path, sent, body))
            status, headers, content = 404, {}, b"no replay matches"
            refused = gate(self.command, self.path, sent, body) if gate is not None else None
            if refused is not None:
                status, headers, content = refused
            else:
                for replay in replays:
                    if replay.find(self.command, self.path, body, sent) is not None:
                        status, headers, content = replay.answer(self.command, self.path, body, sent)
                        break
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:  # keep test output quiet
            return

    with serving(ThreadingHTTPServer((host, port), Handler)) as url:
        yield ReplayServer(url, seen)


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[str]:
    """Run `server` in a thread for the block; its base URL inside."""
    # A short poll interval: shutdown() waits for the loop to notice, 0.5 s by default.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://{server.server_address[0]}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
