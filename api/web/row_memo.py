"""The market page's rows, each written once per way of writing them while the data stays the same.

A row of the market table depends only on its offer's JSON row and on how the page writes rows
(the columns shown, the currency, the language), never on the other rows, except for its place in
offer-key order (`data-k`), which the page puts in front. So a memo per way of writing keeps each
offer's row, and a new view (another filter, another sort) only joins ready strings. The memo lives
in the state's answer cache, which forgets it when the offers change; a row is taken from it only
for the very row it was written from (or an equal one), so an answer of other data never gets it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

OfferKey = tuple[str, str, str, str]
ENTRY_OVERHEAD = 120  # a dict slot, the key's tuple and the pair: what a row costs beyond its text


def offer_key(row: dict[str, Any]) -> OfferKey:
    return (row["provider"], row["region"], row["sku"], row["pricing"])


class RowMemo:
    """Each offer's written row, by offer key (kept with the JSON row it was written from)."""

    def __init__(self) -> None:
        self._rows: dict[OfferKey, tuple[dict[str, Any], bytes]] = {}
        self._bytes = 0  # the rows' bytes

    @property
    def cache_size(self) -> int:
        return self._bytes + ENTRY_OVERHEAD * len(self._rows)

    def written(
        self,
        keys: Sequence[OfferKey],
        rows: Sequence[dict[str, Any]],
        write: Callable[[list[dict[str, Any]]], list[bytes]],
    ) -> tuple[list[bytes], bool]:
        """Each of `rows` (whose offer keys are `keys`) written: `write` writes those not yet kept,
        in one go. True when some were new."""
        kept = list(map(self._rows.get, keys))
        missing = [
            i
            for i, (row, pair) in enumerate(zip(rows, kept, strict=True))
            if pair is None or (pair[0] is not row and pair[0] != row)
        ]
        if missing:
            fresh = write([rows[i] for i in missing])
            for i, text in zip(missing, fresh, strict=True):
                if kept[i] is not None:  # written from other data: replaced
                    self._bytes -= len(kept[i][1])  # type: ignore[index]
                pair = kept[i] = (rows[i], text)
                self._rows[keys[i]] = pair
                self._bytes += len(text)
        return [pair[1] for pair in kept], bool(missing)  # type: ignore[index]  # every pair is filled above
