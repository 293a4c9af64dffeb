"""Misbehaving upstreams on loopback, for fault tests: real HTTP servers in threads that echo a
request back in a 401/403, trickle a body one byte at a time, or send a huge body.

Each answer is a function of the request, so one server can stand in for any provider through
`GPUPRICE_<PROVIDER>_BASE_URL`; `pass_through` lets a test answer some requests from the recorded
replays (fixtures/<provider>/replay.json) and misbehave on the others.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from collectors.replay import Replay, serving


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # with the query string
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    trickle_s: float | None = None  # send the body (or endless bytes) one byte every trickle_s seconds
    size: int | None = None  # stream this many bytes of filler instead of `body`
    announce_length: bool = True  # send Content-Length (else the body ends when the connection closes)


Responder = Callable[[Request], Answer]


def echo(status: int = 401) -> Responder:
    """An error answer that echoes the request whole: method, URL with query, headers and body, as
    some providers' gateways do (and as a misconfigured proxy would)."""

    def answer(request: Request) -> Answer:
        body = {
            "error": {"code": "unauthorized", "message": "the credentials in this request were refused"},
            "request": {
                "method": request.method,
                "url": request.path,
                "headers": request.headers,
                "body": request.body.decode("utf-8", "replace"),
            },
        }
        text = json.dumps(body) + "\n" + "\n".join(f"{k}: {v}" for k, v in request.headers.items())
        return Answer(status, {"Content-Type": "application/json"}, text.encode())

    return answer


def trickle(every_s: float) -> Responder:
    """Headers at once, then one byte every `every_s` seconds, never finishing."""
    return lambda request: Answer(200, {"Content-Type": "application/json"}, trickle_s=every_s)


def huge(size: int, announce_length: bool = False) -> Responder:
    """A 200 answer of `size` bytes, sent in 1 MiB writes."""
    return lambda request: Answer(200, {"Content-Type": "application/json"}, size=size, announce_length=announce_length)


def replayed(replays: list[Replay], edit: Callable[[Request, bytes], bytes] | None = None) -> Responder:
    """The recorded answers (as `serve_replay` gives them), each body optionally changed by `edit`."""

    def answer(request: Request) -> Answer:
        for replay in replays:
            if replay.find(request.method, request.path, request.body, request.headers) is not None:
                status, headers, content = replay.answer(request.method, request.path, request.body, request.headers)
                return Answer(status, dict(headers), edit(request, content) if edit else content)
        return Answer(404, {"Content-Type": "text/plain"}, b"no replay matches")

    return answer


def pass_through(replays: list[Replay], otherwise: Responder, when: Callable[[Request], bool]) -> Responder:
    """Answer from the recorded replays unless `when(request)`, then as `otherwise` does."""
    recorded = replayed(replays)
    return lambda request: otherwise(request) if when(request) else recorded(request)


@dataclass
class Upstream:
    url: str
    requests: list[Request]


@contextmanager
def serve(responder: Responder) -> Iterator[Upstream]:
    seen: list[Request] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(self.command, self.path, dict(self.headers), self.rfile.read(length) if length else b"")
            seen.append(request)
            answer = responder(request)
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            try:
                if answer.trickle_s is not None:
                    self._trickle(answer)
                elif answer.size is not None:
                    self._huge(answer)
                else:
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up: what a deadline or a cap does

        def _trickle(self, answer: Answer) -> None:
            self.send_header("Content-Length", "10000")  # small enough for any body cap, hours to send
            self.end_headers()
            self.wfile.flush()
            while True:
                time.sleep(answer.trickle_s or 0)
                self.wfile.write(b" ")
                self.wfile.flush()

        def _huge(self, answer: Answer) -> None:
            size = answer.size or 0
            if answer.announce_length:
                self.send_header("Content-Length", str(size))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            chunk = b"[" + b"0," * (2**19 - 1)
            sent = 0
            while sent < size:
                piece = chunk[: min(len(chunk), size - sent)]
                self.wfile.write(piece)
                sent += len(piece)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False  # a trickling handler never ends by itself
    with serving(server) as url:
        yield Upstream(url, seen)
