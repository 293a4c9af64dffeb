"""A series' points (`{"observed_at":…,"price":…,…},…`, the JSON array's inside) written as one buffer from its
records' columns (pricedb.history_files.RECORD), byte for byte what `dumps` writes for the plain
points (tests/api/test_points_json.py, test_history_fast.py and test_history_files.py compare).

Every point is a row of bytes: a fixed-width head (`{"observed_at":"`, the moment's 19 characters,
`Z","price":`) then its tail (the three numbers, the end with the point's currency and unit when they
differ from the series', and a comma). The moments are written with integer arithmetic over the whole
column; a series repeats its numbers, so each distinct tail (runs of equal consecutive records) is
written once in Python and scattered to its points; the rows, padded to the longest tail, are then
cut to their real lengths. No per-point Python object is made, but for a series whose points' widths
keep changing (one bytes per point, made in C)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from api.state import dumps
from pricedb.scratch import Room

_OPEN = b'{"observed_at":"'
_CLOSE_MOMENT = b'Z","price":'
_TEMPLATE = _OPEN + b"0000-00-00T00:00:00" + _CLOSE_MOMENT  # a point's head, its moment written in later
_HEAD = len(_TEMPLATE)
_PAIRS = np.array([(48 + i // 10) | (48 + i % 10) << 8 for i in range(100)], dtype=np.uint64)  # "00".."99"
_DASHES = ord("-") << 32 | ord("-") << 56  # in YYYY-MM- read as a little-endian integer
_HOURS_MINUTES = np.array(
    [_PAIRS[m // 60] | _PAIRS[m % 60] << 24 | ord(":") << 16 | ord(":") << 40 for m in range(1440)], dtype=np.uint64
)  # HH:MM: of each minute of a day (11 KB), the seconds' pair added at << 48
# Points of a series written one bytes each are joined this many at a time (~70-100 KB: under the
# 128 KB from which each bytes is mapped anew, api.process_memory): a few pieces for the caller to
# gather or compress (api.json_encoding copies piece by piece in Python, ~3 ms for 5,000 pieces).
JOINED_POINTS = 512
_US_PER_DAY = 86_400_000_000
_FIRST_US, _LAST_US = -62_135_596_800_000_000, 253_402_300_799_999_999  # 0001-01-01, the end of 9999 (datetime's)


def points_json(
    records: np.ndarray, end_of: Callable[[int], str], room: Room | None = None
) -> list[memoryview] | list[bytes] | None:
    """These records' points' JSON, in order and comma-separated (the array's inside: the caller
    adds the brackets), as pieces of a few buffers for the caller to join into the answer (one copy);
    `end_of(code)` is the text closing a point of that code (`}`, or its currency and unit then `}`).
    None for a moment Python's datetime cannot hold (the reference could not write it either). The
    rows are written into `room` where they fit (pricedb.scratch), the pieces then being views of it.

    Points of one width are rows of one array; a stretch of consecutive points of one width is one
    piece of it. A series whose width changes at more than one point in 16 is written as rows padded
    to the widest (with NULs, which no JSON text holds unescaped), each row then one bytes without
    its padding (numpy's `S` type drops trailing NULs), JOINED_POINTS of them at a time: for 5,000
    points whose width changes every third point, 3.3 → 1.2 ms against squeezing the rows with a mask
    (measured on a loaded host), and cheaper than that many pieces."""
    n = len(records)
    if n <= FEW_POINTS:
        return _one_by_one(records, end_of)
    at = records["at"]
    if int(at.min()) < _FIRST_US or int(at.max()) > _LAST_US:
        return None
    tails, inverse = _tails(records, end_of)
    widths = _HEAD + np.fromiter(map(len, tails), dtype=np.int64, count=len(tails))
    widest = int(widths.max())
    padded = b"".join((_TEMPLATE + tail).ljust(widest, b"\0") for tail in tails)
    table = np.frombuffer(padded, dtype=np.uint8).reshape(len(tails), widest)  # each tail after a blank head
    moments = _moments(at)
    point_widths = widths[inverse]
    cuts = np.flatnonzero(point_widths[1:] != point_widths[:-1]) + 1
    if len(cuts) > n // 16:  # each point's bytes, its padding dropped (a fixed-width bytes array drops trailing NULs)
        texts = _rows(table, inverse, moments, widest, room).view(f"S{widest}").reshape(-1).tolist()
        texts[-1] = texts[-1][:-1]  # without the last comma
        return [b"".join(texts[k : k + JOINED_POINTS]) for k in range(0, n, JOINED_POINTS)]
    starts = np.concatenate(([0], cuts))
    flats: dict[int, memoryview] = {}
    rank = np.arange(n)  # each point's row in its width's array
    for width in np.unique(point_widths[starts]).tolist():
        if len(cuts) == 0:
            rows = _rows(table[:, :width], inverse, moments, width, room)
        else:
            chosen = np.flatnonzero(point_widths == width)
            rank[chosen] = np.arange(len(chosen))
            rows = _rows(table[:, :width], inverse[chosen], tuple(m[chosen] for m in moments), width, room)
        flats[width] = memoryview(rows.reshape(-1))
    pieces = []
    for first, last, width, row in zip(
        starts.tolist(), [*cuts.tolist(), n], point_widths[starts].tolist(), rank[starts].tolist(), strict=True
    ):
        pieces.append(flats[width][row * width : (row + last - first) * width])
    pieces[-1] = pieces[-1][:-1]  # without the last point's comma
    return pieces


# Fewer points are written one by one: the column-wise writing costs ~1 ms whatever the count (some
# sixty numpy calls on the slow 2-core host), a point written in Python ~10 µs. The points since the
# compaction that an answer adds to a series' frame (api.history_records) are usually a few.
FEW_POINTS = 48
_EPOCH = datetime(1970, 1, 1)


def _one_by_one(records: np.ndarray, end_of: Callable[[int], str]) -> list[bytes] | None:
    """`points_json`'s bytes for a few records, each point written in Python."""
    texts = []
    ends: dict[int, str] = {}
    for at, price, per_hour, per_gb, code in records.tolist():
        if not _FIRST_US <= at <= _LAST_US:
            return None
        end = ends.get(code)
        if end is None:
            end = ends[code] = end_of(code)
        moment = (_EPOCH + timedelta(microseconds=at)).isoformat(timespec="seconds")
        texts.append(
            f'{_OPEN.decode()}{moment}Z","price":{_number(price)},"cny_per_hour":{_number(per_hour)},'
            f'"cny_per_gb_hour":{_number(per_gb)}{end}'
        )
    return [",".join(texts).encode()] if texts else []


def _number(value: float) -> str:
    """A stored number's JSON, as `_text` writes it."""
    return repr(value) if value == value else "null"


def _rows(
    table: np.ndarray, inverse: np.ndarray, moments: tuple[np.ndarray, ...], width: int, room: Room | None
) -> np.ndarray:
    """Each point's row: its tail's row of `table` (`width` wide) with its moment written in; in
    `room` where it fits."""
    taken = None if room is None else room.take(len(inverse) * width)
    if taken is None:
        rows = np.ascontiguousarray(table[inverse])
    else:
        rows = taken.reshape(len(inverse), width)
        np.take(table, inverse, axis=0, out=rows, mode="clip")  # "clip": written in place (no index is out of range)
    fields = rows.view(_moment_fields(width)).reshape(-1)
    fields["ymd"], fields["dd"], fields["hms"] = moments
    return rows


def _moment_fields(width: int) -> np.dtype:
    """A row's moment as three little-endian integers: YYYY-MM- (8 bytes), DD, HH:MM:SS (after the T)."""
    at = len(_OPEN)
    return np.dtype({"names": ["ymd", "dd", "hms"], "formats": ["<u8", "<u2", "<u8"],
                     "offsets": [at, at + 8, at + 11], "itemsize": width})  # fmt: skip


def _tails(records: np.ndarray, end_of: Callable[[int], str]) -> tuple[list[bytes], np.ndarray]:
    """Each distinct tail's bytes (`price,"cny_per_hour":…,"cny_per_gb_hour":…` + end + `,`) and
    each record's index into them. Records are compared by their numbers' bits (0.0 and -0.0 are
    written differently; NaN, how the records keep NULL, is `null`): runs of equal consecutive
    records first, then the distinct ones among the runs' first records, column by column (sorts of
    whole columns), so Python only writes each distinct tail, however often a series returns to it."""
    names = ("price", "per_hour", "per_gb")
    columns = [
        *(np.ascontiguousarray(records[name]).view(np.int64) for name in names),
        records["code"].astype(np.int64),
    ]
    changed = columns[0][1:] != columns[0][:-1]
    for column in columns[1:]:
        changed |= column[1:] != column[:-1]
    starts = np.flatnonzero(np.concatenate(([True], changed)))
    combo = _distinct(columns, starts)  # each run's distinct (price, per_hour, per_gb, code), numbered
    firsts = starts[np.unique(combo, return_index=True)[1]]  # a record of each distinct tail, in its number's order
    texts: dict[int, str] = {}
    ends: dict[int, str] = {}
    tails: list[bytes] = []
    bits = zip(*(column[firsts].tolist() for column in columns), strict=True)
    values = zip(*(records[name][firsts].tolist() for name in names), strict=True)
    for (price_bits, per_hour_bits, per_gb_bits, code), (price, per_hour, per_gb) in zip(bits, values, strict=True):
        end = ends.get(code)
        if end is None:
            end = ends[code] = end_of(code)
        tails.append(
            f'{_text(texts, price_bits, price)},"cny_per_hour":{_text(texts, per_hour_bits, per_hour)},'
            f'"cny_per_gb_hour":{_text(texts, per_gb_bits, per_gb)}{end},'.encode()
        )
    return tails, np.repeat(combo, np.diff(np.append(starts, len(records))))


FEW_RUNS = 32  # fewer runs are told apart in a dict: a few sorts cost more than that


def _distinct(columns: list[np.ndarray], starts: np.ndarray) -> np.ndarray:
    """The number of each run's (price, per_hour, per_gb, code) bits among the distinct ones."""
    if len(starts) <= FEW_RUNS:
        numbers: dict[tuple[int, ...], int] = {}
        keys = zip(*(column[starts].tolist() for column in columns), strict=True)
        return np.array([numbers.setdefault(key, len(numbers)) for key in keys], dtype=np.int64)
    combo = np.zeros(len(starts), dtype=np.int64)
    for column in columns:
        values, of_run = np.unique(column[starts], return_inverse=True)
        combo = np.unique(combo * len(values) + of_run, return_inverse=True)[1]  # < runs², no overflow
    return combo


def _text(texts: dict[int, str], bits: int, value: float) -> str:
    """A stored number's JSON, once per distinct bits: repr, what json writes for a finite float;
    NaN (how the records keep NULL): null."""
    text = texts.get(bits)
    if text is None:
        text = texts[bits] = repr(value) if value == value else "null"
    return text


def _moments(at_us: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each UTC moment (microseconds since 1970, floored to the second as iso_utc drops them) as
    _moment_fields' integers: `YYYY-MM-`, `DD` and `HH:MM:SS`. The civil date is worked out once per
    run of points on one day (Howard Hinnant's `civil_from_days`), then spread to its points."""
    days, of_day = np.divmod(at_us, _US_PER_DAY)
    minutes, seconds = np.divmod(of_day // 1_000_000, 60)
    hms = _HOURS_MINUTES[minutes] | _PAIRS[seconds] << 48
    starts = np.flatnonzero(np.concatenate(([True], days[1:] != days[:-1])))
    z = days[starts] + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    ymd = _PAIRS[year // 100] | _PAIRS[year % 100] << 16 | _PAIRS[month] << 40 | _DASHES
    repeats = np.diff(np.append(starts, len(days)))
    return np.repeat(ymd, repeats), np.repeat(_PAIRS[day].astype(np.uint16), repeats), hms


def end_texts(codes: list[tuple[Any, ...]], currency: str, unit: str) -> Callable[[int], str]:
    """The end of a point of each code: `}`, or its currency and unit first when they differ from
    the series' (`codes`: pricedb.history_files.CODE_COLUMNS' values by code)."""

    def end_of(code: int) -> str:
        point_currency, point_unit = codes[code][3:5]
        if point_currency == currency and point_unit == unit:
            return "}"
        return f',"currency":{dumps(point_currency).decode()},"unit":{dumps(point_unit).decode()}}}'

    return end_of
