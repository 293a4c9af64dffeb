"""The estimator's memos: what a question's estimate works out from its job alone (the architecture,
the whole estimate, its per-GPU figures, a card's decoding speed), kept for the next question about
the same job. Clients choose the jobs (any `params`, `context`, `batch`, …), so the memos are bounded
in bytes, not entries: one `ByteLRU` for all of them, least recently used first out, within a share of
GPUPRICE_QUESTION_MEMO_MB (api.state: `bound`). Each entry is charged what an entry of its function
was measured to hold, key included (tests/estimator/test_memo.py holds the charges above what entries
allocate). Results are shared: read them, never change them."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from api.byte_cache import ByteLRU

P = ParamSpec("P")
T = TypeVar("T")

# Until a state bounds it (tests and the CLI make none): 2 MB, the share at the default budget.
DEFAULT_MAX_BYTES = 2 * 2**20


class _Charged:
    """A result with what its entry is charged (ByteLRU reads `cache_size`)."""

    __slots__ = ("cache_size", "value")

    def __init__(self, value: object, cache_size: int) -> None:
        self.value = value
        self.cache_size = cache_size


_lock = threading.Lock()
_kept = ByteLRU(DEFAULT_MAX_BYTES)


def bound(max_bytes: int) -> None:
    """Keep at most `max_bytes` from now on (what was kept goes, unless the bound is the same)."""
    with _lock:
        if _kept.max_bytes != max_bytes:
            _kept.clear()
            _kept.max_bytes = max_bytes


def held_bytes() -> int:
    """What the kept entries are charged together (never more than the bound)."""
    with _lock:
        return _kept.bytes


def max_bytes() -> int:
    with _lock:
        return _kept.max_bytes


def kept_in_memo(entry_bytes: int) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Keep `function`'s results by its arguments (hashable, given by position) in the memos, each
    entry charged `entry_bytes` beyond its key's texts. An exception is raised again each time, never kept."""

    def decorate(function: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(function)
        def kept(*args: P.args, **kwargs: P.kwargs) -> T:
            key = (function, *args, *sorted(kwargs.items()))
            with _lock:
                found = _kept.get(key)
            if found is not None:
                return found.value  # type: ignore[no-any-return]
            value = function(*args, **kwargs)
            with _lock:
                _kept.put(key, _Charged(value, entry_bytes))
            return value

        return kept

    return decorate
