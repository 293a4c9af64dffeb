"""The kept zstd compressor: one per level, a fresh one for a thread that finds it busy, the same frame either way."""

from __future__ import annotations

import threading

import zstandard

from api import json_encoding
from api.kept_zstd import KeptZstd
from api.web import html

BODY = b'{"observed_at":"2026-06-01T00:00:00Z","price":2.48},' * 4000


def test_a_busy_compressor_gives_way_to_a_fresh_one_writing_the_same_frame() -> None:
    kept = KeptZstd(3)
    alone = kept.compress(BODY)
    with kept.lock:  # another thread compressing
        found: list[bytes] = []
        thread = threading.Thread(target=lambda: found.append(kept.compress(BODY)))
        thread.start()
        thread.join()
    assert found == [alone]
    assert zstandard.ZstdDecompressor().decompress(alone) == BODY
    assert kept.lock.acquire(blocking=False)  # the kept one left free
    kept.lock.release()


def test_pages_and_answers_keep_one_compressor_each_at_their_level() -> None:
    assert isinstance(html._zstd, KeptZstd) and html._zstd.level == html.ZSTD_LEVEL
    assert isinstance(json_encoding._zstd, KeptZstd) and json_encoding._zstd.level == json_encoding.ZSTD_LEVEL
    pages: list[bytes] = []
    threads = [threading.Thread(target=lambda: pages.append(html.zstd_compressed(BODY))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(pages)) == 1 and zstandard.ZstdDecompressor().decompress(pages[0]) == BODY
