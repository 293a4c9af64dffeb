"""One zstd frame (RFC 8878) made of bytes sent as they are around blocks compressed ahead of time.

A history answer is a few hundred bytes of its own (the query, the series' fields) around a series'
points, which stay the same from one compaction to the next: so the points are compressed once
(api.history_frames) and an answer only writes a frame header and wraps its own bytes in raw blocks.

Why the frame decodes to the bytes meant, for any conforming decoder: a decoder starts a frame with
no history, no entropy tables and the repeat offsets (1, 4, 8); raw blocks only add bytes to the
history (RFC 8878 §3.1.1.2: tables and repeat offsets come from compressed blocks alone). So the
blocks compressed ahead, placed after raw blocks only, find the state they were written for, and
their matches reach back no further than their own bytes (a compressor never points before its
input). One frame, not several concatenated: some decoders stop after the first frame (python
`zstandard`'s `decompress`, and its `decompressobj` unless told to read across frames)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAGIC = b"\x28\xb5\x2f\xfd"
RAW_BLOCK_BYTES = 128 * 1024  # Block_Maximum_Size with a window of 128 KB or more
MIN_WINDOW_LOG = 17  # so raw blocks may be RAW_BLOCK_BYTES long
MAX_WINDOW_LOG = 23  # 8 MB: the most an HTTP client must accept (RFC 9659 §3)
_LAST = 1
_RLE, _RESERVED = 1, 3  # block types


@dataclass(frozen=True)
class Blocks:
    """A frame's blocks without its header and checksum, the last one not marked last, with what
    they need: the window (a power of two's log) and the bytes they decode to."""

    data: bytes | bytearray | memoryview
    window_log: int
    content_size: int


def frame_blocks(frame: bytes) -> Blocks | None:
    """The blocks of one whole zstd frame, or None when they cannot be spliced (a dictionary, no
    content size, a window over MAX_WINDOW_LOG, anything not one frame)."""
    if len(frame) < 6 or frame[:4] != MAGIC:
        return None
    descriptor = frame[4]
    size_flag, single, checksum, dictionary = descriptor >> 6, descriptor >> 5 & 1, descriptor >> 2 & 1, descriptor & 3
    if dictionary or descriptor & 0x18 or (size_flag == 0 and not single):
        return None
    at = 5
    window = 0
    if not single:
        exponent, mantissa = frame[at] >> 3, frame[at] & 7
        base = 1 << (10 + exponent)
        window = base + base // 8 * mantissa
        at += 1
    size_bytes = (1, 2, 4, 8)[size_flag] if size_flag or single else 0
    content_size = int.from_bytes(frame[at : at + size_bytes], "little") + (256 if size_bytes == 2 else 0)
    at += size_bytes
    window = max(window, content_size) if single else window
    blocks_start = at
    last_header = -1
    while at + 3 <= len(frame):
        header = int.from_bytes(frame[at : at + 3], "little")
        kind = header >> 1 & 3
        if kind == _RESERVED:
            return None
        last_header = at
        at += 3 + (1 if kind == _RLE else header >> 3)  # an RLE block holds one byte
        if header & _LAST:
            break
    if last_header < 0 or at + 4 * checksum != len(frame):
        return None
    window_log = max(MIN_WINDOW_LOG, (window - 1).bit_length())
    if window_log > MAX_WINDOW_LOG:
        return None
    data = bytearray(frame[blocks_start:at])
    data[last_header - blocks_start] &= ~_LAST & 0xFF
    return Blocks(bytes(data), window_log, content_size)


def spliced_frame(before: Sequence[bytes | memoryview], blocks: Blocks, after: Sequence[bytes | memoryview]) -> bytes:
    """One frame decoding to `before`'s bytes, then `blocks`' content, then `after`'s: the first and
    last as raw blocks, with the content size in the header."""
    head = b"".join(before)
    tail = b"".join(after)
    size = len(head) + blocks.content_size + len(tail)
    descriptor = 3 << 6  # an 8-byte content size, a window descriptor, no checksum, no dictionary
    parts = [MAGIC, bytes((descriptor, (blocks.window_log - 10) << 3)), size.to_bytes(8, "little")]
    parts.extend(_raw_blocks(head, last=False))
    parts.append(blocks.data)
    parts.extend(_raw_blocks(tail, last=True))
    return b"".join(parts)


def _raw_blocks(data: bytes, last: bool) -> list[bytes | memoryview]:
    """`data` as raw blocks of at most RAW_BLOCK_BYTES (the final one marked last when `last`; an
    empty last block when there is no data)."""
    view = memoryview(data)
    found: list[bytes | memoryview] = []
    starts = list(range(0, len(data), RAW_BLOCK_BYTES)) or ([0] if last else [])
    for start in starts:
        piece = view[start : start + RAW_BLOCK_BYTES]
        flag = _LAST if last and start == starts[-1] else 0
        found.extend(((len(piece) << 3 | flag).to_bytes(3, "little"), piece))
    return found
