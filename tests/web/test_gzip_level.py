"""Pages are compressed at zlib-ng level 3, and pages over 1.5 MB at level 5 (what keeps the 37-column
market of 2,000 offers under the 200 KB budget; benchmarks/pages.py prints the sizes)."""

from __future__ import annotations

import gzip

from zlib_ng import gzip_ng

from api.web.html import GZIP_LEVEL, GZIP_LEVEL_LARGE, LARGE_PAGE_BYTES, gzipped


def page_of(size: int) -> bytes:
    """Table rows as the market writes them, each with its own figure (exact and as shown), `size` bytes."""
    rows = bytearray()
    number = 0
    while len(rows) < size:
        value = number / 7
        rows += f"<tr data-k={number}><td>verda<td data-v={value!r}>{value:.4f}</tr>\n".encode()
        number += 1
    return bytes(rows[:size])


def test_a_page_up_to_the_large_size_takes_the_usual_level() -> None:
    body = page_of(LARGE_PAGE_BYTES)
    assert gzipped(body) == gzip_ng.compress(body, GZIP_LEVEL, mtime=0)
    assert gzip.decompress(gzipped(body)) == body


def test_a_larger_page_takes_the_stronger_level_and_comes_out_smaller() -> None:
    body = page_of(LARGE_PAGE_BYTES + 1)
    assert gzipped(body) == gzip_ng.compress(body, GZIP_LEVEL_LARGE, mtime=0)
    assert len(gzipped(body)) < len(gzip_ng.compress(body, GZIP_LEVEL, mtime=0))
    assert gzip.decompress(gzipped(body)) == body
