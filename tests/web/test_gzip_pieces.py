"""A gzip member written in pieces at once (api.web.gzip_pieces) is one member that every gzip reader
reads back as the body, for any size and cut (empty pieces, a piece shorter than the window, cuts at
the window's edge), the same bytes whichever thread wrote which piece, about as small as one stream;
the pool's thread takes pieces when it is free, a busy pool never holds the page up, nor a pool thread
that never finishes its piece; a body goes in pieces only where a core is spare."""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator

import pytest
from zlib_ng import gzip_ng

from api.web import gzip_pieces
from api.web.gzip_pieces import WINDOW, gzip_in_pieces, pieces_for
from tests.web.test_gzip_level import noisy_page_of, page_of

SIZES = [0, 1, 2, 3, 7, 100, WINDOW - 1, WINDOW, WINDOW + 1, 2 * WINDOW, 2 * WINDOW + 1, 3 * WINDOW + 5, 300_001]


def read_back(member: bytes) -> bytes:
    """The body of `member`, read as exactly one gzip member (no bytes after it)."""
    reader = zlib.decompressobj(31)
    body = reader.decompress(member) + reader.flush()
    assert reader.eof and reader.unused_data == b""
    assert gzip.decompress(member) == body
    return body


@pytest.fixture
def one_helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A pool of one thread and a core spare for it, whatever the host's cores and load."""
    monkeypatch.setattr(gzip_pieces, "HELPERS", 1)
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: 1.0)
    gzip_pieces._pool.cache_clear()
    yield
    gzip_pieces._pool().shutdown(wait=True)
    gzip_pieces._pool.cache_clear()


@pytest.mark.parametrize("size", SIZES)
def test_every_size_and_cut_reads_back_as_the_body(size: int) -> None:
    body = noisy_page_of(size)
    # More pieces than bytes (empty pieces) on the small sizes; on the big ones, pieces far shorter
    # than the window, each primed from several before it. One piece per byte of a big body would
    # only repeat that, at a 32 KB dictionary per byte (48 s for the largest).
    for pieces in (1, 2, 3, 4, 7, min(size + 2, 97)):
        for level in (1, 4):
            assert read_back(gzip_in_pieces(body, level, pieces)) == body, (size, pieces, level)


def test_the_header_has_no_timestamp_and_the_trailer_the_whole_body_s_crc_and_size() -> None:
    body = page_of(200_000)
    member = gzip_in_pieces(body, 4, 3)
    assert member[:10] == gzip_ng.compress(body, 4, mtime=0)[:10]
    assert member[-8:] == zlib.crc32(body).to_bytes(4, "little") + len(body).to_bytes(4, "little")


def test_one_piece_is_the_one_stream_zlib_ng_writes() -> None:
    body = page_of(150_000)
    assert gzip_in_pieces(body, 4, 1) == gzip_ng.compress(body, 4, mtime=0)


def test_pieces_primed_with_the_window_before_them_write_about_what_one_stream_does() -> None:
    body = page_of(1_000_000)
    one = len(gzip_ng.compress(body, 4, mtime=0))
    unprimed = sum(len(gzip_ng.compress(body[i * 250_000 : (i + 1) * 250_000], 4, mtime=0)) for i in range(4))
    assert len(gzip_in_pieces(body, 4, 4)) < min(one * 1.002, unprimed)


def test_pieces_go_to_the_pool_when_it_is_free_and_give_the_same_bytes(one_helper: None) -> None:
    body = noisy_page_of(600_000)
    taken_by: list[tuple[int, str]] = []
    helped = threading.Event()
    piece = gzip_pieces._piece

    def recorded(view: memoryview, start: int, end: int, level: int, last: bool) -> bytes:
        taken_by.append((start, threading.current_thread().name))
        if threading.current_thread() is threading.main_thread():
            helped.wait(30)  # the first piece waits for the pool's thread to take another
        else:
            helped.set()
        return piece(view, start, end, level, last)

    alone = gzip_in_pieces(body, 4, 4)
    gzip_pieces._piece = recorded  # type: ignore[assignment]
    try:
        together = gzip_in_pieces(body, 4, 4)
    finally:
        gzip_pieces._piece = piece  # type: ignore[assignment]
    assert together == alone and read_back(together) == body
    assert {name.startswith("gzip-piece") for _, name in taken_by} == {True, False}
    assert {start for start, _ in taken_by} == {len(body) * i // 4 for i in range(4)}


def test_a_busy_pool_leaves_every_piece_to_the_calling_thread(one_helper: None) -> None:
    body = noisy_page_of(600_000)
    release = threading.Event()
    busy = gzip_pieces._pool().submit(release.wait, 60)
    try:
        member = gzip_in_pieces(body, 4, 4)
        assert not busy.done()  # the page did not wait for the pool's thread
    finally:
        release.set()
    assert busy.result() is True
    assert read_back(member) == body and member == gzip_in_pieces(body, 4, 4)


def test_a_pool_thread_that_does_not_finish_its_piece_does_not_hold_the_page_up(one_helper: None) -> None:
    body = noisy_page_of(600_000)
    alone = gzip_in_pieces(body, 4, 4)
    stuck, release = threading.Event(), threading.Event()
    piece = gzip_pieces._piece

    def stalled(view: memoryview, start: int, end: int, level: int, last: bool) -> bytes:
        if threading.current_thread() is not threading.main_thread():
            stuck.set()
            release.wait(60)  # as a thread without a core: its piece comes after the page is sent
        else:
            stuck.wait(30)  # the pool's thread has taken its piece
        return piece(view, start, end, level, last)

    gzip_pieces._piece = stalled  # type: ignore[assignment]
    try:
        member = gzip_in_pieces(body, 4, 4)
        assert not release.is_set()
    finally:
        release.set()
        gzip_pieces._piece = piece  # type: ignore[assignment]
    assert member == alone and read_back(member) == body


def test_a_page_is_cut_in_pieces_for_the_threads_there_are_while_a_core_is_spare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(gzip_pieces, "HELPERS", 1)
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: 1.0)
    assert pieces_for(1_600_000) == 2 * gzip_pieces.PIECES_PER_THREAD
    assert pieces_for(gzip_pieces.PIECE_BYTES * 3) == 3
    assert pieces_for(gzip_pieces.PIECE_BYTES * 2 - 1) == pieces_for(100) == 1
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: gzip_pieces.MIN_SPARE)  # this thread and a core free
    assert pieces_for(1_600_000) == 2 * gzip_pieces.PIECES_PER_THREAD
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: gzip_pieces.MIN_SPARE - 0.1)  # the cores busy: one stream
    assert pieces_for(1_600_000) == 1
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: 1.0)
    monkeypatch.setattr(gzip_pieces, "HELPERS", 0)  # one core: no other thread to take a piece
    assert pieces_for(1_600_000) == 1


def test_spare_cores_are_the_cores_the_load_average_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzip_pieces.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(gzip_pieces.os, "getloadavg", lambda: (2.5, 1.0, 1.0))
    assert gzip_pieces.spare_cores() == 1.5
    monkeypatch.delattr(gzip_pieces.os, "getloadavg")  # a system that does not tell: none spare
    assert gzip_pieces.spare_cores() == 0.0
