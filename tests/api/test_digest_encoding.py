"""`/digest` goes compressed as the client's Accept-Encoding weighs the codings, like a history
answer (api.json_encoding): JSON and Markdown decode to the very bytes a client asking for none gets,
say `Vary: Accept-Encoding`, and a HEAD's Content-Length is the compressed body's."""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta

import brotli
import pytest
import zstandard

from api.json_encoding import COMPRESS_FROM_BYTES
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import make_quote, make_run, seed_fx, serving

DAY_ONE = datetime(2026, 11, 26, 4)  # noon in Shanghai, the digest's default zone
OFFERS = 150  # each changes its price on the second day: a digest of tens of KB

DECODERS = {
    "zstd": lambda body: zstandard.ZstdDecompressor().decompressobj().decompress(body),
    "br": brotli.decompress,
    "gzip": gzip.decompress,
}


@pytest.fixture
def changed(store: PriceStore) -> PriceStore:
    for day, price in ((0, 20.0), (1, 21.0)):
        at = DAY_ONE + timedelta(days=day)
        seed_fx(store, at.replace(hour=0))
        quotes = [make_quote(sku=f"p4d.{k}xlarge", price=price + k, observed_at=at) for k in range(OFFERS)]
        store.record_run(make_run("aws", quotes, finished_at=at))
    return store


@pytest.mark.parametrize("format_", ["json", "md"])
@pytest.mark.parametrize(
    ("accept_encoding", "coding"),
    [("gzip, deflate, br, zstd", "zstd"), ("gzip, br", "br"), ("gzip", "gzip"), ("identity", None)],
)
def test_a_big_digest_goes_as_the_client_takes_it(
    changed: PriceStore, settings: Settings, format_: str, accept_encoding: str, coding: str | None
) -> None:
    url = f"/digest?date=2026-11-27&format={format_}"
    with serving(settings, changed, DAY_ONE + timedelta(days=2)) as client:
        plain = client.get(url, headers={"accept-encoding": "identity"})
        with client.stream("GET", url, headers={"accept-encoding": accept_encoding}) as response:
            sent = b"".join(response.iter_raw())  # as sent, not decoded
        head = client.head(url, headers={"accept-encoding": accept_encoding})
    assert plain.status_code == response.status_code == head.status_code == 200
    assert len(plain.content) >= COMPRESS_FROM_BYTES and plain.content.count(b"p4d.") >= OFFERS
    assert response.headers.get("content-encoding") == coding and response.headers["vary"] == "Accept-Encoding"
    assert response.headers["content-type"] == plain.headers["content-type"]
    assert head.headers["content-length"] == str(len(sent)) and head.content == b""
    if coding is None:
        assert sent == plain.content
    else:
        assert len(sent) < len(plain.content) // 4 and DECODERS[coding](sent) == plain.content


def test_a_small_digest_goes_as_it_is(store: PriceStore, settings: Settings) -> None:
    seed_fx(store, DAY_ONE.replace(hour=0))
    store.record_run(make_run("aws", [make_quote(observed_at=DAY_ONE)], finished_at=DAY_ONE))
    with serving(settings, store, DAY_ONE + timedelta(days=2)) as client:
        response = client.get("/digest?date=2026-11-26", headers={"accept-encoding": "zstd"})
    assert response.status_code == 200 and len(response.content) < COMPRESS_FROM_BYTES
    assert "content-encoding" not in response.headers and "vary" not in response.headers
