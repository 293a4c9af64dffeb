"""What the API holds between requests: the store, and answers that only change when data does.

Current offers change only when a run lands (the store's `version` moves) or when an offer's
staleness flips with time (`valid_until`). Between those moments every answer to the same question
is the same, so it is computed once and served from memory as ready-made bytes. The answers kept
are bounded in bytes (`GPUPRICE_ANSWER_CACHE_MB`), least recently used first out.

Two locks: `_lock` guards only the answers in memory and is held for microseconds, because the
event loop takes it too (AnswerCache); `_refresh` serializes the database work of reloading the
current offers, which runs in worker threads. An answer is built by one thread at a time: another
thread asking for it meanwhile waits for that one's (a visitor arriving while the market page is
written ahead after new data shares the warm-up's work instead of doing it again); the event loop,
which answers some questions from memory itself, never waits and builds its own."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from api.budget import HeavyGate, active_budget
from api.byte_cache import ByteLRU
from api.estimator import memo as estimator_memo
from api.query_fast import ReusedQuestions
from pricedb import clock
from pricedb.queries import CurrentOffers, current_offers
from pricedb.settings import Settings
from pricedb.snapshot import MarketState, StateOf, market_state
from pricedb.store import PriceStore

if TYPE_CHECKING:
    from api.replica import Replica

T = TypeVar("T")
# The estimator's memos' share of GPUPRICE_QUESTION_MEMO_MB (2 of 32 MB: ~80 jobs' estimates and plans;
# a job asked again is answered from the reused questions, which keep its estimate).
ESTIMATOR_MEMO_SHARE = 16
COLUMNS = "offer_columns"  # the name of the columnar form of the current offers (api.cheapest_fast)


def now_utc() -> datetime:
    return clock.now_naive()


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)  # json.dumps makes one per call


def dumps(payload: Any) -> bytes:
    return _ENCODER.encode(payload).encode()


@dataclass(frozen=True)
class Answer:
    """A JSON answer as sent (`body`) and as built (`payload`, what parsing `body` gives back), so a
    page reads the rows its JSON route sends without parsing them again. Charged as its body and
    `held`, what its payload holds of its own: none when the payload's rows are the current offers'
    JSON rows (api.offer_rows), `OWN_PAYLOAD` times the body when they are its own (a past day's)."""

    body: bytes
    payload: Any
    held: int = 0

    @classmethod
    def of(cls, payload: Any, own_rows: bool = False) -> Answer:
        body = dumps(payload)
        return cls(body, payload, int(OWN_PAYLOAD * len(body)) if own_rows else 0)

    @property
    def cache_size(self) -> int:
        return len(self.body) + self.held


# What a payload of its own holds against its JSON: a past day's 500 rows at 50,000 offers, 2.0 times
# (tracemalloc, 2,393 bytes a row), the test catalog's 2.7 (longer notes); tests/web/test_market_memo.py
# holds the answer's charge between 1× and 2× of what it allocates.
OWN_PAYLOAD = 3.0


BUILD_WAIT_S = 30.0  # how long a thread waits for another's build of the same answer before building it too


def on_loop() -> bool:
    """Whether this thread runs the event loop (which never waits for another thread's build)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _Build:
    """An answer being built by one thread, which others asking for it wait for."""

    def __init__(self, current: CurrentOffers) -> None:
        self.current = current
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.value: Any = None
        self.built = False


class AppState:
    def __init__(
        self,
        store: PriceStore,
        settings: Settings,
        clock: Callable[[], datetime] = now_utc,
        replica: Replica | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.replica = replica  # serving a published snapshot (api.replica), None in the collecting process
        self.cache_hits: Counter[str] = Counter()  # answers served from memory, by kind (for /metrics)
        self.cache_misses: Counter[str] = Counter()
        self.heavy = HeavyGate(settings.api_heavy_concurrency, settings.api_budget_s)
        self._lock = threading.Lock()
        self._refresh = threading.Lock()
        self._current: CurrentOffers | None = None
        self._version = -1
        # Answers by question (("answer", key)) and by raw request (("raw", path, query string), served
        # before routing by AnswerCache), all valid for the current offers only.
        self._answers = ByteLRU(int(settings.answer_cache_mb * 2**20))
        # New `/cheapest` questions by model asked again with other hours (api.query_fast): kept across data
        # changes (what they hold depends on the question alone), bounded in bytes on their own.
        # The estimator's memos (api.estimator.memo) serve the same new questions: a share of their bound.
        reused_bytes = int(settings.question_memo_mb * 2**20)
        estimator_memo.bound(reused_bytes // ESTIMATOR_MEMO_SHARE)
        self.reused = ReusedQuestions(reused_bytes - reused_bytes // ESTIMATOR_MEMO_SHARE)
        # Forms of the current offers built once per reload (the columnar form /cheapest reads), by name.
        self._derived: dict[str, Any] = {}
        self._building: dict[tuple[Any, ...], _Build] = {}  # answers being built, by key
        self.schema_version = store.schema_version()  # migrations run only when the store opens

    def cursor(self) -> Any:
        """A DuckDB cursor for this thread; inside a heavy answer's budget, one the budget can interrupt."""
        budget = active_budget()
        return budget.cursor(self.store) if budget is not None else self.store.cursor()

    def _fresh(self, now: datetime) -> bool:
        if self._current is None or self._version != self.store.version:
            return False
        until = self._current.valid_until
        return until is None or now < until

    def fresh_current(self) -> CurrentOffers | None:
        """The current offers if they are loaded and still valid, without touching the database."""
        with self._lock:
            return self._current if self._fresh(self.clock()) else None

    def current(self) -> CurrentOffers:
        loaded = self.fresh_current()
        if loaded is not None:
            return loaded
        now = self.clock()
        with self._refresh:  # one reload at a time; the answers lock stays free meanwhile
            with self._lock:
                if self._fresh(now):
                    assert self._current is not None
                    return self._current
            version = self.store.version
            current = current_offers(self.cursor(), now)
            with self._lock:
                self._current, self._version = current, version
                self._answers.clear()
                self._derived = {}
            return current

    def answers_from_memory(self) -> bool:
        """Whether the current offers and their columnar form are loaded and valid: a `/cheapest`
        answer then reads memory only (no query, no build)."""
        return self.in_memory() is not None

    def in_memory(self) -> tuple[CurrentOffers, Any] | None:
        """The current offers and their columnar form, when both are loaded and valid."""
        with self._lock:
            if self._fresh(self.clock()):
                columns = self._derived.get(COLUMNS)
                if columns is not None:
                    assert self._current is not None
                    return self._current, columns
        return None

    def derived(self, current: CurrentOffers, name: str, build: Callable[[CurrentOffers], T]) -> T:
        """`build(current)`, made once for these current offers (every question then reads it), and
        made again only after they are reloaded (a run landed, or an offer's staleness flipped)."""
        with self._lock:
            found = self._derived.get(name) if self._current is current else None
        if found is not None:
            return found
        with self._refresh:  # built once, not by every thread that asks at the same moment
            with self._lock:
                found = self._derived.get(name) if self._current is current else None
            if found is None:
                found = build(current)
                with self._lock:
                    if self._current is current:
                        self._derived[name] = found
            return found

    def cached(self, key: tuple[Any, ...], build: Callable[[CurrentOffers], Any]) -> bytes:
        """The JSON bytes answering `key`, built from current offers at most once per data change."""
        return self.cached_answer(key, build).body

    def cached_answer(self, key: tuple[Any, ...], build: Callable[[CurrentOffers], Any]) -> Answer:
        """Like `cached`, with the answer as built beside its bytes (JSON-ready values only)."""
        return self.cached_value(key, lambda current: Answer.of(build(current)))

    def cached_value(self, key: tuple[Any, ...], build: Callable[[CurrentOffers], T]) -> T:
        """Like `cached`, for answers that are not JSON (CSV, Parquet, Atom, with their headers).
        If another thread is building the same answer from the same offers, its answer (waited for)."""
        current = self.current()
        while True:
            with self._lock:
                body = self._answers.get(("answer", key))
                if body is not None:
                    self.cache_hits["answer"] += 1
                    return body
                other = self._building.get(key)
                if other is None or other.current is not current or other.owner == threading.get_ident() or on_loop():
                    self.cache_misses["answer"] += 1
                    mine = self._building[key] = _Build(current)
                    break
            if not other.done.wait(BUILD_WAIT_S):  # stuck: build it too, rather than wait on
                return build(current)
            if other.built:
                self.cache_hits["answer"] += 1
                return other.value
        try:
            mine.value, mine.built = build(current), True
            with self._lock:
                if self._current is current:
                    self._answers.put(("answer", key), mine.value)
        finally:
            with self._lock:
                if self._building.get(key) is mine:
                    del self._building[key]
            mine.done.set()
        return mine.value

    def market_states(self) -> StateOf:
        """Each cutoff's market state (pricedb.snapshot) read once per data change and kept with the
        answers (bounded in bytes with them): every question about a past day or a digest then reads
        only its own rows."""

        def state_of(cutoff: datetime) -> MarketState:
            return self.cached_value(("market state", cutoff), lambda _: market_state(self.cursor(), cutoff))

        return state_of

    def computed(self, kind: str) -> None:
        """Count an answer worked out without looking for it in memory (`cache_misses`: computed)."""
        with self._lock:
            self.cache_misses[kind] += 1

    def refit(self, key: tuple[Any, ...], value: Any) -> None:
        """Charge a kept value again after it grew (a memo filled as views ask), if it is still kept."""
        with self._lock:
            if self._answers.get(("answer", key)) is value:
                self._answers.put(("answer", key), value)

    def remember_raw(self, path: str, query: bytes, body: bytes) -> None:
        """Keep a successful answer under the exact request that produced it."""
        with self._lock:
            if self._fresh(self.clock()):
                self._answers.put(("raw", path, query), body)

    def lookup_raw(self, path: str, query: bytes) -> bytes | None:
        """The answer given to this exact request before, if the data has not changed since."""
        now = self.clock()
        with self._lock:
            body = self._answers.get(("raw", path, query)) if self._fresh(now) else None
            (self.cache_hits if body is not None else self.cache_misses)["request"] += 1
            return body

    def cached_bytes(self) -> int:
        """What the kept answers hold, as the cache counts it (bounded by GPUPRICE_ANSWER_CACHE_MB)."""
        with self._lock:
            return self._answers.bytes
