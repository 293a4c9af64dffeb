"""Pages go as brotli at quality 4, and pages over 500 KB at quality 3 (a brotli view's time is
mostly brotli's; the market's pages stay under the 200 KB budget: benchmarks/pages.py prints them)."""

from __future__ import annotations

import brotli

from api.web.html import (
    BROTLI_LARGE_PAGE_BYTES,
    BROTLI_QUALITY,
    BROTLI_QUALITY_LARGE,
    BROTLI_WINDOW,
    Rendered,
    brotli_compressed,
)
from tests.web.test_gzip_level import page_of


def at(body: bytes, quality: int) -> bytes:
    return brotli.compress(body, mode=brotli.MODE_TEXT, quality=quality, lgwin=BROTLI_WINDOW)


def test_a_page_up_to_the_large_size_takes_the_usual_quality() -> None:
    body = page_of(BROTLI_LARGE_PAGE_BYTES)
    assert brotli_compressed(body) == at(body, BROTLI_QUALITY)
    assert at(body, BROTLI_QUALITY) != at(body, BROTLI_QUALITY_LARGE)  # the qualities write different bytes
    assert brotli.decompress(brotli_compressed(body)) == body


def test_a_larger_page_takes_the_faster_quality_and_decodes_to_the_page() -> None:
    body = page_of(BROTLI_LARGE_PAGE_BYTES + 1)
    rendered = Rendered(body)
    assert rendered.encoded_as("br") == at(body, BROTLI_QUALITY_LARGE)
    assert brotli.decompress(rendered.encoded_as("br")) == body
