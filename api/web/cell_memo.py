"""The market table's cells, each written once per column and way of writing it while the data stays
the same: a view (another filter, another sort, other columns, another currency or language) only
joins ready cells, UTF-8, with each row's place in offer-key order in front where the view hides
part of the offer key (`data-k`, the view's own); 2,000 offers × 37 columns are 74,000 cells, ~75 ms
to write, ~2 ms to join.

A cell depends only on its offer's JSON row and on how its column is written: the column (key and
kind), the currency for money, the language for words (pricing, units, "stale", yes/no), and
whether links name the language for the sku's link (`way_of`). The memo gives each offer a place
(its offer key's), keeps each way's cells in a list by place, and keeps each offer's row beside its
place: a cell is taken only for the very row it was written from (or an equal one), so rows of
other data never get it. Texts repeat down a column (a provider, a vocabulary word, a missing
value) and are kept once per column. Bounded in bytes: past `max_bytes`, the ways used least
recently are forgotten. One lock: writing a way's missing cells holds it, so a view asking for a
way the warm-up (api.web.warm) is writing waits for it rather than writing it again.

Each row's cells in a set of ways (the columns a view shows, in order) are also kept joined, by
place (`rows`): a view of columns shown before, in any order or filter, joins one piece per row,
not one per cell (74,000 cells for every column of 2,000 offers). The first view of a set whose
ways hold every place's cell (after the warm-up) joins every place's row, reading each way's list
in order: a view's own order would gather each way's cells one by one. They count in the same
bound and are forgotten before any way's cells (they are only those cells joined)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import count
from operator import is_, itemgetter
from typing import Any, TypeVar

from api.web.table import Column, kind_of

OfferKey = tuple[str, str, str, str]
Way = tuple[Any, ...]
Row = dict[str, Any]
WORDED = frozenset({"native", "when", "vocab", "flag"})  # kinds whose cells hold words of the language
TEXT_OVERHEAD = 90  # what a kept cell costs beyond its bytes: the bytes' header, its slot in `distinct`
SLOT = 8  # a place in a way's list
K = TypeVar("K", bound="_Kept")
_SERIALS = count()


OFFER_KEY = ("provider", "region", "sku", "pricing")  # the fields of an offer's key, in order


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


class _Kept:
    """Texts by place (UTF-8): one way's cells, or each row's cells in a set of ways joined."""

    def __init__(self) -> None:
        self.texts: list[bytes | None] = []
        self.filled = 0  # places whose text is written
        self.bytes = 0


class _Cells(_Kept):
    """One way's cells, each distinct cell kept once."""

    def __init__(self) -> None:
        super().__init__()
        self.distinct: dict[bytes, bytes] = {}


JOINED_OVERHEAD = 40  # what a joined row costs beyond its bytes (the bytes' header)


class CellMemo:
    CACHE_SHARE = 5  # of the answer cache: every way of 2,000 offers of every card and a few column sets joined

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.serial = next(_SERIALS)  # this memo among all made (places are its own)
        self._lock = threading.RLock()  # `rows` writes missing cells through `cells`
        self._places: dict[OfferKey, int] = {}
        self._rows: list[Row] = []  # the row each place's cells were written from
        self.replaced = 0  # how many times a place took another row (places found before may hold others' cells)
        self._by_id: dict[int, int] = {}  # each place's row, by identity (the rows are kept, so ids stay theirs)
        self._keys: list[OfferKey] = []  # each place's offer key
        self._order: list[int] = []  # each place's rank among all places in offer-key order
        self._fields: set[str] = set()  # the rows' fields
        self._examples: dict[str, dict[type, Any]] = {}  # a value of each type each field has in some row
        self._ways: OrderedDict[Way, _Cells] = OrderedDict()
        self._joined: OrderedDict[tuple[Way, ...], _Kept] = OrderedDict()
        self._starts: list[bytes] = []  # each rank's `<tr data-k="…"`
        self._bytes = 0

    @property
    def cache_share(self) -> int:  # the answer cache keeps it up to this share, as it bounds itself within it
        return self.CACHE_SHARE

    @property
    def cache_size(self) -> int:
        return self._bytes + SLOT * len(self._rows) + 200 * len(self._places)  # a place: key, row id, rank, start

    def places(self, keys: Sequence[OfferKey] | None, rows: Sequence[Row]) -> Places:
        """Each row's place (new offers get one); a row unlike the one its place's cells were
        written from has those cells forgotten (in every way) and takes the place. Without `keys`,
        rows kept here are found by identity (no key made per row) and the others by their keys."""
        with self._lock:
            if keys is None:
                found = list(map(self._by_id.get, map(id, rows)))
                if None not in found:
                    return Places(found)  # type: ignore[arg-type]
                keys = [offer_key(row) for row in rows]
            found = list(map(self._places.get, keys))
            if None in found or not all(map(is_, map(self._rows.__getitem__, found), rows)):  # type: ignore[arg-type]
                self._register(found, keys, rows)
            return Places(found)  # type: ignore[arg-type]  # every place is filled

    def absent(self, fields: Sequence[str]) -> frozenset[str]:
        """Which of `fields` no row of the memo has a value for (so no row of a view has one)."""
        with self._lock:
            return frozenset(f for f in fields if f in self._fields and f not in self._examples)

    def one_kind(self, fields: Sequence[str]) -> frozenset[str]:
        """Which of `fields` have values of one kind only (table.kind_of's by type) in every row kept,
        so the first value found in any rows of the memo, in any order, tells the same kind."""
        with self._lock:
            return frozenset(
                f
                for f in fields
                if f in self._fields and len({kind_of("", v) for v in self._examples.get(f, {}).values()}) <= 1
            )

    def _register(self, found: list[int | None], keys: Sequence[OfferKey], rows: Sequence[Row]) -> None:
        for i, (place, row) in enumerate(zip(found, rows, strict=True)):
            if place is None or (self._rows[place] is not row and self._rows[place] != row):
                self._fields.update(row)
                for field, value in row.items():
                    if value is not None:
                        self._examples.setdefault(field, {}).setdefault(type(value), value)
            if place is None:
                found[i] = self._places[keys[i]] = self._by_id[id(row)] = len(self._rows)
                self._rows.append(row)
                self._keys.append(keys[i])
            elif self._rows[place] is not row and self._rows[place] != row:
                del self._by_id[id(self._rows[place])]
                self._rows[place], self._by_id[id(row)] = row, place
                self.replaced += 1
                for kept in (*self._ways.values(), *self._joined.values()):
                    if place < len(kept.texts) and kept.texts[place] is not None:
                        kept.texts[place] = None
                        kept.filled -= 1

    def ranks(self, places: Places) -> list[int]:
        """Each of `places`' rank among them in offer-key order (sorting numbers, not keys)."""
        with self._lock:
            if len(self._order) < len(self._keys):
                self._order = ranks_in_order(self._keys)
            return ranks_in_order(places.pick(self._order))

    def row_order(self, places: Places) -> Sequence[int]:
        """Each of `places`' rank among all places in offer-key order (for sorting by offer key)."""
        with self._lock:
            if len(self._order) < len(self._keys):
                self._order = ranks_in_order(self._keys)
            return places.pick(self._order)

    def starts(self, ranks: list[int]) -> list[bytes]:
        """Each row's `<tr data-k="rank"`: right after the row before, whose end tag HTML leaves out
        (a `<tr>` ends the row and cell before it), so no white space falls into that row's last cell."""
        with self._lock:
            if len(self._starts) < len(ranks):
                more = range(len(self._starts), len(ranks))
                self._starts.extend(b'<tr data-k="%d"' % rank for rank in more)
                self._bytes += sum(len(start) + JOINED_OVERHEAD for start in self._starts[-len(more) :])
            return list(map(self._starts.__getitem__, ranks))

    def rows(
        self,
        ways: Sequence[Way],
        places: Places,
        rows: Sequence[Row],
        writers: Sequence[Callable[[list[Row]], list[str]]],
    ) -> Sequence[bytes]:
        """Each of `rows`' cells in `ways` joined, with no end tag (the next row's start or `</tbody>`
        ends the row: `starts`), as `writers` write them (each way's, as `cells` takes)."""
        with self._lock:
            joined = self._kept(self._joined, tuple(ways), _Kept)
            texts = joined.texts
            if joined.filled == len(texts):
                return places.pick(texts)  # type: ignore[return-value]
            most = 2 * len(places.at) >= len(texts) > 2 * joined.filled  # the view shows most, most are not joined
            every = self._every_cell(ways) if most else None
            if every is not None:  # join every place's row, reading each way's list in order
                written = list(map(b"".join, zip(*every, strict=True)))  # joined in C
                size = sum(map(len, written)) + (JOINED_OVERHEAD + SLOT) * len(written)
                self._grow(joined, size - joined.bytes)  # every place's text and slot, in place of those before
                joined.texts = texts = written
                joined.filled = len(texts)
            else:
                missing = [i for i, text in enumerate(places.pick(texts)) if text is None]
                todo = Places([places.at[i] for i in missing])
                todo_rows = [rows[i] for i in missing]
                columns = [self.cells(w, todo, todo_rows, write) for w, write in zip(ways, writers, strict=True)]
                written = list(map(b"".join, zip(*columns, strict=True)))
                for place, text in zip(todo.at, written, strict=True):
                    texts[place] = text
                joined.filled += len(missing)
                self._grow(joined, sum(map(len, written)) + JOINED_OVERHEAD * len(written))
            found = places.pick(texts)
            self._within_bound(joined_too=True)
            return found  # type: ignore[return-value]

    def _every_cell(self, ways: Sequence[Way]) -> list[list[bytes]] | None:
        """Each way's cells by place, when every place's cell is written in every way (as after the
        warm-up), each way then the most recently used; else None. Joining rows from these lists in
        place order, rather than from each way's cells picked in a view's order (a gather of 2,000
        items from each of 38 lists), halves the first view of a set of columns over most offers."""
        kept = [self._ways.get(way) for way in ways]
        if any(cells is None or cells.filled != len(self._rows) for cells in kept):
            return None
        for way in ways:
            self._ways.move_to_end(way)
        return [cells.texts for cells in kept]  # type: ignore[union-attr, misc]

    def _within_bound(self, joined_too: bool = False) -> None:
        """Forget what was used least recently until the memo fits its bound: joined rows first (the
        last used stays), then ways (the last used stays); with `joined_too`, the last joined rows too."""
        while self.cache_size > self.max_bytes and len(self._joined) > 1:
            _, oldest = self._joined.popitem(last=False)
            self._bytes -= oldest.bytes
        while self.cache_size > self.max_bytes and len(self._ways) > 1:
            _, oldest_way = self._ways.popitem(last=False)
            self._bytes -= oldest_way.bytes
        if joined_too and self.cache_size > self.max_bytes and self._joined:  # even the last ones do not fit
            _, oldest = self._joined.popitem(last=False)
            self._bytes -= oldest.bytes

    def cells(
        self, way: Way, places: Places, rows: Sequence[Row], write: Callable[[list[Row]], list[str]]
    ) -> Sequence[bytes]:
        """The cells of `rows` (at `places`) written `way`, UTF-8: `write` writes those not kept yet, in one go."""
        with self._lock:
            cells = self._kept(self._ways, way, _Cells)
            texts = cells.texts
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
            self._within_bound()  # the way just used is the last
            return found  # type: ignore[return-value]

    def _kept(self, table: OrderedDict[Any, K], key: Any, make: Callable[[], K]) -> K:
        """What `table` keeps under `key` (made if missing), as the most recently used, with a slot for every place."""
        kept = table.get(key)
        if kept is None:
            kept = table[key] = make()
        else:
            table.move_to_end(key)
        if len(kept.texts) < len(self._rows):
            self._grow(kept, SLOT * (len(self._rows) - len(kept.texts)))
            kept.texts.extend([None] * (len(self._rows) - len(kept.texts)))
        return kept

    def _grow(self, kept: _Kept, size: int) -> None:
        kept.bytes += size
        self._bytes += size


def ranks_in_order(values: Sequence[Any]) -> list[int]:
    """Each value's rank in sorted order."""
    ranks = [0] * len(values)
    for rank, index in enumerate(sorted(range(len(values)), key=values.__getitem__)):
        ranks[index] = rank
    return ranks
