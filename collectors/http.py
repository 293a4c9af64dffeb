"""The one way collectors speak HTTP: a client factory and a small per-provider wrapper.

`Http` rewrites every URL through the provider's `GPUPRICE_<PROVIDER>_BASE_URL` (next-page links
included, since they pass through here too), retries transient failures (collectors.retry), and
turns whatever went wrong into a `FetchError` that says the status, the URL without its query and
the provider's own error words, with every credential redacted (pricedb.redact). Bodies are read in
chunks: one read whole larger than `GPUPRICE_HTTP_MAX_BODY_MB` fails the run instead of filling the
memory (large sources stream to a file with `download`). Requests that must be signed take a `sign` callback
that is applied to the final (rewritten) request on every attempt, so signatures and timestamps are
always fresh and match the host actually contacted.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from collectors.base import RawResponse
from collectors.error_words import words_of
from collectors.errors import FetchError
from collectors.retry import RETRYABLE_STATUS, RetryableStatus, RetryPolicy, with_retries
from pricedb import clock, redact, tls
from pricedb.settings import Settings
from pricedb.version import VERSION

USER_AGENT = f"gpuprice/{VERSION} (GPU rental price collector; https://github.com/gpuprice/gpuprice)"

Signer = Callable[[httpx.Request], None]
ERROR_BODY_BYTES = 64 * 1024  # of an error answer, enough for the provider's words
CHUNK_BYTES = 1 << 20  # reads of a streamed download


def make_client(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(settings.http_timeout_s, connect=min(10.0, settings.http_timeout_s)),
        limits=httpx.Limits(max_connections=settings.http_max_connections, max_keepalive_connections=5),
        headers={"User-Agent": USER_AGENT},
        follow_redirects=True,
        transport=transport,
        verify=tls.client_context(),
    )


def rewrite_url(url: str, base_url: str | None) -> str:
    """Replace scheme and host (and prefix any base path), keeping path and query."""
    if not base_url:
        return url
    base = urlsplit(base_url)
    target = urlsplit(url)
    path = base.path.rstrip("/") + target.path
    return urlunsplit((base.scheme, base.netloc, path, target.query, target.fragment))


class Http:
    def __init__(
        self,
        client: httpx.AsyncClient,
        provider: str,
        settings: Settings,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        workdir: Path | None = None,
    ) -> None:
        self.client = client
        self.workdir = workdir  # where `download` streams large bodies (the runner's temp dir)
        self.provider = provider
        self.base_url = None if settings.offline else settings.base_url_for(provider)
        self.policy = RetryPolicy(settings.retry_attempts, settings.retry_base_delay_s, settings.retry_max_delay_s)
        self.sleep = sleep
        self.max_body_bytes = settings.http_max_body_bytes
        redact.learn_settings(settings)  # whatever way the settings were made, their credentials are known

    def url(self, url: str) -> str:
        return rewrite_url(url, self.base_url)

    def _build(self, method: str, url: str, sign: Signer | None, **kwargs: Any) -> httpx.Request:
        request = self.client.build_request(method, self.url(url), **kwargs)
        if sign is not None:
            sign(request)
        return request

    async def request(self, method: str, url: str, *, sign: Signer | None = None, **kwargs: Any) -> httpx.Response:
        """Send with retries; the response is read (within the body cap) and has a 2xx status, else FetchError."""

        async def attempt() -> httpx.Response:
            response = await self.client.send(self._build(method, url, sign, **kwargs), stream=True)
            try:
                await self._read(response)
            finally:
                await response.aclose()
            if response.status_code in RETRYABLE_STATUS:
                raise RetryableStatus(response)
            return response

        response = await with_retries(attempt, self.policy, self.sleep)
        if response.is_error:
            raise http_error(response)
        return response

    async def _read(self, response: httpx.Response) -> None:
        """Read the body in chunks: whole within the cap, or (an error answer) its first 64 KiB."""
        limit = self.max_body_bytes if response.is_success else ERROR_BODY_BYTES
        declared = response.headers.get("content-length", "")
        if response.is_success and declared.isdigit() and int(declared) > limit:
            raise self._too_large(response, f"it announces {int(declared) / 2**20:.1f} MB")
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():  # as they arrive (64 KiB at most): the cap is exact
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                if response.is_success:
                    raise self._too_large(response, f"stopped reading at {size / 2**20:.1f} MB")
                break
        body = b"".join(chunks)
        # What `Response.aread()` does, bounded: the body read becomes the response's content.
        response._content = body if response.is_success else body[:ERROR_BODY_BYTES]

    def _too_large(self, response: httpx.Response, how: str) -> FetchError:
        cap = self.max_body_bytes / 2**20
        return FetchError(
            f"the answer from {redact.redact(str(response.request.url))} is larger than the body cap of "
            f"{cap:g} MB ({how}; GPUPRICE_HTTP_MAX_BODY_MB)"
        )

    async def fetch(self, method: str, url: str, *, label: str = "", **kwargs: Any) -> RawResponse:
        response = await self.request(method, url, **kwargs)
        return RawResponse(
            url=url,
            fetched_at=clock.now(),
            status=response.status_code,
            content_type=response.headers.get("content-type"),
            body=response.content,
            label=label,
        )

    async def get(self, url: str, *, label: str = "", **kwargs: Any) -> RawResponse:
        return await self.fetch("GET", url, label=label, **kwargs)

    async def download(
        self,
        url: str,
        *,
        label: str = "",
        keep_line: Callable[[bytes], bool] | None = None,
        sign: Signer | None = None,
    ) -> RawResponse:
        """Stream a large body to a file in `directory`, never holding it in memory. With
        `keep_line`, only the lines it accepts are written (a pre-filter for huge price files)."""
        directory = self.workdir if self.workdir is not None else Path(tempfile.gettempdir())

        async def attempt() -> Path:
            request = self._build("GET", url, sign)
            response = await self.client.send(request, stream=True)
            try:
                if response.status_code in RETRYABLE_STATUS:
                    await self._read(response)
                    raise RetryableStatus(response)
                if response.is_error:
                    await self._read(response)
                    raise http_error(response)
                handle = tempfile.NamedTemporaryFile(dir=directory, prefix=f"{self.provider}-", delete=False)  # noqa: SIM115 - closed below, kept on success
                try:
                    with handle:
                        if keep_line is None:
                            async for chunk in response.aiter_bytes(CHUNK_BYTES):
                                handle.write(chunk)
                        else:
                            async for line in _aiter_byte_lines(response):
                                if keep_line(line):
                                    handle.write(line)
                except BaseException:
                    Path(handle.name).unlink(missing_ok=True)  # a half-read body is never parsed
                    raise
                return Path(handle.name)
            finally:
                await response.aclose()

        path = await with_retries(attempt, self.policy, self.sleep)
        return RawResponse(url=url, fetched_at=clock.now(), path=path, label=label)


async def _aiter_byte_lines(response: httpx.Response) -> AsyncIterator[bytes]:
    """Lines as bytes (with their newline), from a streamed body, in 1 MiB reads."""
    pending = b""
    async for chunk in response.aiter_bytes(CHUNK_BYTES):
        chunk = pending + chunk
        cut = chunk.rfind(b"\n") + 1
        for line in chunk[:cut].splitlines(keepends=True):
            yield line
        pending = chunk[cut:]
    if pending:
        yield pending


def http_error(response: httpx.Response) -> FetchError:
    """'HTTP 401 from <URL without query>: <the provider's code and message, or an excerpt>', with
    every credential redacted; the redacted body rides along for collectors that read more of it."""
    body = redact.redact(response.content[:ERROR_BODY_BYTES].decode("utf-8", "replace"))
    where = redact.redact(str(response.request.url))
    words = words_of(body)
    return FetchError(
        f"HTTP {response.status_code} from {where}" + (f": {words}" if words else ""),
        status=response.status_code,
        body=body,
        url=where,
    )


def json_bytes(body: Any) -> bytes:
    """A JSON request body as compact bytes, the same every time (replay manifests match on them)."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
