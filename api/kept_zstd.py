"""One zstd compressor kept per level, for the pages (api.web.html) and the big JSON answers
(api.json_encoding), and one decompressor, for the history's frames (api.history_frames). A
compressor's context is megabytes that are slow to fault in, so it is made once and kept; it must not
be used by two threads at once, so a thread that finds it busy makes a fresh one for its answer and
lets it go. One per level, not one per worker thread: the thread pool has up to 40 threads, and a
context each would hold ~40 times its size outside the memory budget."""

from __future__ import annotations

import threading

import zstandard


class KeptZstd:
    def __init__(self, level: int) -> None:
        self.level = level
        self.lock = threading.Lock()
        self._kept = zstandard.ZstdCompressor(level=level)

    def compress(self, body: bytes | memoryview) -> bytes:
        """`body` as one zstd frame (with its size, no checksum: the same bytes give the same frame)."""
        if not self.lock.acquire(blocking=False):
            return zstandard.ZstdCompressor(level=self.level).compress(body)
        try:
            return self._kept.compress(body)
        finally:
            self.lock.release()


class KeptUnzstd:
    """A decompressor kept, as KeptZstd keeps a compressor (a thread finding it busy makes its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._kept = zstandard.ZstdDecompressor()

    def decompress_into(self, frame: bytes, into: memoryview) -> bool:
        """Whether one whole frame's content filled `into` exactly (a buffer already mapped: a fresh
        bytes that big would be a fresh mapping, its pages faulted in one by one)."""
        if not self.lock.acquire(blocking=False):
            return _read_into(zstandard.ZstdDecompressor(), frame, into)
        try:
            return _read_into(self._kept, frame, into)
        finally:
            self.lock.release()


def _read_into(decompressor: zstandard.ZstdDecompressor, frame: bytes, into: memoryview) -> bool:
    with decompressor.stream_reader(frame) as reader:
        filled = 0
        while filled < len(into):
            read = reader.readinto(into[filled:])
            if not read:
                return False
            filled += read
        return not reader.read(1)
