"""HEAD wherever GET: a HEAD request is answered as the GET would be, headers only.

HTTP defines HEAD as GET without the body, so clients (link checkers, `curl -I`, caches revalidating
an export) may send it to any GET route. The request is routed as a GET; the answer's status and
headers (Content-Length, ETag, Content-Type) are passed on and its body is dropped."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
