"""Publishing a snapshot: the collecting side.

1. Read each target's current manifest (its version, origin and partitions).
2. In one read transaction (one consistent moment of the store), plan the partitions and write the
   Parquet files of those whose signature differs from what some target already has, to a scratch
   folder (`gpuprice-<pid>-publish-…` in the system temp folder, removed after).
3. Upload to each target the files it has not got (content-named, so never over a file in use).
4. Write `snapshots/<version>.json`, then `manifest.json`, on every target: the manifest is
   written last and in one step (a rename, a PUT), so a reader sees the old snapshot or the new one.
5. Prune what is older than `GPUPRICE_PUBLISH_RETENTION_MINUTES`: snapshot manifests, and data files
   no kept snapshot refers to (a killed publish's uploads too). The current one is never pruned.

A failure at any step leaves every target's manifest as it was; `publish_and_record` records the
attempt (`publishes`), never raises, and the runs it follows are already stored."""

from __future__ import annotations

import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import duckdb

from pricedb import clock
from pricedb.files import sweep_temp_files, workdir_prefix
from pricedb.queries import PublishAttempt
from pricedb.redact import get_logger, redact
from pricedb.replication.manifest import (
    DATA_FOLDER,
    MANIFEST_NAME,
    SNAPSHOTS_FOLDER,
    FileEntry,
    Manifest,
    ManifestRefused,
    Partition,
    parse_manifest,
    snapshot_name,
)
from pricedb.replication.partitions import FAMILIES, Slice, plan, write_table
from pricedb.replication.storage import FolderStorage, StorageError, Target, open_storage, sha256_of
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreUnavailable
from pricedb.version import VERSION

log = get_logger("gpuprice.publish")


@dataclass(frozen=True)
class Published:
    version: int
    last_run_id: int
    files_uploaded: int
    bytes_uploaded: int
    seconds: float
    fresh: bool = True  # False: every target held all of it already, no version was made


def targets_of(settings: Settings) -> list[Target]:
    targets = []
    for place in settings.publish_targets:
        target = open_storage(place, settings, writable=True)
        assert hasattr(target, "upload")
        targets.append(target)  # type: ignore[arg-type]
    return targets


def _current(target: Target, schema_version: int) -> Manifest | None:
    fetched = target.read(MANIFEST_NAME)
    if fetched.body is None:
        return None
    return parse_manifest(fetched.body, target.where, schema_version)


def _published(previous: Manifest | None, planned: Slice) -> Partition | None:
    for partition in previous.partitions if previous else []:
        if partition.identity == planned.identity and partition.signature == planned.signature:
            return partition
    return None


def _write(cur: duckdb.DuckDBPyConnection, planned: Slice, scratch: Path, local: dict[str, Path]) -> Partition:
    files = []
    for table in FAMILIES[planned.family].tables:
        temp = scratch / f"{len(local)}-{table.name}-{planned.label}.parquet"
        rows = write_table(cur, planned.family, table, planned.lo, planned.hi, temp)
        if rows == 0:
            temp.unlink(missing_ok=True)
            continue
        digest = sha256_of(temp)
        path = f"{DATA_FOLDER}/{table.name}/{planned.label}.{digest[:24]}.parquet"
        local[path] = temp
        files.append(FileEntry(table=table.name, path=path, rows=rows, bytes=temp.stat().st_size, sha256=digest))
    return Partition(
        family=planned.family,
        label=planned.label,
        lo=planned.lo,
        hi=planned.hi,
        signature=planned.signature,
        files=files,
    )


def _unchanged(previous: list[Manifest | None], slices: list[Slice], schema_version: int) -> bool:
    """Every target already holds exactly these partitions."""
    planned = [(s.identity, s.signature) for s in slices]
    return all(
        before is not None
        and before.schema_version == schema_version
        and [(p.identity, p.signature) for p in before.partitions] == planned
        for before in previous
    )


def publish(store: PriceStore, targets: list[Target], retention: timedelta) -> Published:
    """One snapshot of `store` to every target (raises StorageError, ManifestRefused, duckdb.Error)."""
    started = time.monotonic()
    schema_version = store.schema_version()
    previous = [_current(target, schema_version) for target in targets]
    version = max((p.version for p in previous if p is not None), default=0) + 1
    uploaded = uploaded_bytes = 0
    with tempfile.TemporaryDirectory(prefix=workdir_prefix("publish")) as folder:
        scratch, local = Path(folder), {}
        cur = store.cursor()
        try:
            cur.begin()  # one moment of the store for every file
            slices, last_run_id = plan(cur, clock.now_naive())
            written = {
                s.identity: _write(cur, s, scratch, local)
                for s in slices
                if any(_published(p, s) is None for p in previous)
            }
            cur.rollback()  # nothing was written to the store
        finally:
            cur.close()
        if _unchanged(previous, slices, schema_version):  # a version is a change: none is made
            return Published(version - 1, last_run_id, 0, 0, time.monotonic() - started, fresh=False)
        manifests = []
        for target, before in zip(targets, previous, strict=True):
            partitions = [_published(before, s) or written[s.identity] for s in slices]
            have = {f.path for f in before.files} if before else set()
            for entry in (f for p in partitions for f in p.files if f.path not in have):
                target.upload(entry.path, local[entry.path])
                uploaded, uploaded_bytes = uploaded + 1, uploaded_bytes + entry.bytes
            manifests.append(
                Manifest(
                    origin=before.origin if before else uuid.uuid4().hex,
                    version=version,
                    published_at=clock.now(),
                    schema_version=schema_version,
                    gpuprice_version=VERSION,
                    last_run_id=last_run_id,
                    partitions=partitions,
                )
            )
    for target, manifest in zip(targets, manifests, strict=True):
        target.write(snapshot_name(version), manifest.to_bytes())
    for target, manifest in zip(targets, manifests, strict=True):
        target.write(MANIFEST_NAME, manifest.to_bytes())  # last: the snapshot is now the current one
    for target, manifest in zip(targets, manifests, strict=True):
        prune(target, manifest, retention)
    return Published(version, last_run_id, uploaded, uploaded_bytes, time.monotonic() - started)


# Snapshot manifests never change under their name: the files each refers to, read once per process.
_referenced: dict[tuple[str, str], tuple[float, frozenset[str]]] = {}


def prune(target: Target, current: Manifest, retention: timedelta) -> list[str]:
    """Remove snapshots published more than `retention` ago (never `current`) and the data files no
    kept snapshot refers to; returns what was removed."""
    oldest = clock.now().timestamp() - retention.total_seconds()
    keep = {f.path for f in current.files}
    gone = []
    for name in target.list(SNAPSHOTS_FOLDER):
        if name == snapshot_name(current.version):
            continue
        known = _referenced.get((target.where, name))
        if known is None:
            body = target.read(name).body
            try:
                manifest = Manifest.model_validate_json(body or b"")
                known = (manifest.published_at.timestamp(), frozenset(f.path for f in manifest.files))
            except ValueError:
                known = (0.0, frozenset())  # not a manifest of ours: not worth keeping
            _referenced[(target.where, name)] = known
        if known[0] >= oldest:
            keep |= known[1]
        else:
            gone.append(name)
    target.delete(gone)  # snapshot manifests first: none may name a file that is gone
    orphans = [name for name in target.list(DATA_FOLDER) if name not in keep]
    target.delete(orphans)
    for name in gone:
        _referenced.pop((target.where, name), None)
    if isinstance(target, FolderStorage):
        sweep_temp_files(target.root)  # uploads a killed publisher left half-written
    return gone + orphans


def publish_and_record(store: PriceStore, settings: Settings) -> PublishAttempt:
    """Publish to GPUPRICE_PUBLISH_TO and record the attempt; a failure is returned (and logged as one
    line), never raised: the runs are stored whatever happens here."""
    where = ", ".join(redact(place) for place in settings.publish_targets)
    version, last_run_id, error = None, 0, None
    try:
        done = publish(store, targets_of(settings), timedelta(minutes=settings.publish_retention_minutes))
        version, last_run_id = done.version, done.last_run_id
        if done.fresh:
            log.info(
                "published snapshot %d to %s: %d new files, %d bytes, %.2f s",
                done.version,
                where,
                done.files_uploaded,
                done.bytes_uploaded,
                done.seconds,
            )
    except (StorageError, ManifestRefused, ValueError, OSError, duckdb.Error) as exc:
        error = f"snapshot not published to {where}: {exc}"
    except Exception as exc:  # a bug here must not take the collection with it
        error = f"snapshot not published to {where}: unexpected {type(exc).__name__}: {exc}"
    if error is not None:
        error = redact(error.splitlines()[0] if error else error)
        log.error("%s", error)
    attempt = PublishAttempt(clock.now_naive(), version, last_run_id, where, error)
    try:
        store.record_publish(attempt)
    except StoreUnavailable as exc:
        log.error("publish attempt not recorded: %s", exc)
    return attempt


__all__ = ["DATA_FOLDER", "MANIFEST_NAME", "SNAPSHOTS_FOLDER", "Published", "prune", "publish", "publish_and_record"]
