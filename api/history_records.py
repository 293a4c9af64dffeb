"""A question about named offers answered from the compacted history's files (pricedb.history_files)
and the observations since the compaction held in memory (pricedb.history_recent) instead of DuckDB:
each series is one small read plus its recent records, and its points' JSON is written from whole
columns. The answer is `pricedb.history.history`'s, point for point (tests/api/test_history_fast.py,
tests/api/test_history_files.py compare the bytes); anything they cannot answer (no files for this
layout, a series that fails its check, a tail not held, offers not named by all four key parts)
answers None and the caller asks DuckDB."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from api import json_encoding
from api.history_frames import FramedSeries, SeriesFrames
from api.points_json import end_texts, points_json
from pricedb.history import History, HistoryQuery, Series, TooManyPoints
from pricedb.history_files import PointFiles, window_records
from pricedb.history_layout import Layout
from pricedb.history_recent import RecentPoints
from pricedb.offer_filter import SPOT
from pricedb.scratch import Room


def history_from_files(
    query: HistoryQuery,
    layout: Layout,
    files: PointFiles | None,
    recent: RecentPoints | None = None,
    at_once: int | None = None,
    room: Room | None = None,
    frames: SeriesFrames | None = None,
) -> History | None:
    """`history(cur, query, layout=layout, point=api.history's JSON writer)`'s answer, or None. The
    observations since the compaction come from `recent` (read at the layout's data version); without
    it, only a layout with none answers. With `at_once`, only an answer read from at most that many
    records, all in memory or the page cache (None otherwise): one that costs no more than a small
    answer's CPU and never waits for the disk. Its arrays go into `room` where they fit (pricedb.scratch:
    the answer's pieces are then views of it, to be joined or compressed while it is held). With
    `frames` (a client taking zstd), a page of one series whose compacted points in the window are one
    run of its (every point kept) takes them from its frame (api.history_frames): the whole compacted
    history as the frame itself (FramedSeries), a part of it cut out of the frame decompressed.
    """
    offers = query.offers
    if files is None or files.compacted_upto != layout.compacted_upto:
        return None
    if not (offers.providers and offers.regions and offers.skus and offers.pricings):
        return None
    if layout.newest_id == layout.compacted_upto:
        recent = None
    elif recent is None or (recent.after, recent.upto) != (layout.compacted_upto, layout.newest_id):
        return None
    lower_regions = sorted(offers.lower_regions)
    held = layout.series_of(offers.providers, lower_regions, offers.skus, offers.pricings)
    if held is None:
        return None
    numbers = sorted(held)
    slots = recent.slots_of(offers.providers, lower_regions, offers.skus, offers.pricings) if recent else []
    if not offers.include_interruptible:  # the rule sql_where writes over `pricing`, a part of the key
        numbers = [n for n in numbers if layout.key_of(n)[3] != SPOT]
        slots = [s for s in slots if recent is not None and recent.keys[s][3] != SPOT]
    if at_once is not None:
        tail = sum(recent.count(s) for s in slots) if recent is not None else 0
        if sum(files.count(n) for n in numbers) + tail > at_once:
            return None
    laid_out = window_records(files, query, numbers, nowait=at_once is not None, room=room)
    if laid_out is None:
        return None
    by_key = {layout.key_of(n): records for n, records, _ in laid_out}
    runs = {layout.key_of(n): (n, len(records)) for n, records, every in laid_out if every}  # one run each
    codes = files.codes
    if recent is not None:
        codes = recent.codes
        for slot, records, _ in window_records(recent, query, slots) or ():
            key = recent.keys[slot]
            earlier = by_key.get(key)
            if earlier is None:
                by_key[key] = records
            elif earlier["at"][-1] <= records["at"][0]:  # the usual case: all observed after the compaction's
                by_key[key] = _joined(earlier, records, room)
            else:  # every recent id is above every compacted one: by time, then (stable) part
                runs.pop(key, None)  # the compacted points are not one run of the answer's
                both = np.concatenate([earlier, records])
                by_key[key] = both[np.argsort(both["at"], kind="stable")]
    found = sorted(by_key.items())  # key order, as history_series numbers the laid-out ones
    page = found[query.offset : query.offset + query.limit]
    points = sum(len(records) for _, records in page)
    if query.max_points is not None and points > query.max_points:
        raise TooManyPoints(points, len(page), query.max_points)
    if frames is not None and len(page) == 1 and page[0][0] in runs:
        key, records = page[0]
        number, compacted = runs[key]
        nowait = at_once is not None
        if compacted == files.count(number):
            series = _framed(key, codes, records, compacted, frames, number, nowait)
        else:
            series = _cut(key, codes, records, compacted, frames, number, query, nowait, room)
        if series is not None:
            return History([series], len(found), points)
    written = []
    for key, records in page:
        series = _series(key, codes, records, room)
        if series is None:  # a moment beyond datetime's years: left to the reference
            return None
        written.append(series)
    return History(written, len(found), points)


def _joined(earlier: np.ndarray, later: np.ndarray, room: Room | None) -> np.ndarray:
    """The two runs of records one after the other, in `room` where they fit."""
    taken = None if room is None else room.take((len(earlier) + len(later)) * earlier.itemsize)
    if taken is None:
        return np.concatenate([earlier, later])
    return np.concatenate([earlier, later], out=taken.view(earlier.dtype))


def _series(
    key: tuple[str, str, str, str], codes: list[tuple[Any, ...]], records: np.ndarray, room: Room | None
) -> Series | None:
    model, memory, gpus, currency, unit, _ = codes[int(records["code"][0])]
    series = Series(*key, model, memory, gpus, currency, unit)
    series.points_json = points_json(records, end_texts(codes, currency, unit), room)
    return None if series.points_json is None else series


def _framed(
    key: tuple[str, str, str, str], codes: list[tuple[Any, ...]], records: np.ndarray, compacted: int,
    frames: SeriesFrames, number: int, nowait: bool,
) -> FramedSeries | None:  # fmt: skip
    """The series whose first `compacted` records are series `number`'s frame; None when it has
    none, when its answer would go uncompressed anyway (api.json_encoding.COMPRESS_FROM_BYTES), or
    when its frame or the points since the compaction cannot be read or written."""
    if frames.content_size(number) < json_encoding.COMPRESS_FROM_BYTES:
        return None
    frame = frames.blocks(number, nowait)
    if frame is None:
        return None
    model, memory, gpus, currency, unit, _ = codes[int(records["code"][0])]
    since = points_json(records[compacted:], end_texts(codes, currency, unit))
    if since is None:
        return None
    return FramedSeries(*key, model, memory, gpus, currency, unit, points_json=since, frame=frame)


_OPEN = b'{"observed_at":"'
_SECOND_US = 1_000_000


def _cut(
    key: tuple[str, str, str, str], codes: list[tuple[Any, ...]], records: np.ndarray, compacted: int,
    frames: SeriesFrames, number: int, query: HistoryQuery, nowait: bool, room: Room | None,
) -> Series | None:  # fmt: skip
    """The series whose first `compacted` records, one run of series `number`'s, are cut out of its
    frame's points (decompressed into `room` where they fit: ~4 times cheaper than writing them);
    None when they cannot be (the run's points not written against the same currency and unit, a
    window edge inside a second that points outside it share, a frame unread). Points are in time
    order and every point of the window's first and last seconds is in it, so the first point with
    the first second's text and the last one with the last's bound exactly the run's points."""
    model, memory, gpus, currency, unit, _ = codes[int(records["code"][0])]
    if codes[frames.base_code(number)][3:5] != (currency, unit):
        return None
    first, last = (int(at) // _SECOND_US * _SECOND_US for at in records["at"][[0, compacted - 1]])
    if first < _micros(query.since) or last + _SECOND_US > _micros(query.until):
        return None  # points before or after the window may share the edge's second (its text)
    points = frames.points(number, nowait, room)
    if points is None:
        return None
    start = _find(points, _OPEN + _moment(first), 0)
    end = _end(points, _OPEN + _moment(last), start, compacted - int(np.searchsorted(records["at"][:compacted], last)))
    if start < 0 or end < 0:
        return None
    since = points_json(records[compacted:], end_texts(codes, currency, unit))
    if since is None:
        return None
    series = Series(*key, model, memory, gpus, currency, unit)
    series.points_json = [points[start:end], *((b",", *since) if since else ())]
    return series


def _find(text: memoryview, sought: bytes, at: int) -> int:
    """Where `sought` first is in `text` from `at` on (-1: nowhere; -1 given: nowhere): in the next
    NEAR bytes (copied: bytes.find takes no other buffer), else by `re` (~0.3 ms over 685 KB)."""
    if at < 0:
        return -1
    found = bytes(text[at : at + NEAR]).find(sought)
    if found >= 0:
        return at + found
    matched = re.compile(re.escape(sought)).search(text, at)
    return -1 if matched is None else matched.start()


def _end(text: memoryview, last: bytes, start: int, sharing: int) -> int:
    """Where the points after the `sharing` ones whose text starts `last` (the last second's) begin
    (at their comma; the text's end when none): looked for in the last NEAR bytes first (a window up
    to the series' end, the usual one), else from `start` on."""
    tail_at = max(start, len(text) - NEAR)
    tail = bytes(text[tail_at:])
    found = tail.rfind(last)
    if found >= 0:
        after = tail.find(_NEXT, found)
        return len(text) if after < 0 else tail_at + after
    found = _find(text, last, start)
    for _ in range(sharing - 1):
        found = _find(text, last, found + 1)
    after = _find(text, _NEXT, found)
    return -1 if found < 0 else len(text) if after < 0 else after


NEAR = 8192  # bytes searched in a copy before searching the whole text
_NEXT = b"," + _OPEN  # the next point's start: no JSON string holds `"` unescaped


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def _moment(at_us: int) -> bytes:
    return (_EPOCH + timedelta(microseconds=at_us)).isoformat(timespec="seconds").encode() + b'Z"'


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)
