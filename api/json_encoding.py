"""Big JSON answers compressed for the clients that ask (Accept-Encoding), at the fastest settings.

One offer's six months of history (benchmarks/every_question.py: 5,000 points) is 685 KB of JSON that
repeats itself point after point: zstd level 1 writes it in ~25 KB in ~0.5 ms of CPU, where sending it
as it is cost the server ~2 ms of the kernel's copies and the client ~2 ms of reading (httpx; a
browser's fetch likewise), on the loopback, before any network. So an answer of COMPRESS_FROM_BYTES or
more goes as zstd to clients that take it (httpx, Chromium and Firefox send `gzip, deflate, br, zstd`),
else brotli quality 1, else ISA-L's igzip level 1 (the `isal` package), else as it is; the client's
q-values decide (api.accept_encoding). Each decodes to the very bytes sent as they are. Such an answer
says `Vary: Accept-Encoding` whichever way it goes, so a cache keeps the ways apart; smaller answers go
as they are, with no Vary, as before. The pages (api.web.html) compress harder: they are kept and sent
again, where an answer is compressed for one client."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import brotli
import numpy as np
from isal import igzip

from api.accept_encoding import preferred
from api.kept_zstd import KeptZstd
from pricedb.scratch import Room

Pieces = Sequence[bytes | memoryview]  # an answer's bytes in order (a whole answer: one bytes)
Buffer = bytes | memoryview

COMPRESS_FROM_BYTES = 8192  # smaller answers go as they are: a few kernel copies cost less than a header
ZSTD_LEVEL = 1  # 685 KB of history: 25 KB in ~0.5 ms; level 3 writes 26 KB in ~1 ms
BROTLI_QUALITY = 1  # 31 KB in ~0.7 ms; quality 2 as small, twice as slow
GZIP_LEVEL = 1  # igzip: 34 KB in ~0.4 ms (the client's zlib then takes ~0.9 ms to read it)


_zstd = KeptZstd(ZSTD_LEVEL)  # its context (1.4 MB) made once, kept


def _brotli(body: Buffer) -> bytes:
    return brotli.compress(bytes(body), mode=brotli.MODE_TEXT, quality=BROTLI_QUALITY)


def _gzip(body: Buffer) -> bytes:
    return igzip.compress(body, GZIP_LEVEL, mtime=0)


# In the order preferred when the client weighs them the same: the smallest first.
CODINGS: dict[str, Callable[[Buffer], bytes]] = {"zstd": _zstd.compress, "br": _brotli, "gzip": _gzip}


@dataclass(frozen=True)
class EncodedJson:
    """A JSON answer as it goes to one client: its bytes, their Content-Encoding (None: as they are)
    and whether another client may get it otherwise (`Vary: Accept-Encoding`)."""

    body: bytes
    encoding: str | None = None
    varies: bool = False

    @property
    def headers(self) -> dict[str, str]:
        """The headers besides Content-Length and Content-Type."""
        found = {} if self.encoding is None else {"content-encoding": self.encoding}
        return {**found, "vary": "Accept-Encoding"} if self.varies else found

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """Every header, in the order a Starlette `Response(body, media_type="application/json",
        headers=self.headers)` sends them."""
        return [
            *((name.encode(), value.encode()) for name, value in self.headers.items()),
            (b"content-length", str(len(self.body)).encode()),
            (b"content-type", b"application/json"),
        ]


def encoded_json(parts: Pieces, accept_encoding: str, room: Room | None = None) -> EncodedJson:
    """The JSON whose bytes are `parts` (bytes, or memoryviews of bytes) as the client that sent
    `accept_encoding` takes it best. Compressed from one buffer (the compressors are slow to take
    hundreds of small pieces: ~8 µs each), gathered in `room` where it fits (pricedb.scratch), so an
    answer that goes compressed is never joined into a fresh mapping."""
    size = sum(map(len, parts))
    if size < COMPRESS_FROM_BYTES:
        return EncodedJson(b"".join(parts))
    coding = preferred(accept_encoding, CODINGS)
    if coding is None:
        return EncodedJson(b"".join(parts), varies=True)
    gathered = None if room is None else room.take(size)
    return EncodedJson(CODINGS[coding](b"".join(parts) if gathered is None else _gather(parts, gathered)), coding, True)


def _gather(parts: Pieces, into: np.ndarray) -> memoryview:
    """The pieces copied one after another into `into` (exactly their size)."""
    whole = memoryview(into)
    at = 0
    for part in parts:
        end = at + len(part)
        whole[at:end] = part
        at = end
    return whole


def accept_encoding_of(headers: list[tuple[bytes, bytes]]) -> str:
    """The Accept-Encoding of an ASGI scope's raw `headers` (several lines joined, as Starlette's
    `Headers.get` would not: it reads the first only), "" when none."""
    found = [value.decode("latin-1") for name, value in headers if name.lower() == b"accept-encoding"]
    return ", ".join(found)
