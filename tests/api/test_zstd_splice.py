"""A frame spliced from raw blocks and blocks compressed ahead (api.zstd_splice) is one zstd frame
that every decoder a client uses reads as the bytes meant: python `zstandard`'s one-shot and streaming
decoders (which stop after a first frame) and httpx's, fed a few bytes at a time."""

from __future__ import annotations

import random

import httpx._decoders
import pytest
import zstandard

from api.zstd_splice import RAW_BLOCK_BYTES, frame_blocks, spliced_frame


def _points(rng: random.Random, count: int) -> bytes:
    """JSON-like text that repeats itself (matches, repeat offsets) with runs of one byte (RLE blocks)."""
    prices = [repr(rng.lognormvariate(1, 2)) for _ in range(5)]
    return b",".join(
        f'{{"observed_at":"2026-0{1 + k % 9}-1{k % 10}T0{k % 10}:00:00Z","price":{rng.choice(prices)}}}'.encode()
        + b" " * rng.choice([0, 0, 300])
        for k in range(count)
    )


def _decoded(frame: bytes, rng: random.Random) -> list[bytes]:
    """The frame as each decoder reads it."""
    streamed = zstandard.ZstdDecompressor().decompressobj()
    cut = sorted(rng.sample(range(1, len(frame)), min(40, len(frame) - 1)))
    pieces = [frame[a:b] for a, b in zip([0, *cut], [*cut, len(frame)], strict=True)]
    httpx_decoder = httpx._decoders.ZStandardDecoder()
    return [
        zstandard.ZstdDecompressor().decompress(frame),
        b"".join(streamed.decompress(piece) for piece in pieces),
        b"".join(httpx_decoder.decode(piece) for piece in pieces) + httpx_decoder.flush(),
    ]


@pytest.mark.parametrize("seed", range(6))
def test_a_spliced_frame_decodes_to_its_parts(seed: int) -> None:
    rng = random.Random(seed)
    content = _points(rng, rng.choice([1, 40, 3000, 9000]))
    compressor = zstandard.ZstdCompressor(level=rng.choice([1, 3, 6]), write_checksum=rng.random() < 0.5)
    blocks = frame_blocks(compressor.compress(content))
    assert blocks is not None and blocks.content_size == len(content)
    for before, after in (
        ([b'{"query":{},"series":[{"points":['], [b',{"p":1}', b"]}]}"]),
        ([], []),
        ([b"h" * (RAW_BLOCK_BYTES + 5), memoryview(b"x" * 7)], [b"t" * (2 * RAW_BLOCK_BYTES)]),
    ):
        meant = b"".join(before) + content + b"".join(after)
        frame = spliced_frame(before, blocks, after)
        assert zstandard.get_frame_parameters(frame).content_size == len(meant)
        assert _decoded(frame, rng) == [meant] * 3


def test_frames_that_cannot_be_spliced_are_refused() -> None:
    content = _points(random.Random(1), 200)
    no_size = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
    unsized = no_size.compress(content) + no_size.flush()
    trained = zstandard.train_dictionary(4096, [_points(random.Random(k), 30) for k in range(200)])
    with_dictionary = zstandard.ZstdCompressor(level=1, dict_data=trained).compress(content)
    whole = zstandard.ZstdCompressor(level=1).compress(content)
    for frame in (unsized, with_dictionary, whole[:-1], whole + whole, b"not zstd"):
        assert frame_blocks(frame) is None
