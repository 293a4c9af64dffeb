"""Heavy answers are bounded, so one broad question cannot hold the server for minutes.

A heavy answer (history, day snapshots, digests, exports) first waits for one of
`GPUPRICE_API_HEAVY_CONCURRENCY` slots, on the event loop where waiting costs nothing, then runs in
a worker thread. It may wait `GPUPRICE_API_BUDGET_S` seconds for its slot and then work as long:
past that, every DuckDB query the answer has running is interrupted (`cursor.interrupt()` from a
timer), a query or fetch it starts later is refused, and the request is answered 503 with
`Retry-After` and the reason. (Waiting does not eat into the work's time, so a queue of heavy
questions does not turn every one of them into wasted, interrupted work.)

The answer's code asks `AppState.cursor()` for its cursors; inside a budget that hands out cursors
the budget watches (the budget travels in a context variable, which worker threads inherit)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio
import duckdb
from starlette.concurrency import run_in_threadpool

T = TypeVar("T")


class BudgetExceeded(Exception):
    """A heavy answer ran out of time (or never got a slot): 503 with Retry-After."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = max(1, math.ceil(retry_after_s))


class _WatchedCursor:
    """A DuckDB cursor that refuses to start a query once its budget is spent."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, budget: Budget) -> None:
        self._cursor = cursor
        self._budget = budget

    def execute(self, *args: Any, **kwargs: Any) -> _WatchedCursor:
        self._budget.check()
        self._cursor.execute(*args, **kwargs)
        return self

    def fetchmany(self, size: int = 1) -> list[Any]:
        self._budget.check()
        return self._cursor.fetchmany(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._cursors: list[duckdb.DuckDBPyConnection] = []
        self._spent = False

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def exceeded(self) -> BudgetExceeded:
        return BudgetExceeded(
            f"this answer needed more than its budget of {self.seconds:g} s (GPUPRICE_API_BUDGET_S): ask a "
            "narrower question (a shorter since/until window, provider, region, sku, a smaller limit) or retry later",
            self.seconds,
        )

    def check(self) -> None:
        if self._spent or time.monotonic() >= self.deadline:
            raise self.exceeded()

    def cursor(self, store: Any) -> Any:
        self.check()
        cursor = store.cursor()
        with self._lock:
            self._cursors.append(cursor)
        return _WatchedCursor(cursor, self)

    def expire(self) -> None:
        """Spent: interrupt the queries running, refuse new ones."""
        with self._lock:
            self._spent = True
            for cursor in self._cursors:
                cursor.interrupt()

    def run(self, work: Callable[[], T]) -> T:
        """`work()` in this thread, its queries interrupted when the budget runs out."""
        token = _active.set(self)
        _WATCHDOG.watch(self)
        try:
            result = work()
            self.check()  # work that overran between queries is not served late either
            return result
        except duckdb.InterruptException:
            raise self.exceeded() from None
        except duckdb.OutOfMemoryException as exc:  # it reset the connection: no answer at all
            raise BudgetExceeded(
                "this answer needed more than the database's memory (GPUPRICE_DB_MEMORY_MB, a share of "
                f"GPUPRICE_MEMORY_BUDGET_MB): ask a narrower question or retry later ({str(exc).splitlines()[0]})",
                self.seconds,
            ) from None
        finally:
            _WATCHDOG.forget(self)
            _active.reset(token)
            with self._lock:
                for cursor in self._cursors:
                    cursor.close()
                self._cursors.clear()


class _Watchdog:
    """One thread that expires every budget at its deadline. (A timer thread per answer cost the
    answer that thread's start, which waits for the new thread to be scheduled: 0.1 ms on a quiet
    machine, milliseconds on a busy one.)"""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._budgets: set[Budget] = set()
        self._thread: threading.Thread | None = None

    def watch(self, budget: Budget) -> None:
        with self._changed:
            self._budgets.add(budget)
            if self._thread is None:
                self._thread = threading.Thread(target=self._expire_due, name="gpuprice-budgets", daemon=True)
                self._thread.start()
            self._changed.notify()

    def forget(self, budget: Budget) -> None:
        with self._changed:
            self._budgets.discard(budget)

    def _expire_due(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                for budget in [b for b in self._budgets if b.deadline <= now]:
                    self._budgets.discard(budget)
                    budget.expire()
                following = min((b.deadline for b in self._budgets), default=None)
                self._changed.wait(None if following is None else following - now)


_WATCHDOG = _Watchdog()
_active: ContextVar[Budget | None] = ContextVar("gpuprice_budget", default=None)


def active_budget() -> Budget | None:
    return _active.get()


def check_budget() -> None:
    """For long Python work between queries: stop here if the answer's budget is spent."""
    budget = _active.get()
    if budget is not None:
        budget.check()


class HeavyGate:
    """At most `slots` heavy answers at once; each waits at most `budget_s` for its turn and works as long."""

    def __init__(self, slots: int, budget_s: float) -> None:
        self.slots = slots
        self.budget_s = budget_s
        self._limiter: anyio.CapacityLimiter | None = None  # made on first use, inside the event loop

    async def run(self, work: Callable[[], T]) -> T:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(self.slots)
        try:
            with anyio.fail_after(self.budget_s):
                await self._limiter.acquire()
        except TimeoutError:
            raise BudgetExceeded(
                f"the server was busy with {self.slots} heavy answers for the whole budget of {self.budget_s:g} s "
                "(GPUPRICE_API_BUDGET_S, GPUPRICE_API_HEAVY_CONCURRENCY): retry later",
                self.budget_s,
            ) from None
        try:
            return await run_in_threadpool(Budget(self.budget_s).run, work)
        finally:
            self._limiter.release()
