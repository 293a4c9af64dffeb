"""`gpuprice serve --replica-of SOURCE`: the app as the collecting process serves it, reading a store
that a published snapshot fills (pricedb.replication), with no collectors.

The source (a folder, an http(s):// copy of the published files, s3://bucket/prefix) is polled every
`GPUPRICE_REPLICA_POLL_S` in a worker thread; a newer snapshot is downloaded, verified and loaded in
one transaction, and the answer caches move on with the store's version. When the source cannot be
reached the replica keeps serving what it has; `/healthz` says which snapshot that is and how old,
and turns `degraded` past `GPUPRICE_REPLICA_STALE_AFTER_S`."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import datetime
from typing import Any

import duckdb

from pricedb import clock
from pricedb.clock import iso_utc
from pricedb.redact import get_logger, redact
from pricedb.replication.manifest import ManifestRefused
from pricedb.replication.replica import Check, SnapshotLoader
from pricedb.replication.storage import Storage, StorageError, open_storage
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreUnavailable, utc_naive

log = get_logger("gpuprice.replica")


def _iso(moment: datetime | None) -> str | None:
    return iso_utc(utc_naive(moment)) if moment is not None else None


class Replica:
    def __init__(self, settings: Settings, store: PriceStore, source: Storage | None = None) -> None:
        assert settings.replica_of, "a replica needs GPUPRICE_REPLICA_OF (--replica-of)"
        self.settings = settings
        self.source = source or open_storage(settings.replica_of, settings)
        self.loader = SnapshotLoader(store, self.source, settings.replica_path)
        self.checked_at: datetime | None = None  # aware UTC, the last time the source answered
        self.error: str | None = None  # why the last check failed
        self.checks: Counter[str] = Counter()  # by outcome: loaded, unchanged, none_published, failed

    @property
    def where(self) -> str:
        return self.source.where

    def check(self) -> None:
        """One look at the source (in a worker thread); whatever fails is kept for /healthz, not raised."""
        try:
            outcome = self.loader.check()
        except (StorageError, ManifestRefused, StoreUnavailable, OSError, duckdb.Error) as exc:
            error = redact(str(exc).splitlines()[0])
            if error != self.error:
                log.error("snapshot source %s: %s (still serving snapshot %s)", self.where, error, self.version)
            self.error = error
            self.checks["failed"] += 1
            return
        self.checked_at, self.error = clock.now(), None
        self.checks[outcome.value] += 1
        if outcome is Check.LOADED and self.loader.last is not None:
            last = self.loader.last
            log.info(
                "loaded snapshot %d from %s: %d files, %d bytes downloaded",
                last.manifest.version,
                self.where,
                last.downloaded_files,
                last.downloaded_bytes,
            )

    async def poll(self) -> None:
        """Check the source now and every GPUPRICE_REPLICA_POLL_S, until cancelled."""
        while True:
            try:
                await asyncio.to_thread(self.check)
            except Exception as exc:  # a bug must not stop the polling: the next look may do better
                log.exception("snapshot source %s: unexpected %s", self.where, type(exc).__name__)
                self.error = redact(f"unexpected {type(exc).__name__}: {exc}".splitlines()[0])
                self.checks["failed"] += 1
            await asyncio.sleep(self.settings.replica_poll_s)

    @property
    def version(self) -> int | None:
        manifest = self.loader.manifest
        return manifest.version if manifest else None

    def age_s(self) -> float | None:
        manifest = self.loader.manifest
        return (clock.now() - manifest.published_at).total_seconds() if manifest else None

    def health(self) -> tuple[dict[str, Any], list[str]]:
        """(the /healthz block, its problems): which snapshot, how old, whether the source answers."""
        manifest, age = self.loader.manifest, self.age_s()
        limit = self.settings.replica_stale_after_s
        block = {
            "source": self.where,
            "version": manifest.version if manifest else None,
            "published_at": _iso(manifest.published_at) if manifest else None,
            "age_s": round(age, 1) if age is not None else None,
            "loaded_at": _iso(self.loader.loaded_at),
            # how long the snapshot took to get here: publish → poll → download → load
            "loaded_after_s": round((self.loader.loaded_at - manifest.published_at).total_seconds(), 2)
            if manifest and self.loader.loaded_at
            else None,
            "stale_after_s": limit,
            "checked_at": _iso(self.checked_at),
            "error": self.error,
        }
        problems = []
        source = f"; the source: {self.error}" if self.error else ""
        if manifest is None:
            problems.append(f"no snapshot loaded yet from {self.where}{source or ' (none published yet)'}")
        elif age is not None and age > limit:
            setting = f"GPUPRICE_REPLICA_STALE_AFTER_S ({limit:g} s)"
            problems.append(f"snapshot {manifest.version} is {age:.0f} s old, past {setting}{source}")
        return block, problems
