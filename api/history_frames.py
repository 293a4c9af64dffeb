"""Each series' compacted points as zstd blocks written once per compaction, beside its files
(pricedb.history_files), so a question about one offer's whole compacted history, asked by a client
that takes zstd, is sent as those blocks with the answer's own bytes around them (api.zstd_splice)
instead of writing its points' JSON and compressing it again.

After the compaction's files are written (api.digests' compaction job; the warm-up, api.history,
writes them for files found without), `write_frames` writes in the same folder:
- `frames-<token>.bin`: per series, its points' JSON (api.points_json, as an answer whose first
  point is the series' first writes them: the currency and unit of that point are the series') as
  one zstd frame's blocks (api.zstd_splice.frame_blocks), one series after another;
- `frames-<token>.npy`: per series number, where its blocks start, their content size, window log
  and CRC-32; written last, so a folder without it has no frames. A series whose points cannot be
  written (a moment beyond datetime's years) has none.
`<token>` is the compaction's (its manifest's), so frames are only read with the records they were
written from; the next compaction's files replace them (pricedb.history_files removes every file of
earlier compactions). GPUPRICE_HISTORY_FILES_MB bounds the records and the frames together (the
frames are ~1/8 of the records at 10M observations: ~45 MB against 360); frames that would not fit
are not written. Memory held: 32 bytes per series (the index); the blocks are read per question
(os.pread), never cached."""

from __future__ import annotations

import os
import threading
import uuid
import weakref
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zstandard

from api.kept_zstd import KeptUnzstd
from api.points_json import end_texts, points_json
from api.zstd_splice import Blocks, frame_blocks, spliced_frame
from pricedb.history import Series
from pricedb.history_files import RECORD, PointFiles, files_folder, read_whole
from pricedb.history_layout import read_layout
from pricedb.redact import get_logger
from pricedb.scratch import Room
from pricedb.settings import Settings
from pricedb.store import PriceStore

log = get_logger("gpuprice.history")

COLUMNS = 5  # the index's: where a series' blocks start, their content size, window log, CRC-32, base code
FRAMES_LEVEL = 3  # written once per compaction: smaller answers for ~2x the compaction's level-1 time
_writing = threading.Lock()  # one writer at a time in a process (the compaction job, the warm-up)
_unzstd = KeptUnzstd()


@dataclass
class FramedSeries(Series):
    """A series whose compacted points are `frame` (their JSON compressed ahead) and whose
    `points_json` holds only the points observed since the compaction (none: empty)."""

    frame: Blocks = field(default_factory=lambda: Blocks(b"", 0, 0))


def _names(token: str) -> tuple[str, str]:
    return f"frames-{token}.bin", f"frames-{token}.npy"


def write_frames(database: Path, files: PointFiles, limit_bytes: float) -> bool:
    """Write the frames of these files (see the module's docstring), at most `limit_bytes` of them;
    whether they are there now. No file is left when they cannot be written whole (more than that,
    a series unreadable; another writer busy: left to it)."""
    if not _writing.acquire(blocking=False):
        return False
    folder = files_folder(database)
    blocks_name, index_name = _names(files.token)
    partial = folder / f"{blocks_name}.{uuid.uuid4().hex}.partial"
    try:
        if (folder / index_name).exists():
            return True
        index = np.zeros((len(files.index), COLUMNS), dtype=np.int64)
        compressor = zstandard.ZstdCompressor(level=FRAMES_LEVEL)
        written = 0
        with partial.open("wb") as out:
            for number in range(1, len(files.index) - 1):
                index[number, 0] = written
                records = files.records(number)
                if records is None:
                    return False
                blocks = series_blocks(records, files, compressor)
                if blocks is not None:
                    out.write(blocks.data)
                    written += len(blocks.data)
                    index[number, 1:] = (blocks.content_size, blocks.window_log, zlib.crc32(blocks.data),
                                         int(records["code"][0]))  # fmt: skip
                if written > limit_bytes:
                    return False
        index[len(files.index) - 1, 0] = written
        partial.replace(folder / blocks_name)
        partial = folder / f"{index_name}.{uuid.uuid4().hex}.partial"
        with partial.open("wb") as out:
            np.save(out, index)
        partial.replace(folder / index_name)
        if not (folder / f"history-{files.token}.json").exists():  # a newer compaction's files meanwhile
            for name in _names(files.token):
                (folder / name).unlink(missing_ok=True)
            return False
        return True
    finally:
        partial.unlink(missing_ok=True)
        _writing.release()


def series_blocks(records: np.ndarray, files: PointFiles, compressor: zstandard.ZstdCompressor) -> Blocks | None:
    """A series' points as one frame's blocks, None when they cannot be written."""
    currency, unit = files.codes[int(records["code"][0])][3:5]
    pieces = points_json(records, end_texts(files.codes, currency, unit))
    return None if pieces is None else frame_blocks(compressor.compress(b"".join(pieces)))


def frames_limit(settings: Settings, files: PointFiles) -> float:
    """What GPUPRICE_HISTORY_FILES_MB leaves the frames beside these files' records."""
    return settings.history_files_mb * 1024 * 1024 - int(files.index[-1, 0]) * RECORD.itemsize


def write_history_frames(store: PriceStore) -> bool:
    """The frames of the store's current compaction (after `compact_history`); logged, never raised."""
    try:
        layout = read_layout(store.cursor())
        files = PointFiles.open(store.path, layout.compacted_upto, len(layout.keys) - 1, layout.laid_out_points)
        return files is not None and write_frames(store.path, files, frames_limit(store.settings, files))
    except Exception:
        log.warning("the history's frames could not be written", exc_info=True)
        return False


@dataclass(frozen=True, eq=False)
class SeriesFrames:
    """The frames of one compaction's files, opened: a series' blocks are read on demand."""

    token: str
    index: np.ndarray  # (series + 2, COLUMNS): where its blocks start, content size, window log, CRC-32, base
    fd: int

    @classmethod
    def open(cls, database: Path, files: PointFiles) -> SeriesFrames | None:
        """The frames written for these files, or None when there are none whole."""
        folder = files_folder(database)
        blocks_name, index_name = _names(files.token)
        try:
            index = np.load(folder / index_name, allow_pickle=False)
            fd = os.open(folder / blocks_name, os.O_RDONLY)
        except (OSError, ValueError):
            return None
        starts = index[:, 0] if index.ndim == 2 and index.shape == (len(files.index), COLUMNS) else None
        if (
            starts is None
            or index.dtype != np.int64
            or np.any(np.diff(starts[1:]) < 0)
            or os.fstat(fd).st_size != starts[-1]
        ):
            os.close(fd)
            return None
        frames = cls(files.token, index, fd)
        weakref.finalize(frames, os.close, fd)
        return frames

    def content_size(self, number: int) -> int:
        """The bytes series `number`'s blocks decode to (0: it has none)."""
        return int(self.index[number, 1]) if 0 < number < len(self.index) - 1 else 0

    def base_code(self, number: int) -> int:
        """The code of series `number`'s first record: its points are written against its currency and unit."""
        return int(self.index[number, 4])

    def points(self, number: int, nowait: bool = False, room: Room | None = None) -> memoryview | None:
        """Series `number`'s points' JSON (its frame decompressed into `room` where it fits), None
        when its frame cannot be read."""
        blocks = self.blocks(number, nowait)
        if blocks is None:
            return None
        taken = None if room is None else room.take(blocks.content_size)
        into = memoryview(bytearray(blocks.content_size) if taken is None else taken)
        return into if _unzstd.decompress_into(spliced_frame([], blocks, []), into) else None

    def blocks(self, number: int, nowait: bool = False) -> Blocks | None:
        """Series `number`'s blocks, None when it has none or they cannot be read whole and intact
        (with `nowait`, also unless they are in the page cache)."""
        if not 0 < number < len(self.index) - 1:
            return None
        first, last = int(self.index[number, 0]), int(self.index[number + 1, 0])
        content_size, window_log, crc = (int(v) for v in self.index[number, 1:4])
        if last == first:
            return None
        data = bytearray(last - first)
        return Blocks(data, window_log, content_size) if read_whole(self.fd, data, first, nowait, crc) else None
