"""One gzip member written in pieces at once, pigz's way: the body cut in pieces, each compressed
as raw deflate by zlib-ng (which lets go of the GIL while it compresses), each primed with the 32 KB
before it as its dictionary (deflate's whole window, so a piece finds the same matches one stream
would, but for a few bytes at its start) and ended on a byte boundary (`Z_SYNC_FLUSH`), the last one
ended (`Z_FINISH`); then one header, the pieces, and the CRC-32 and size of the whole body. Any gzip
reader reads it as the one member it is, and the same body gives the same bytes.

The calling thread and the threads of a small pool of its own (one per other core, made on its first
use) take the pieces in turn, each the next one no thread has taken: where a core is free, the gzip
of the 37-column market of 2,000 offers (1.6 MB, ~10 ms at level 4) takes about half as long to wait
for. Where the cores are busy it would not: a pool thread waits for a core, and two threads on
shared cores took 8-50% more CPU than one stream (benchmarks/pages.py, on a host whose load was
twice its cores). So pieces go to the pool only while the last minute's load average leaves half a
core or more (`spare_cores`, `MIN_SPARE`): that average counts the thread asking too, so a server busy
with nothing but its pages reads ~1 on two cores, the other core idle; and the calling thread, done
with the pieces it took, waits for a pool thread's piece only as long as writing it itself would
take, then writes it too: a page waits on a thread that has no core for at most one piece's time."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor, wait
from functools import cache

from zlib_ng import zlib_ng

WINDOW = 32_768  # deflate's window: what a piece may refer back to, so what primes the next one
HEADER = bytes((0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF))  # deflate, no timestamp, OS unknown (as gzip_ng writes)
HELPERS = max(0, min(3, (os.cpu_count() or 1) - 1))  # the pool's threads: the other cores, at most 3
# Pieces per thread that takes them: a thread descheduled mid-piece holds the page up by one piece;
# each piece costs a new compressor and its primed window (4 pieces of 1.6 MB: ~3% more CPU than one).
PIECES_PER_THREAD = 2
PIECE_BYTES = 256 * 1024  # the smallest piece worth a compressor of its own
MIN_SPARE = 0.5  # cores the load average must leave: it counts the asking thread itself (~1 when busy)


@cache  # no arguments: one pool, made on the first page compressed in pieces
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, HELPERS), thread_name_prefix="gzip-piece")


def _piece(body: memoryview, start: int, end: int, level: int, last: bool) -> bytes:
    """`body[start:end]` as raw deflate, primed with the window before it, ended where the next piece
    can follow (or, the `last`, ended)."""
    primed = {"zdict": body[max(0, start - WINDOW) : start]} if start else {}
    deflate = zlib_ng.compressobj(level, zlib_ng.DEFLATED, -15, **primed)  # -15: raw deflate, a 32 KB window
    return deflate.compress(body[start:end]) + deflate.flush(zlib_ng.Z_FINISH if last else zlib_ng.Z_SYNC_FLUSH)


def spare_cores() -> float:
    """The cores the last minute's load average left free (none known where the system does not tell it)."""
    load = getattr(os, "getloadavg", None)
    return (os.cpu_count() or 1) - load()[0] if load is not None else 0.0


def pieces_for(size: int) -> int:
    """How many pieces a body of `size` bytes is cut in: one where no other core would take any."""
    if not HELPERS or size < 2 * PIECE_BYTES or spare_cores() < MIN_SPARE:
        return 1
    return min((HELPERS + 1) * PIECES_PER_THREAD, size // PIECE_BYTES)


def gzip_in_pieces(body: bytes, level: int, pieces: int | None = None) -> bytes:
    """`body` as one gzip member (no timestamp), in `pieces` (default: `pieces_for` its size) compressed
    at zlib-ng's `level` by this thread and the pool's, each taking the next piece not taken."""
    count = pieces_for(len(body)) if pieces is None else pieces
    view = memoryview(body)
    cuts = [len(body) * i // count for i in range(count + 1)]
    written: list[bytes | None] = [None] * count
    turns = iter(range(count))  # next() on it is atomic under the GIL: each piece goes to one thread

    def write(i: int) -> bytes:
        return _piece(view, cuts[i], cuts[i + 1], level, i == count - 1)

    def take_turns() -> float:
        """Write the pieces not taken yet; the seconds the last one took (0: none)."""
        took = 0.0
        for i in turns:
            started = time.perf_counter()
            written[i] = write(i)
            took = time.perf_counter() - started
        return took

    helping = [_pool().submit(take_turns) for _ in range(min(HELPERS, count - 1))]
    piece_s = take_turns()
    for helper in helping:
        if not helper.cancel():  # one not started finds no piece left anyway
            wait((helper,), timeout=piece_s)  # its last piece: as long as writing it here would take
    # A piece a pool thread is still writing (its thread has no core): written here too, the same bytes.
    pieces = [piece if piece is not None else write(i) for i, piece in enumerate(list(written))]
    trailer = zlib_ng.crc32(body).to_bytes(4, "little") + (len(body) % 2**32).to_bytes(4, "little")
    return b"".join([HEADER, *pieces, trailer])
