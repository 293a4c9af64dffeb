"""A least-recently-used cache bounded by the bytes its entries hold, not by their number.

Answers differ in size by orders of magnitude (a 200-byte `/healthz`, a 300 KB `/cheapest` with
every option), so a bound on entries is no bound on memory. Each entry is charged the bytes of its
key and value plus a fixed overhead for the containers; the oldest entries go when the total passes
the bound, and an entry larger than a share of the bound is not kept at all (one huge answer must
not flush every other). A value that bounds itself may claim a larger share (`cache_share`: it
may hold 1/`cache_share` of the bound, as the market page's cell memo does). Not thread-safe: its
owner holds a lock."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

ENTRY_OVERHEAD = 256  # dict slot, tuple, bytes header: what a tiny entry costs beyond its content
LARGEST_SHARE = 8  # an entry may hold at most 1/8 of the bound


_SMALL = frozenset({int, float, bool, type(None)})  # charged 16 (as below), without the look-ups below


def size_of(value: Any) -> int:
    """Bytes held by an answer: its bytes and strings, inside tuples and dataclasses too, or what a
    value says it holds (`cache_size`)."""
    kind = type(value)  # the usual kinds first, by exact type: most keys and answers are these
    if kind is bytes:
        return len(value)
    if kind is str:
        return len(value.encode())
    if kind is tuple:
        return sum([size_of(item) for item in value])
    if kind in _SMALL:
        return 16
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, tuple | list):
        return sum(size_of(item) for item in value)
    if isinstance(value, BaseModel) and not hasattr(kind, "cache_size"):
        # A model in a key (the estimator's memo keys hold a question): small, as below, but each look-up
        # below would go through pydantic's __getattr__, which raises (~8 µs each).
        return 16
    charged = getattr(value, "cache_size", None)
    if isinstance(charged, int):
        return charged
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return sum(size_of(getattr(value, name)) for name in fields)
    return 16  # numbers, None, datetimes: small


@dataclass
class _Entry:
    value: Any
    size: int


class ByteLRU:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry.value

    def put(self, key: Hashable, value: Any) -> bool:
        """Keep `value` under `key`; False when it is too large to keep."""
        size = size_of(key) + size_of(value) + ENTRY_OVERHEAD
        self.discard(key)
        share = LARGEST_SHARE if type(value) is bytes else getattr(value, "cache_share", LARGEST_SHARE)
        if size > self.max_bytes // min(LARGEST_SHARE, share):
            return False
        self._entries[key] = _Entry(value, size)
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, oldest = self._entries.popitem(last=False)
            self.bytes -= oldest.size
        return True

    def refit(self, key: Hashable) -> None:
        """Charge a kept entry again after its value grew (the oldest go if the bound is passed)."""
        entry = self._entries.get(key)
        if entry is not None:
            self.put(key, entry.value)

    def discard(self, key: Hashable) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self.bytes -= entry.size

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0
