"""The current offers' JSON rows (api.answers.offer_json), each written once while it is kept: every
answer holding an offer then holds the same row, which the market page's cell memo recognises, and a
row's offer's exact moment of observation is known by the row (the page sorts by it; the row writes
it to the second).

Kept per set of current offers and bounded in bytes (ROW_BYTES a row), least recently used first out:
the market page and `/offers` ask for at most a page (`max_page_limit`, 5,000) at a time, and a row
for each of 50,000 offers took 54 MB. A row asked for again after it went out is written again, equal
to the first (the cell memo compares rows by value when their identity differs)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from pricedb.queries import Offer

Row = dict[str, Any]
OfferKey = tuple[str, str, str, str]
# What a row holds (tracemalloc: 1,137 bytes an offer at 50,000 offers, the dicts themselves
# mostly), with its slot here and its moment.
ROW_BYTES = 1_280


class OfferRows:
    def __init__(self, max_bytes: int, write: Callable[[Offer], Row]) -> None:
        self.max_rows = max(0, max_bytes // ROW_BYTES)
        self._write = write
        self._rows: OrderedDict[OfferKey, Row] = OrderedDict()
        self._moments: dict[int, datetime] = {}  # by the id of a row kept (kept, its id is its own)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def bytes(self) -> int:
        return len(self._rows) * ROW_BYTES

    def rows(self, offers: Iterable[Offer]) -> list[Row]:
        """Each offer's row: the one kept, or written now (and kept while the bound allows)."""
        found = []
        with self._lock:
            kept = self._rows
            for offer in offers:
                key = offer.key
                row = kept.get(key)
                if row is None:
                    row = self._write(offer)
                    if self.max_rows:
                        kept[key] = row
                        self._moments[id(row)] = offer.observed_at
                else:
                    kept.move_to_end(key)
                found.append(row)
            while len(kept) > self.max_rows:
                _, oldest = kept.popitem(last=False)
                del self._moments[id(oldest)]
        return found

    def moments(self, rows: Iterable[Row]) -> list[datetime | None]:
        """Each row's offer's moment of observation as the offer holds it (to the microsecond), None
        for a row not kept here (another day's, or gone out since)."""
        with self._lock:
            return list(map(self._moments.get, map(id, rows)))
