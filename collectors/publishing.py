"""Publishing after runs land (GPUPRICE_PUBLISH_TO): one publish at a time, and runs that land while
one is under way share the next one, so a round of fourteen providers finishing together costs a
couple of publishes, not fourteen. The work runs in a worker thread (never on the event loop); its
outcome is recorded by pricedb.replication.publish and never raised, so a failing target never loses
a run."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable

from pricedb.queries import PublishAttempt
from pricedb.replication.publish import publish_and_record
from pricedb.settings import Settings
from pricedb.store import PriceStore

_POLL_S = 0.05


class Publisher:
    def __init__(self, store: PriceStore, settings: Settings) -> None:
        self.store, self.settings = store, settings
        self._lock = threading.Lock()  # not asyncio's: `collect` and `serve` may each bring their own loop
        self._asked = 0  # the newest run a publish was asked for (each run asks once it is recorded)
        self._covered = 0  # every run up to this one was recorded before the last attempt began
        self.last: PublishAttempt | None = None

    async def after_run(self, run_id: int) -> PublishAttempt:
        """The outcome of an attempt that began after run `run_id` was recorded: a running one's
        successor, or the last one if it began late enough (a failed one too: the next run retries)."""
        self._asked = max(self._asked, run_id)
        return await self._attempt(lambda: self.last is None or self._covered < run_id)

    async def now(self) -> PublishAttempt:
        """A publish now (`serve` starting: what is stored may be newer than what was published)."""
        return await self._attempt(lambda: True)

    async def _attempt(self, needed: Callable[[], bool]) -> PublishAttempt:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(_POLL_S)
        try:
            if needed():
                covering = self._asked
                self.last = await asyncio.to_thread(publish_and_record, self.store, self.settings)
                self._covered = covering
            assert self.last is not None
            return self.last
        finally:
            self._lock.release()


_publishers: weakref.WeakKeyDictionary[PriceStore, Publisher] = weakref.WeakKeyDictionary()


def publisher_for(store: PriceStore, settings: Settings) -> Publisher | None:
    """The store's publisher, None when GPUPRICE_PUBLISH_TO is not set."""
    if not settings.publish_targets:
        return None
    publisher = _publishers.get(store)
    if publisher is None:
        publisher = _publishers[store] = Publisher(store, settings)
    return publisher


async def publish_after(store: PriceStore, settings: Settings, run_id: int) -> str | None:
    """Publish a snapshot holding `run_id` if publishing is set up; the error, if it failed."""
    publisher = publisher_for(store, settings)
    if publisher is None:
        return None
    return (await publisher.after_run(run_id)).error
