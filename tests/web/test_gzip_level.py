"""Pages are compressed at zlib-ng level 3, and pages over 1.5 MB at level 4 (what keeps the 37-column
market of 2,000 offers under the 200 KB budget; benchmarks/pages.py prints the sizes); pages over
500 KB that ISA-L's igzip writes small enough go by igzip instead (html.fast_if_small), the others by
zlib-ng in pieces at once (api.web.gzip_pieces)."""

from __future__ import annotations

import gzip
import random

import pytest
from isal import igzip
from zlib_ng import gzip_ng

from api.web import gzip_pieces
from api.web.gzip_pieces import PIECE_BYTES, gzip_in_pieces
from api.web.html import (
    FAST_ENOUGH_BYTES,
    FAST_FROM_BYTES,
    FAST_MOST_BYTES,
    GZIP_FAST_LEVEL,
    GZIP_LEVEL,
    GZIP_LEVEL_LARGE,
    LARGE_PAGE_BYTES,
    PROBE_SHARE,
    fast_if_small,
    gzipped,
)


def page_of(size: int) -> bytes:
    """Table rows as the market writes them, each with its own figure (exact and as shown), `size` bytes."""
    rows = bytearray()
    number = 0
    while len(rows) < size:
        value = number / 7
        rows += f"<tr data-k={number}><td>verda<td data-v={value!r}>{value:.4f}</tr>\n".encode()
        number += 1
    return bytes(rows[:size])


def even_page_of(size: int) -> bytes:
    """Rows of a few texts repeating (a few per cent of their bytes compressed, even by the fast settings)."""
    rows = b"".join(f"<tr data-k={n % 97}><td>verda<td>{n % 13}.5</tr>\n".encode() for n in range(size // 20 + 1))
    return rows[:size]


def noisy_page_of(size: int) -> bytes:
    """Rows of figures with no order (a third of their bytes or more compressed: too many for the fast settings)."""
    draw = random.Random(13)
    rows = bytearray()
    while len(rows) < size:
        value = draw.random()
        rows += f"<tr data-k={draw.randrange(10**6)}><td data-v={value!r}>{value:.4f}</tr>\n".encode()
    return bytes(rows[:size])


def at(body: bytes, level: int) -> bytes:
    return gzip_ng.compress(body, level, mtime=0)


def test_a_page_up_to_the_fast_size_takes_the_usual_level() -> None:
    body = page_of(FAST_FROM_BYTES)
    assert gzipped(body) == at(body, GZIP_LEVEL)
    assert gzip.decompress(gzipped(body)) == body


def test_a_larger_page_that_compresses_well_goes_by_igzip() -> None:
    body = even_page_of(LARGE_PAGE_BYTES + 1)
    assert gzipped(body) == igzip.compress(body, GZIP_FAST_LEVEL, mtime=0) != at(body, GZIP_LEVEL_LARGE)
    assert gzip.decompress(gzipped(body)) == body


def test_a_larger_page_that_does_not_takes_zlib_ng_in_pieces_and_over_the_large_size_the_stronger_level() -> None:
    body = noisy_page_of(LARGE_PAGE_BYTES)
    assert gzipped(body) == gzip_in_pieces(body, GZIP_LEVEL)
    larger = noisy_page_of(LARGE_PAGE_BYTES + 1)
    assert gzipped(larger) == gzip_in_pieces(larger, GZIP_LEVEL_LARGE)
    assert len(gzipped(larger)) < len(gzip_in_pieces(larger, GZIP_LEVEL))
    assert gzip.decompress(gzipped(larger)) == larger


def test_pages_of_two_pieces_go_in_pieces_and_smaller_ones_in_one_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_pieces, "HELPERS", 1)  # a core to spare, whatever the host's cores and load
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: 1.0)
    draw = random.Random(5)
    unlike = bytes(draw.randrange(256) for _ in range(2 * PIECE_BYTES))  # too large for any fast setting
    assert gzipped(unlike) == gzip_in_pieces(unlike, GZIP_LEVEL, 2) != at(unlike, GZIP_LEVEL)
    assert gzip.decompress(gzipped(unlike)) == unlike
    assert gzipped(unlike[:-1]) == at(unlike[:-1], GZIP_LEVEL)


def test_a_fast_setting_that_writes_too_much_after_all_gives_way_to_the_strong_one() -> None:
    body = page_of(FAST_FROM_BYTES * 2)

    def fast(data: bytes) -> bytes:  # small for the probe's eighth, too large for the whole page
        return b"f" * (10 if len(data) < len(body) else FAST_MOST_BYTES)

    assert fast_if_small(body, fast, lambda data: b"strong") == b"strong"
    assert fast_if_small(body, lambda data: b"f" * (FAST_ENOUGH_BYTES // 8 - 1), lambda data: b"s") == b"f" * (
        FAST_ENOUGH_BYTES // 8 - 1
    )


def test_a_probe_that_reads_high_still_lets_a_fast_setting_that_fits_through() -> None:
    # The market sorted by price: brotli quality 1's eighth reads ~16% over what the whole page gets.
    body = page_of(FAST_FROM_BYTES * 2)
    whole = FAST_MOST_BYTES - 10_000
    eighth = int(whole * 1.16) // PROBE_SHARE

    def fast(data: bytes) -> bytes:
        return b"f" * (eighth if len(data) < len(body) else whole)

    assert fast_if_small(body, fast, lambda data: b"strong") == b"f" * whole
