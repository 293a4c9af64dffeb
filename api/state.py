"""What the API holds between requests: the store, and answers that only change when data does.

Current offers change only when a run lands (the store's `version` moves) or when an offer's
staleness flips with time (`valid_until`). Between those moments every answer to the same question
is the same, so it is computed once and served from memory as ready-made bytes."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pricedb import clock
from pricedb.queries import CurrentOffers, current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore

CACHE_ENTRIES = 2048

T = TypeVar("T")


def now_utc() -> datetime:
    return clock.now_naive()


def dumps(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str).encode()


class AppState:
    def __init__(self, store: PriceStore, settings: Settings, clock: Callable[[], datetime] = now_utc) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self._lock = threading.Lock()
        self._current: CurrentOffers | None = None
        self._version = -1
        self._answers: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        # Answers by raw request (path, query string), served before routing by AnswerCache.
        self._raw: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()

    def _fresh(self, now: datetime) -> bool:
        if self._current is None or self._version != self.store.version:
            return False
        until = self._current.valid_until
        return until is None or now < until

    def current(self) -> CurrentOffers:
        now = self.clock()
        with self._lock:
            if not self._fresh(now):
                version = self.store.version
                self._current = current_offers(self.store.cursor(), now)
                self._version = version
                self._answers.clear()
                self._raw.clear()
            assert self._current is not None
            return self._current

    def cached(self, key: tuple[Any, ...], build: Callable[[CurrentOffers], Any]) -> bytes:
        """The JSON bytes answering `key`, built from current offers at most once per data change."""
        return self.cached_value(key, lambda current: dumps(build(current)))

    def cached_value(self, key: tuple[Any, ...], build: Callable[[CurrentOffers], T]) -> T:
        """Like `cached`, for answers that are not JSON (CSV, Parquet, Atom, with their headers)."""
        current = self.current()
        with self._lock:
            body = self._answers.get(key)
            if body is not None:
                self._answers.move_to_end(key)
                return body
        body = build(current)
        with self._lock:
            if self._current is current:
                self._answers[key] = body
                if len(self._answers) > CACHE_ENTRIES:
                    self._answers.popitem(last=False)
        return body

    def remember_raw(self, path: str, query: bytes, body: bytes) -> None:
        """Keep a successful answer under the exact request that produced it."""
        with self._lock:
            if self._fresh(self.clock()):
                self._raw[(path, query)] = body
                if len(self._raw) > CACHE_ENTRIES:
                    self._raw.popitem(last=False)

    def lookup_raw(self, path: str, query: bytes) -> bytes | None:
        """The answer given to this exact request before, if the data has not changed since."""
        now = self.clock()
        with self._lock:
            if not self._fresh(now):
                return None
            return self._raw.get((path, query))
