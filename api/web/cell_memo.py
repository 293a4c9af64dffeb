"""The market table's cells, each written once per column and way of writing it while the data stays
the same: a view (another filter, another sort, other columns, another currency or language) only
joins ready cells, UTF-8, with each row's place in offer-key order in front (`data-k`, the view's
own); 2,000 offers × 37 columns are 74,000 cells, ~75 ms to write, ~2 ms to join.

A cell depends only on its offer's JSON row and on how its column is written: the column (key and
kind), the currency for money, the language for words (pricing, units, "stale", yes/no), and
whether links name the language for the sku's link (`way_of`). The memo gives each offer a place
(its offer key's), keeps each way's cells in a list by place, and keeps each offer's row beside its
place: a cell is taken only for the very row it was written from (or an equal one), so rows of
other data never get it. Texts repeat down a column (a provider, a vocabulary word, a missing
value) and are kept once per column. Bounded in bytes: past `max_bytes`, the ways used least
recently are forgotten. One lock: writing a way's missing cells holds it, so a view asking for a
way the warm-up (api.web.warm) is writing waits for it rather than writing it again."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from operator import is_, itemgetter
from typing import Any

from api.web.table import Column

OfferKey = tuple[str, str, str, str]
Way = tuple[Any, ...]
Row = dict[str, Any]
WORDED = frozenset({"native", "when", "vocab", "flag"})  # kinds whose cells hold words of the language
TEXT_OVERHEAD = 90  # what a kept cell costs beyond its bytes: the bytes' header, its slot in `distinct`
SLOT = 8  # a place in a way's list


def offer_key(row: Row) -> OfferKey:
    return (row["provider"], row["region"], row["sku"], row["pricing"])


def way_of(column: Column, currency: str, lang: str, lang_given: bool) -> Way:
    """Everything a column's cells depend on besides the row (table.column_cells' inputs)."""
    kind = column.kind
    return (
        column.key,
        kind,
        currency if kind == "money" else None,
        lang if kind in WORDED else None,
        (lang if lang_given else "") if column.key == "sku" else None,  # the offer link names the language
    )


class Places:
    """Rows' places in a memo, and how to pick what is kept at them from a list by place."""

    def __init__(self, at: list[int]) -> None:
        self.at = at
        picker = itemgetter(*at) if len(at) > 1 else None  # a tuple of the items, picked in C
        self.pick: Callable[[list[Any]], Sequence[Any]] = picker or (lambda kept: [kept[i] for i in at])


class _Cells:
    """One way's cells (UTF-8), by place, each distinct cell kept once."""

    def __init__(self) -> None:
        self.texts: list[bytes | None] = []
        self.filled = 0  # places whose cell is written
        self.distinct: dict[bytes, bytes] = {}
        self.bytes = 0


class CellMemo:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._places: dict[OfferKey, int] = {}
        self._rows: list[Row] = []  # the row each place's cells were written from
        self._keys: list[OfferKey] = []  # each place's offer key
        self._order: list[int] = []  # each place's rank among all places in offer-key order
        self._fields: set[str] = set()  # the rows' fields
        self._valued: set[str] = set()  # the fields some row has a value for
        self._ways: OrderedDict[Way, _Cells] = OrderedDict()
        self._bytes = 0

    @property
    def cache_size(self) -> int:
        return self._bytes + SLOT * len(self._rows) + 120 * len(self._places)

    def places(self, keys: Sequence[OfferKey], rows: Sequence[Row]) -> Places:
        """Each row's place (new offers get one); a row unlike the one its place's cells were
        written from has those cells forgotten (in every way) and takes the place."""
        with self._lock:
            found = list(map(self._places.get, keys))
            if None in found or not all(map(is_, map(self._rows.__getitem__, found), rows)):  # type: ignore[arg-type]
                self._register(found, keys, rows)
            return Places(found)  # type: ignore[arg-type]  # every place is filled

    def absent(self, fields: Sequence[str]) -> frozenset[str]:
        """Which of `fields` no row of the memo has a value for (so no row of a view has one)."""
        with self._lock:
            return frozenset(f for f in fields if f in self._fields and f not in self._valued)

    def _register(self, found: list[int | None], keys: Sequence[OfferKey], rows: Sequence[Row]) -> None:
        for i, (place, row) in enumerate(zip(found, rows, strict=True)):
            if place is None or (self._rows[place] is not row and self._rows[place] != row):
                self._fields.update(row)
                self._valued.update(field for field, value in row.items() if value is not None)
            if place is None:
                found[i] = self._places[keys[i]] = len(self._rows)
                self._rows.append(row)
                self._keys.append(keys[i])
            elif self._rows[place] is not row and self._rows[place] != row:
                self._rows[place] = row
                for cells in self._ways.values():
                    if place < len(cells.texts) and cells.texts[place] is not None:
                        cells.texts[place] = None
                        cells.filled -= 1

    def ranks(self, places: Places) -> list[int]:
        """Each of `places`' rank among them in offer-key order (sorting numbers, not keys)."""
        with self._lock:
            if len(self._order) < len(self._keys):
                self._order = ranks_in_order(self._keys)
            return ranks_in_order(places.pick(self._order))

    def cells(
        self, way: Way, places: Places, rows: Sequence[Row], write: Callable[[list[Row]], list[str]]
    ) -> Sequence[bytes]:
        """The cells of `rows` (at `places`) written `way`, UTF-8: `write` writes those not kept yet, in one go."""
        with self._lock:
            cells = self._ways.get(way)
            if cells is None:
                cells = self._ways[way] = _Cells()
            else:
                self._ways.move_to_end(way)
            texts = cells.texts
            if len(texts) < len(self._rows):
                self._grow(cells, SLOT * (len(self._rows) - len(texts)))
                texts.extend([None] * (len(self._rows) - len(texts)))
            if cells.filled == len(texts):  # every offer's cell is written (as after the warm-up)
                return places.pick(texts)  # type: ignore[return-value]
            found = list(places.pick(texts))
            missing = [i for i, text in enumerate(found) if text is None]
            for i, written in zip(missing, write([rows[i] for i in missing]) if missing else (), strict=True):
                text = written.encode()
                kept = cells.distinct.get(text)
                if kept is None:
                    kept = cells.distinct[text] = text
                    self._grow(cells, len(text) + TEXT_OVERHEAD)
                place = places.at[i]
                if texts[place] is None:
                    cells.filled += 1
                found[i] = texts[place] = kept
            while self.cache_size > self.max_bytes and len(self._ways) > 1:  # the way just used is the last
                _, oldest = self._ways.popitem(last=False)
                self._bytes -= oldest.bytes
            return found  # type: ignore[return-value]

    def _grow(self, cells: _Cells, size: int) -> None:
        cells.bytes += size
        self._bytes += size


def ranks_in_order(values: Sequence[Any]) -> list[int]:
    """Each value's rank in sorted order."""
    ranks = [0] * len(values)
    for rank, index in enumerate(sorted(range(len(values)), key=values.__getitem__)):
        ranks[index] = rank
    return ranks
