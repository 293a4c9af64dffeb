"""Pages go as brotli at quality 4, and pages over 500 KB at quality 3 (a brotli view's time is
mostly brotli's; the market's pages stay under the 200 KB budget: benchmarks/pages.py prints them),
or at quality 1 where that writes them small enough (html.fast_if_small)."""

from __future__ import annotations

import brotli

from api.web.html import (
    BROTLI_FAST_QUALITY,
    BROTLI_QUALITY,
    BROTLI_QUALITY_LARGE,
    BROTLI_WINDOW,
    FAST_FROM_BYTES,
    Rendered,
    brotli_compressed,
)
from tests.web.test_gzip_level import even_page_of, noisy_page_of, page_of


def at(body: bytes, quality: int) -> bytes:
    return brotli.compress(body, mode=brotli.MODE_TEXT, quality=quality, lgwin=BROTLI_WINDOW)


def test_a_page_up_to_the_large_size_takes_the_usual_quality() -> None:
    body = page_of(FAST_FROM_BYTES)
    assert brotli_compressed(body) == at(body, BROTLI_QUALITY)
    assert at(body, BROTLI_QUALITY) != at(body, BROTLI_QUALITY_LARGE)  # the qualities write different bytes
    assert brotli.decompress(brotli_compressed(body)) == body


def test_a_larger_page_takes_the_fast_quality_where_it_writes_it_small_enough() -> None:
    body = even_page_of(FAST_FROM_BYTES + 1)
    rendered = Rendered(body)
    assert rendered.encoded_as("br") == at(body, BROTLI_FAST_QUALITY) != at(body, BROTLI_QUALITY_LARGE)
    assert brotli.decompress(rendered.encoded_as("br")) == body


def test_a_larger_page_that_compresses_badly_takes_the_faster_of_the_strong_qualities() -> None:
    body = noisy_page_of(3 * FAST_FROM_BYTES)
    assert brotli_compressed(body) == at(body, BROTLI_QUALITY_LARGE)
    assert brotli.decompress(brotli_compressed(body)) == body
