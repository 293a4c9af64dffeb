"""Pages go zstd-compressed to clients that take zstd, brotli to those that take br but not zstd, gzip
to those that take only gzip, and as they are to the rest; the client's q-values decide, each
encoding decodes to the same page, and the cache charges every encoding it keeps."""

from __future__ import annotations

import gzip

import brotli
import pytest
import zstandard
from fastapi.testclient import TestClient
from starlette.requests import Request

from api.byte_cache import size_of
from api.web.html import SMALLEST_COMPRESSED, Rendered, chosen_encoding
from tests.web.conftest import WebRound
from tests.web.test_pages import HTML, page_urls

CHROMIUM = "gzip, deflate, br, zstd"
SAFARI = "gzip, deflate, br"  # over HTTPS
LARGE = SMALLEST_COMPRESSED + 1


def request_with(accept_encoding: str | None) -> Request:
    headers = [] if accept_encoding is None else [(b"accept-encoding", accept_encoding.encode())]
    return Request({"type": "http", "method": "GET", "path": "/", "query_string": b"", "headers": headers})


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        (CHROMIUM, "zstd"),
        (SAFARI, "br"),
        ("br", "br"),
        ("BR", "br"),
        ("br;q=0, gzip", "gzip"),
        ("gzip;q=0.9, br;q=0.5", "gzip"),
        ("gzip;q=0.5, br;q=0.9", "br"),
        ("gzip, br, zstd;q=0.5", "br"),  # zstd weighed lower than br
        ("br;q=0.5, zstd;q=0.5, gzip;q=0.5", "zstd"),  # equal: zstd, then br, then gzip
        ("br;q=0.5, gzip;q=0.5", "br"),
        ("zstd;q=0, br;q=0, *", "gzip"),
        ("gzip, deflate", "gzip"),
        ("gzip", "gzip"),
        ("zstd", "zstd"),
        ("ZSTD", "zstd"),
        ("zstd;q=0, gzip", "gzip"),
        ("zstd; q=0.0, gzip", "gzip"),
        ("gzip;q=0.9, zstd;q=0.5", "gzip"),
        ("gzip;q=0.5, zstd;q=0.9", "zstd"),
        ("gzip;q=0.5, zstd;q=0.5", "zstd"),  # equal: the smaller one
        ("*", "zstd"),
        ("zstd;q=0, *", "br"),
        ("*;q=0, gzip", "gzip"),
        ("gzip;q=0, zstd;q=0", None),
        ("gzip;q=bad", None),
        ("deflate", None),
        ("identity", None),
        ("", None),
        (None, None),
    ],
)
def test_the_encoding_follows_the_clients_weights(header: str | None, chosen: str | None) -> None:
    assert chosen_encoding(request_with(header), LARGE) == chosen


def test_a_small_page_goes_as_it_is() -> None:
    assert chosen_encoding(request_with(CHROMIUM), SMALLEST_COMPRESSED) is None


def test_a_page_is_compressed_once_per_encoding_and_charged_for_each() -> None:
    rendered = Rendered.of("<tr><td>verda</tr>\n" * 2000)
    assert size_of(rendered) == len(rendered.body)
    zstd_bytes = rendered.encoded_as("zstd")
    assert rendered.encoded_as("zstd") is zstd_bytes
    assert zstandard.ZstdDecompressor().decompress(zstd_bytes) == rendered.body
    assert gzip.decompress(rendered.compressed) == rendered.body
    brotli_bytes = rendered.encoded_as("br")
    assert rendered.encoded_as("br") is brotli_bytes and brotli.decompress(brotli_bytes) == rendered.body
    assert size_of(rendered) == len(rendered.body) + len(zstd_bytes) + len(rendered.compressed) + len(brotli_bytes)
    assert rendered.encoded_as(None) is rendered.body


def raw_get(client: TestClient, url: str, accept_encoding: str) -> tuple[dict[str, str], bytes]:
    with client.stream("GET", url, headers={**HTML, "accept-encoding": accept_encoding}) as answer:
        assert answer.status_code == 200, url
        return dict(answer.headers), b"".join(answer.iter_raw())


DECODE = {"zstd": zstandard.ZstdDecompressor().decompress, "br": brotli.decompress, "gzip": gzip.decompress}


def test_every_page_decodes_to_the_same_bytes_in_every_encoding(client: TestClient, web_round: WebRound) -> None:
    for url in [*page_urls(web_round), "/market.csv", "/market.md"]:
        plain_headers, plain = raw_get(client, url, "identity")
        assert "content-encoding" not in plain_headers and len(plain) > SMALLEST_COMPRESSED, url
        cases = ((CHROMIUM, "zstd"), (SAFARI, "br"), ("gzip", "gzip"), ("zstd;q=0, gzip", "gzip"), ("zstd", "zstd"))
        for header, encoding in cases:
            headers, raw = raw_get(client, url, header)
            assert headers["content-encoding"] == encoding, (url, header)
            assert "Accept-Encoding" in headers["vary"], url
            assert int(headers["content-length"]) == len(raw) < len(plain), (url, header)
            assert DECODE[encoding](raw) == plain, (url, header)
            assert {k: v for k, v in headers.items() if k not in ("content-encoding", "content-length")} == {
                k: v for k, v in plain_headers.items() if k != "content-length"
            }, url


def test_a_page_shown_before_is_served_from_the_cache_in_each_encoding(client: TestClient) -> None:
    url = "/?cur=EUR&sort=price"
    headers = (CHROMIUM, SAFARI, "gzip", "identity")
    first = {header: raw_get(client, url, header)[1] for header in headers}
    again = {header: raw_get(client, url, header)[1] for header in headers}
    assert first == again
    entries = client.app.state.gpuprice._answers._entries.values()
    kept = [e for e in entries if isinstance(e.value, tuple) and e.value and isinstance(e.value[0], Rendered)]
    shown = [e for e in kept if e.value[0].encoded.get("zstd") == first[CHROMIUM]]
    assert len(shown) == 1
    page = shown[0].value[0]
    assert page.encoded["gzip"] == first["gzip"] and page.encoded["br"] == first[SAFARI]
    assert page.body == first["identity"]
    assert shown[0].size >= sum(map(len, first.values()))  # refit: every encoding kept is charged


def test_head_answers_like_get_in_each_encoding(client: TestClient) -> None:
    for header in (CHROMIUM, SAFARI, "gzip", "zstd;q=0"):
        headers = {**HTML, "accept-encoding": header}
        got, head = client.get("/", headers=headers), client.head("/", headers=headers)
        assert head.status_code == got.status_code == 200
        assert head.content == b"" and head.headers == got.headers, header
