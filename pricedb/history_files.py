"""The compacted history (`history_points`, pricedb.history_layout) also kept as fixed-size records in
files beside the database, so one offer's points are one small read instead of a DuckDB query.

After each compaction, `write_point_files` writes, in a folder beside the database
(`<database>.history/`):
- `points-<token>.bin`: one 36-byte record per compacted observation (`RECORD`: observed_at in
  microseconds, price, cny_per_hour and cny_per_gb_hour with NaN for NULL, and the code of the
  point's (gpu_model, gpu_memory_gb, gpu_count, currency, unit, availability)), in `history_points`'
  order: series, observed_at, observation_id;
- `series-<token>.npy`: per series number, where its records start and the CRC-32 of its records;
- `history-<token>.json`: the manifest (compacted_upto, counts, the codes' values, the files' names),
  written last: a folder without a manifest matching the layout is not read.
Each file is written under a temporary name and renamed; the files of earlier compactions are removed
once the new manifest is in place (a reader holding an earlier points file keeps reading it: POSIX).

A reader (`PointFiles.open`) checks the manifest against the layout it serves (compacted_upto, series
and point counts), the files' sizes and the offsets; each series read checks its CRC. Anything missing,
partial or corrupt answers None, and the caller asks DuckDB as before. A layout holding a non-finite
number (NaN would be read back as NULL) writes no files. Memory held: 16 bytes per series (the index)
and the codes' values; the records are read per question (os.pread), never mapped or cached."""

from __future__ import annotations

import json
import math
import os
import uuid
import weakref
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from pricedb.offer_filter import SOLD_OUT

if TYPE_CHECKING:
    from pricedb.history import HistoryQuery
    from pricedb.history_recent import RecentPoints
    from pricedb.scratch import Room

RECORD = np.dtype([("at", "<i8"), ("price", "<f8"), ("per_hour", "<f8"), ("per_gb", "<f8"), ("code", "<i4")])
FORMAT = 1  # the manifest's `format`: a reader refuses any other
CHUNK_POINTS = 500_000  # records fetched from DuckDB at a time while writing (~20 MB in numpy)
NOWAIT = getattr(os, "RWF_NOWAIT", None)  # Linux: read only what the page cache holds, else EAGAIN
CODE_COLUMNS = ("gpu_model", "gpu_memory_gb", "gpu_count", "currency", "unit", "availability")


def files_folder(database: Path) -> Path:
    """Where the compacted history's files of this database are: a folder beside it."""
    return database.parent / f"{database.name}.history"


def _replace_atomically(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def remove_point_files(folder: Path, keep: tuple[str, ...] = ()) -> None:
    """Remove every file in `folder` but those named in `keep` (earlier compactions', partial writes)."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name not in keep:
            path.unlink(missing_ok=True)


def write_point_files(cur: duckdb.DuckDBPyConnection, database: Path, limit_bytes: float = math.inf) -> Path | None:
    """Write the files of the layout committed now (after `compact`); returns the manifest, or None
    when the layout cannot be kept this way (nothing laid out, a non-finite number, more than
    `limit_bytes` of records) and no file is kept."""
    folder = files_folder(database)
    row = cur.execute(
        "SELECT (SELECT compacted_upto FROM history_layout), (SELECT count(*) FROM history_series), "
        "(SELECT count(*) FROM history_points), (SELECT count(*) FROM history_points WHERE NOT isfinite(price) "
        "OR NOT coalesce(isfinite(cny_per_hour), true) OR NOT coalesce(isfinite(cny_per_gb_hour), true))"
    ).fetchone()
    upto, series, points, odd = (int(v or 0) for v in row) if row else (0, 0, 0, 0)
    if upto == 0 or odd or points * RECORD.itemsize > limit_bytes:
        remove_point_files(folder)
        return None
    folder.mkdir(parents=True, exist_ok=True)
    codes = cur.execute(f"SELECT DISTINCT {', '.join(CODE_COLUMNS)} FROM history_points ORDER BY ALL").fetchall()
    counts = np.zeros(series + 2, dtype=np.int64)
    for number, n in cur.execute("SELECT series, count(*) FROM history_points GROUP BY series").fetchall():
        counts[int(number) + 1] = int(n)
    starts = np.cumsum(counts)  # starts[s]: the first record of series s; starts[series + 1]: every record
    index = np.zeros((series + 2, 2), dtype=np.int64)
    index[:, 0] = starts
    token = f"{upto}-{uuid.uuid4().hex}"
    names = {"points_file": f"points-{token}.bin", "series_file": f"series-{token}.npy"}
    partial = folder / (names["points_file"] + ".partial")
    values = ", ".join("(" + ", ".join("?" for _ in range(len(CODE_COLUMNS) + 1)) + ")" for _ in codes)
    code_table = f"(VALUES {values}) AS c(code, {', '.join(CODE_COLUMNS)})"
    code_values = [v for code, row in enumerate(codes) for v in (code, *row)]
    written = 0
    with partial.open("wb") as out:
        for first, last in _series_chunks(counts):
            found = cur.execute(
                "SELECT p.series, epoch_us(p.observed_at) AS at, p.price, coalesce(p.cny_per_hour, 'NaN'::DOUBLE) "
                "AS per_hour, coalesce(p.cny_per_gb_hour, 'NaN'::DOUBLE) AS per_gb, c.code FROM history_points p "
                f"JOIN {code_table} USING ({', '.join(CODE_COLUMNS)}) WHERE p.series BETWEEN ? AND ? "
                "ORDER BY p.series, p.observed_at, p.observation_id",
                [*code_values, first, last],
            ).fetchnumpy()
            records = np.empty(len(found["at"]), dtype=RECORD)
            for name in RECORD.names:
                records[name] = found[name]
            data = records.tobytes()
            out.write(data)
            base = starts[first]
            for number in range(first, last + 1):
                index[number, 1] = zlib.crc32(data[(starts[number] - base) * RECORD.itemsize :
                                                   (starts[number + 1] - base) * RECORD.itemsize])  # fmt: skip
            written += len(records)
    if written != points:  # observations laid out meanwhile: this compaction is not the one committed
        remove_point_files(folder)
        return None
    partial.replace(folder / names["points_file"])
    with (folder / (names["series_file"] + ".partial")).open("wb") as out:
        np.save(out, index)
    (folder / (names["series_file"] + ".partial")).replace(folder / names["series_file"])
    manifest = folder / f"history-{token}.json"
    text = {"format": FORMAT, "compacted_upto": upto, "series": series, "points": points, "codes": codes, **names}
    _replace_atomically(manifest, json.dumps(text).encode())
    remove_point_files(folder, keep=(manifest.name, names["points_file"], names["series_file"]))
    return manifest


def _series_chunks(counts: np.ndarray) -> list[tuple[int, int]]:
    """Series ranges (first, last, both included) of about CHUNK_POINTS records each; every series once."""
    chunks, first, held = [], 1, 0
    for number in range(1, len(counts) - 1):
        held += int(counts[number + 1])
        if held >= CHUNK_POINTS:
            chunks.append((first, number))
            first, held = number + 1, 0
    if first <= len(counts) - 2:
        chunks.append((first, len(counts) - 2))
    return chunks


@dataclass(frozen=True, eq=False)
class PointFiles:
    """The files of one compaction, opened: the records of one series are read on demand."""

    compacted_upto: int
    codes: list[tuple[Any, ...]]  # CODE_COLUMNS' values by code
    index: np.ndarray  # (series + 2, 2): first record, CRC-32 of the series' records
    fd: int
    token: str = ""  # the compaction's files' names: `history-<token>.json`, `points-<token>.bin`, …

    @classmethod
    def open(cls, database: Path, compacted_upto: int, series: int, points: int) -> PointFiles | None:
        """The files written for this layout, or None when there are none whole (the caller reads DuckDB)."""
        folder = files_folder(database)
        try:
            manifests = sorted(folder.glob(f"history-{compacted_upto}-*.json"), key=lambda p: p.stat().st_mtime)
            if not manifests:
                return None
            text = json.loads(manifests[-1].read_bytes())
            if (text.get("format"), text.get("compacted_upto"), text.get("series"), text.get("points")) != (
                FORMAT, compacted_upto, series, points,
            ):  # fmt: skip
                return None
            codes = [tuple(code) for code in text["codes"]]
            if any(len(code) != len(CODE_COLUMNS) for code in codes):
                return None
            index = np.load(folder / text["series_file"], allow_pickle=False)
            fd = os.open(folder / text["points_file"], os.O_RDONLY)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        starts = index[:, 0] if index.ndim == 2 and index.shape == (series + 2, 2) else None
        if (
            starts is None
            or index.dtype != np.int64
            or starts[0] != 0
            or starts[-1] != points
            or np.any(np.diff(starts) < 0)
            or os.fstat(fd).st_size != points * RECORD.itemsize
        ):
            os.close(fd)
            return None
        files = cls(compacted_upto, codes, index, fd, manifests[-1].name.removeprefix("history-").removesuffix(".json"))
        weakref.finalize(files, os.close, fd)  # when the layout it serves is replaced
        return files

    def count(self, number: int) -> int:
        """How many records series `number` holds (0 for a number outside the files)."""
        if not 0 < number < len(self.index) - 1:
            return 0
        return int(self.index[number + 1, 0] - self.index[number, 0])

    def records(self, number: int, nowait: bool = False, room: Room | None = None) -> np.ndarray | None:
        """Series `number`'s records in order (read into `room` where they fit), or None when they
        cannot be read whole and intact; with `nowait`, also None unless they are in the page cache
        (read without waiting for the disk)."""
        if not 0 < number < len(self.index) - 1:
            return None
        first, last = int(self.index[number, 0]), int(self.index[number + 1, 0])
        size = (last - first) * RECORD.itemsize
        taken = None if room is None else room.take(size)
        data = bytearray(size) if taken is None else taken
        if not read_whole(self.fd, data, first * RECORD.itemsize, nowait, int(self.index[number, 1])):
            return None
        records = np.frombuffer(data, dtype=RECORD)
        if len(records) and (records["code"].min() < 0 or records["code"].max() >= len(self.codes)):
            return None
        return records


def read_whole(fd: int, into: bytearray | np.ndarray, offset: int, nowait: bool, crc: int) -> bool:
    """Whether `into` was filled from `fd` at `offset` and its bytes have this CRC-32; with `nowait`,
    only from the page cache (False when the disk would be waited for)."""
    try:
        if nowait:
            if NOWAIT is None:
                return False
            read = os.preadv(fd, [into], offset, NOWAIT)
        else:
            read = os.preadv(fd, [into], offset)
    except OSError:  # EAGAIN: not cached (nowait); any other: unreadable
        return False
    return read == len(into) and zlib.crc32(into) == crc


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def window_records(
    files: PointFiles | RecentPoints,
    query: HistoryQuery,
    numbers: list[int],
    nowait: bool = False,
    room: Room | None = None,
) -> list[tuple[int, np.ndarray, bool]] | None:
    """For each of these series (in order), its records inside the question's window that its point
    filters keep (`pricedb.offer_filter.sql_where`'s rules over gpu_model and availability; the key's
    rules chose `numbers`), and whether those filters kept every record of the window (the records
    are then one run of the series'), series left with none left out; None when a series cannot be
    read (with `nowait`: read at once, from the page cache). Records read from the files go into
    `room` where they fit (pricedb.scratch)."""
    since = (query.since - _EPOCH) // _MICROSECOND
    until = (query.until - _EPOCH) // _MICROSECOND
    offers = query.offers
    kept = None
    if offers.gpus or not offers.include_unavailable:
        kept = np.array([
            (not offers.gpus or code[0] in offers.gpus) and (offers.include_unavailable or code[5] != SOLD_OUT)
            for code in files.codes
        ], dtype=bool)  # fmt: skip
    found = []
    for number in numbers:
        records = files.records(number, nowait, room)
        if records is None:
            return None
        at = records["at"]
        records = records[int(np.searchsorted(at, since, "left")) : int(np.searchsorted(at, until, "left"))]
        in_window = len(records)
        if kept is not None:
            records = records[kept[records["code"]]]
        if len(records):
            found.append((number, records, len(records) == in_window))
    return found
