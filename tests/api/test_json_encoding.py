"""A big JSON answer goes compressed as the client's Accept-Encoding weighs the codings, decodes to
the very bytes sent to a client that asks for none, says so in its headers (the ones a Starlette
response would send, in its order), and a small one goes as it is."""

from __future__ import annotations

import gzip
import itertools
import threading

import brotli
import pytest
import zstandard
from starlette.responses import Response

from api import json_encoding
from api.json_encoding import COMPRESS_FROM_BYTES, EncodedJson, accept_encoding_of, encoded_json
from pricedb.scratch import Scratch

ANSWER = b'{"points":[' + b",".join(b'{"observed_at":"2026-01-%02dT00:00:00Z","price":%d}' % (d % 28 + 1, d)
                                    for d in range(2_000)) + b"]}"  # fmt: skip
DECODERS = {
    "zstd": lambda body: zstandard.ZstdDecompressor().decompressobj().decompress(body),
    "br": brotli.decompress,
    "gzip": gzip.decompress,
}


def _pieces(body: bytes) -> list[bytes | memoryview]:
    """`body` cut in uneven pieces, some of them memoryviews, as api.history's `_body` gives them."""
    cuts = [0, 1, 70, 4_000, 4_001, len(body) // 2, len(body)]
    return [memoryview(body)[a:b] if k % 2 else body[a:b] for k, (a, b) in enumerate(itertools.pairwise(cuts))]


@pytest.mark.parametrize(
    ("accept_encoding", "coding"),
    [
        ("gzip, deflate, br, zstd", "zstd"),
        ("gzip, deflate, br", "br"),
        ("gzip, deflate", "gzip"),
        ("zstd;q=0.5, gzip", "gzip"),
        ("*", "zstd"),
        ("identity", None),
        ("deflate", None),
        ("", None),
    ],
)
@pytest.mark.parametrize("room_bytes", [None, 100, 2 * len(ANSWER)])  # none, too small, room to gather it
def test_a_big_answer_goes_as_the_client_takes_it(
    accept_encoding: str, coding: str | None, room_bytes: int | None
) -> None:
    assert len(ANSWER) >= COMPRESS_FROM_BYTES
    with Scratch(room_bytes or 1).held() as room:
        if room is not None:
            room.take(7)  # the answer's own arrays come first
        encoded = encoded_json(_pieces(ANSWER), accept_encoding, None if room_bytes is None else room)
    assert encoded.encoding == coding and encoded.varies
    if coding is None:
        assert encoded.body == ANSWER and encoded.headers == {"vary": "Accept-Encoding"}
    else:
        assert len(encoded.body) < len(ANSWER) // 4
        assert DECODERS[coding](encoded.body) == ANSWER
        assert encoded.headers == {"content-encoding": coding, "vary": "Accept-Encoding"}


def test_a_small_answer_goes_as_it_is() -> None:
    small = ANSWER[: COMPRESS_FROM_BYTES - 3] + b"]}"  # one byte short
    encoded = encoded_json(_pieces(small), "gzip, deflate, br, zstd")
    assert encoded == EncodedJson(small) and encoded.headers == {}


@pytest.mark.parametrize("accept_encoding", ["zstd", "identity"])
@pytest.mark.parametrize("size", [100, len(ANSWER)])
def test_the_headers_are_a_starlette_responses(accept_encoding: str, size: int) -> None:
    """api.front sends `raw_headers()` itself; the route sends a Response with `headers`: the same."""
    encoded = encoded_json([ANSWER[:size]], accept_encoding)
    response = Response(content=encoded.body, media_type="application/json", headers=encoded.headers)
    assert encoded.raw_headers() == response.raw_headers


def test_zstd_while_another_thread_holds_the_kept_compressor() -> None:
    with json_encoding._zstd.lock:  # another thread compressing: this one makes its own compressor
        done: list[EncodedJson] = []
        thread = threading.Thread(target=lambda: done.append(encoded_json(_pieces(ANSWER), "zstd")))
        thread.start()
        thread.join()
    assert DECODERS["zstd"](done[0].body) == ANSWER
    assert json_encoding._zstd.lock.acquire(blocking=False)  # and left the kept one free
    json_encoding._zstd.lock.release()


def test_accept_encoding_is_read_from_every_line_of_the_header() -> None:
    headers = [(b"host", b"x"), (b"Accept-Encoding", b"br;q=0.5"), (b"accept-encoding", b"zstd")]
    assert accept_encoding_of(headers) == "br;q=0.5, zstd"
    assert encoded_json([ANSWER], accept_encoding_of(headers)).encoding == "zstd"
    assert accept_encoding_of([(b"host", b"x")]) == ""
