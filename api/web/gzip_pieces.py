"""One gzip member written in pieces at once, pigz's way: the body cut in pieces, each compressed
as raw deflate by zlib-ng (which lets go of the GIL while it compresses), each primed with the 32 KB
before it as its dictionary (deflate's whole window, so a piece finds the same matches one stream
would, but for a few bytes at its start) and ended on a byte boundary (`Z_SYNC_FLUSH`), the last one
ended (`Z_FINISH`); then one header, the pieces, and the CRC-32 and size of the whole body. Any gzip
reader reads it as the one member it is, and the same body gives the same bytes.

The calling thread and the threads of a small pool of its own (one per other core, made on its first
use) take the pieces in turn, each the next one no thread has taken: on a host with a core to spare
the gzip of the 37-column market of 2,000 offers (1.6 MB, ~10 ms at level 4) takes about half as long
to wait for; on one whose cores are busy the calling thread writes most pieces itself and waits at
most for the one a pool thread took. Either way the CPU in all is a single stream's and a little more
(benchmarks/pages.py prints wall and every thread's CPU)."""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache

from zlib_ng import zlib_ng

WINDOW = 32_768  # deflate's window: what a piece may refer back to, so what primes the next one
HEADER = bytes((0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF))  # deflate, no timestamp, OS unknown (as gzip_ng writes)
HELPERS = max(0, min(3, (os.cpu_count() or 1) - 1))  # the pool's threads: the other cores, at most 3
# Pieces per thread that takes them: a thread descheduled mid-piece holds the page up by one piece;
# each piece costs a new compressor and its primed window (4 pieces of 1.6 MB: ~3% more CPU than one).
PIECES_PER_THREAD = 2
PIECE_BYTES = 256 * 1024  # the smallest piece worth a compressor of its own


@cache  # no arguments: one pool, made on the first page compressed in pieces
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, HELPERS), thread_name_prefix="gzip-piece")


def _piece(body: memoryview, start: int, end: int, level: int, last: bool) -> bytes:
    """`body[start:end]` as raw deflate, primed with the window before it, ended where the next piece
    can follow (or, the `last`, ended)."""
    primed = {"zdict": body[max(0, start - WINDOW) : start]} if start else {}
    deflate = zlib_ng.compressobj(level, zlib_ng.DEFLATED, -15, **primed)  # -15: raw deflate, a 32 KB window
    return deflate.compress(body[start:end]) + deflate.flush(zlib_ng.Z_FINISH if last else zlib_ng.Z_SYNC_FLUSH)


def pieces_for(size: int) -> int:
    """How many pieces a body of `size` bytes is cut in (one where no other core would take any)."""
    return max(1, min((HELPERS + 1) * PIECES_PER_THREAD, size // PIECE_BYTES)) if HELPERS else 1


def gzip_in_pieces(body: bytes, level: int, pieces: int | None = None) -> bytes:
    """`body` as one gzip member (no timestamp), in `pieces` (default: `pieces_for` its size) compressed
    at zlib-ng's `level` by this thread and the pool's, each taking the next piece not taken."""
    count = pieces_for(len(body)) if pieces is None else pieces
    view = memoryview(body)
    cuts = [len(body) * i // count for i in range(count + 1)]
    written: list[bytes] = [b""] * count
    turns = iter(range(count))  # next() on it is atomic under the GIL: each piece goes to one thread

    def take_turns() -> None:
        for i in turns:
            written[i] = _piece(view, cuts[i], cuts[i + 1], level, i == count - 1)

    helping: list[Future[None]] = [_pool().submit(take_turns) for _ in range(min(HELPERS, count - 1))]
    take_turns()
    for helper in helping:
        if not helper.cancel():  # one that started: wait for the piece it took (it found none, else)
            helper.result()
    trailer = zlib_ng.crc32(body).to_bytes(4, "little") + (len(body) % 2**32).to_bytes(4, "little")
    return b"".join([HEADER, *written, trailer])
