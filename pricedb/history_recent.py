"""The observations since the last compaction (the history's tail: the day or so of runs after the
daily compaction), held in memory as the compacted history's records (pricedb.history_files.RECORD),
so one offer's history is its files' records plus a few of these, with no DuckDB query.

`read_recent` reads them once per data version a run lands (api.history keeps them beside the layout
of that version), sorted by offer and then (observed_at, observation_id); every one of them carries an
observation id above every compacted one, which is how api.history_records merges the two in the
answer's order. Their codes extend the files' codes (same numbers for the same values), so a point is
written the same way whichever part it comes from. Bounded in bytes (GPUPRICE_HISTORY_RECENT_MB): a
longer tail, or one holding a non-finite number (NaN is how the records keep NULL), is not held and
the caller asks DuckDB."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from pricedb.history_files import CODE_COLUMNS, RECORD
from pricedb.scratch import Room

KEY_BYTES = 400  # what one offer's key costs held (its tuple, four strings, its dict entry), charged
ROW_BYTES = RECORD.itemsize + 8  # a record and its share of the order while reading (charged per id)


@dataclass(frozen=True, eq=False)
class RecentPoints:
    """The observations with after < observation_id <= upto, by offer (`slot`, numbered in key order)."""

    after: int  # the compaction's newest id (the layout's compacted_upto)
    upto: int  # the newest observation id when read
    keys: list[tuple[str, str, str, str]]  # each slot's (provider, region, sku, pricing)
    by_key: dict[tuple[str, str, str, str], tuple[int, ...]]  # (provider, lower(region), sku, pricing) → slots
    starts: np.ndarray  # slot s's records are records[starts[s]:starts[s + 1]]
    held: np.ndarray  # RECORD, in (slot, observed_at, observation_id) order
    codes: list[tuple[Any, ...]]  # CODE_COLUMNS' values by code: the files' codes, then new ones

    @property
    def nbytes(self) -> int:
        return self.held.nbytes + self.starts.nbytes + KEY_BYTES * len(self.keys)

    def slots_of(
        self, providers: tuple[str, ...], lower_regions: list[str], skus: tuple[str, ...], pricings: tuple[str, ...]
    ) -> list[int]:
        """The slots these values name (every combination)."""
        return [
            slot
            for provider in providers
            for region in lower_regions
            for sku in skus
            for pricing in pricings
            for slot in self.by_key.get((provider, region, sku, pricing), ())
        ]

    def count(self, slot: int) -> int:
        return int(self.starts[slot + 1] - self.starts[slot])

    def records(self, slot: int, nowait: bool = False, room: Room | None = None) -> np.ndarray:
        """Slot `slot`'s records in order (read like PointFiles.records: already in memory, a view of
        them, so `room` is not needed)."""
        return self.held[int(self.starts[slot]) : int(self.starts[slot + 1])]


_TAIL = "(SELECT * FROM observations WHERE observation_id > ? AND observation_id <= ?)"
_KEYS = (
    "SELECT provider, region, sku, pricing, lower(region) AS lower_region, "
    "row_number() OVER (ORDER BY provider, region, sku, pricing) - 1 AS slot "
    f"FROM (SELECT DISTINCT provider, region, sku, pricing FROM {_TAIL})"
)
_CODE_LIST = ", ".join(CODE_COLUMNS)
_CODES = (
    f"SELECT {_CODE_LIST}, row_number() OVER (ORDER BY {_CODE_LIST}) - 1 AS code "
    f"FROM (SELECT DISTINCT {_CODE_LIST} FROM {_TAIL})"
)
_ROWS = f"""
    SELECT k.slot, epoch_us(t.observed_at) AS at, t.price, coalesce(t.cny_per_hour, 'NaN'::DOUBLE) AS per_hour,
           coalesce(t.cny_per_gb_hour, 'NaN'::DOUBLE) AS per_gb, c.code,
           isfinite(t.price) AND coalesce(isfinite(t.cny_per_hour), true)
               AND coalesce(isfinite(t.cny_per_gb_hour), true) AS finite
    FROM {_TAIL} t JOIN ({_KEYS}) k USING (provider, region, sku, pricing)
         JOIN ({_CODES}) c USING ({_CODE_LIST})
    ORDER BY k.slot, t.observed_at, t.observation_id
"""


def read_recent(
    cur: duckdb.DuckDBPyConnection, after: int, upto: int, codes: list[tuple[Any, ...]], limit_bytes: float
) -> RecentPoints | None:
    """The observations after `after` up to `upto` (ids), their codes numbered after `codes` (the
    files'), or None when they would take more than `limit_bytes` or cannot be held exactly."""
    if (upto - after) * ROW_BYTES > limit_bytes:  # ids are distinct integers: at most this many rows
        return None
    row = cur.execute(f"SELECT count(*) FROM {_TAIL}", [after, upto]).fetchone()
    expected = int(row[0]) if row else 0
    keys: list[tuple[str, str, str, str]] = []
    by_key: dict[tuple[str, str, str, str], tuple[int, ...]] = {}
    for provider, region, sku, pricing, lower_region, slot in cur.execute(
        f"{_KEYS} ORDER BY slot", [after, upto]
    ).fetchall():
        if slot != len(keys):
            return None
        keys.append((provider, region, sku, pricing))
        lower = (provider, lower_region, sku, pricing)
        by_key[lower] = (*by_key.get(lower, ()), slot)
    known = {code: number for number, code in enumerate(codes)}
    combined = list(codes)
    renumber = []
    for *values, code in cur.execute(f"{_CODES} ORDER BY code", [after, upto]).fetchall():
        if code != len(renumber):
            return None
        value = tuple(values)
        if value not in known:
            known[value] = len(combined)
            combined.append(value)
        renumber.append(known[value])
    found = cur.execute(_ROWS, [after, upto, after, upto, after, upto]).fetchnumpy()
    rows = len(found["at"])
    if rows == 0 or rows != expected or not bool(np.all(found["finite"])):  # a NULL in a code: not joined
        return None
    held = np.empty(rows, dtype=RECORD)
    for name in ("at", "price", "per_hour", "per_gb"):
        held[name] = found[name]
    held["code"] = np.asarray(renumber, dtype=np.int32)[np.asarray(found["code"], dtype=np.int64)]
    starts = np.searchsorted(np.asarray(found["slot"], dtype=np.int64), np.arange(len(keys) + 1), "left")
    recent = RecentPoints(after, upto, keys, by_key, starts.astype(np.int64), held, combined)
    return recent if recent.nbytes <= limit_bytes else None


def extend_recent(
    cur: duckdb.DuckDBPyConnection, held: RecentPoints, upto: int, limit_bytes: float
) -> RecentPoints | None:
    """`held` with the observations landed since (ids after held.upto up to `upto`): only those are
    read, so a run landing costs its own rows plus one sort of what is held, not the whole tail again.
    New offers take the next slots (slots need not follow key order: the answer sorts its keys)."""
    part = read_recent(cur, held.upto, upto, held.codes, limit_bytes - held.nbytes)
    if part is None:
        return None
    slot_of = {key: slot for slot, key in enumerate(held.keys)}
    keys, by_key = list(held.keys), dict(held.by_key)
    lower_of = {slot: lower for lower, slots in part.by_key.items() for slot in slots}  # DuckDB's lower()
    renumber = []
    for part_slot, key in enumerate(part.keys):
        slot = slot_of.get(key)
        if slot is None:
            slot = slot_of[key] = len(keys)
            keys.append(key)
            lower = lower_of[part_slot]
            by_key[lower] = (*by_key.get(lower, ()), slot)
        renumber.append(slot)
    rows = np.concatenate([
        np.repeat(np.arange(len(held.keys)), np.diff(held.starts)),
        np.asarray(renumber, dtype=np.int64)[np.repeat(np.arange(len(part.keys)), np.diff(part.starts))],
    ])  # fmt: skip
    records = np.concatenate([held.held, part.held])
    order = np.lexsort((records["at"], rows))  # stable: at one moment, the earlier rows (lower ids) first
    starts = np.searchsorted(rows[order], np.arange(len(keys) + 1), "left").astype(np.int64)
    recent = RecentPoints(held.after, upto, keys, by_key, starts, records[order], part.codes)
    return recent if recent.nbytes <= limit_bytes else None
