"""Loading published snapshots: the replica side.

A replica keeps its own DuckDB file (the same schema, migrated as usual) and the downloaded files
(`files/<sha256>.parquet`) in its folder. `check()` reads the source's manifest conditionally; for a
newer snapshot it downloads the files it has not got, verifies each one's size and SHA-256, and then,
in one transaction, deletes the partitions that changed or went and loads the new ones, and records
the manifest it now holds (`replica_snapshot`). Readers see the old snapshot or the new one. A
failure anywhere (the source down, a file corrupt, the disk full) leaves the loaded snapshot as it
was; the next check tries again."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import duckdb

from pricedb import clock
from pricedb.files import temp_file_prefix
from pricedb.replication.manifest import MANIFEST_NAME, Manifest, Partition, parse_manifest
from pricedb.replication.partitions import FAMILIES, delete_partition, load_file
from pricedb.replication.storage import Storage, StorageError, sha256_of
from pricedb.store import PriceStore, utc_naive

_STATE_TABLE = """
    CREATE TABLE IF NOT EXISTS replica_snapshot (
        version BIGINT NOT NULL,
        origin VARCHAR NOT NULL,
        loaded_at TIMESTAMP NOT NULL,   -- UTC
        manifest VARCHAR NOT NULL       -- the manifest loaded, as published
    )
"""


class Check(StrEnum):
    LOADED = "loaded"  # a newer snapshot is now served
    UNCHANGED = "unchanged"  # the source's manifest is the one served (or not modified)
    NONE_PUBLISHED = "none_published"  # the source holds no manifest yet


@dataclass(frozen=True)
class Loaded:
    manifest: Manifest
    downloaded_files: int
    downloaded_bytes: int


class SnapshotLoader:
    def __init__(self, store: PriceStore, source: Storage, folder: Path) -> None:
        self.store, self.source = store, source
        self.files = folder / "files"
        self.files.mkdir(parents=True, exist_ok=True)
        self._validator: str | None = None
        self.downloaded_bytes = 0  # over this process's life
        self.last: Loaded | None = None
        store.write([(_STATE_TABLE, [])])
        row = store.cursor().execute("SELECT manifest, loaded_at FROM replica_snapshot").fetchone()
        self.manifest: Manifest | None = Manifest.model_validate_json(row[0]) if row else None
        self.loaded_at: datetime | None = row[1].replace(tzinfo=UTC) if row else None  # aware UTC

    def check(self) -> Check:
        fetched = self.source.read(MANIFEST_NAME, self._validator)
        if fetched.missing:
            return Check.NONE_PUBLISHED
        if fetched.body is None:
            return Check.UNCHANGED
        manifest = parse_manifest(fetched.body, self.source.where, self.store.schema_version())
        held = self.manifest
        if held is not None and held.origin == manifest.origin and manifest.version <= held.version:
            self._validator = fetched.validator
            return Check.UNCHANGED
        count, size = self._download(manifest)
        loaded_at = clock.now()
        self.store.write_with(lambda cur: self._load(cur, manifest, loaded_at))
        self.manifest, self._validator, self.loaded_at = manifest, fetched.validator, loaded_at
        self.downloaded_bytes += size
        self.last = Loaded(manifest, count, size)
        self._forget_unused(manifest)
        return Check.LOADED

    def _local(self, sha256: str) -> Path:
        return self.files / f"{sha256}.parquet"

    def _download(self, manifest: Manifest) -> tuple[int, int]:
        count = size = 0
        for entry in manifest.files:
            path = self._local(entry.sha256)
            if path.exists():
                continue
            fd, name = tempfile.mkstemp(dir=self.files, prefix=temp_file_prefix(path), suffix=".tmp")
            os.close(fd)
            temp = Path(name)
            try:
                self.source.download(entry.path, temp)
                got, digest = temp.stat().st_size, sha256_of(temp)
                if got != entry.bytes or digest != entry.sha256:
                    raise StorageError(
                        self.source.where,
                        f"{entry.path} does not match the manifest (size {got} for {entry.bytes}, sha256 "
                        f"{digest[:16]}… for {entry.sha256[:16]}…); snapshot {manifest.version} not loaded",
                    )
                os.replace(temp, path)
            finally:
                temp.unlink(missing_ok=True)
            count, size = count + 1, size + entry.bytes
        return count, size

    def _load(self, cur: duckdb.DuckDBPyConnection, manifest: Manifest, loaded_at: datetime) -> None:
        held = self.manifest
        same_history = held is not None and held.origin == manifest.origin
        kept: list[Partition] = []
        if not same_history:  # a first load, or another publisher's history: start from nothing
            for family in FAMILIES.values():
                for table in family.tables:
                    cur.execute(f"DELETE FROM {table.name}")
        else:
            assert held is not None
            for old in held.partitions:
                if any(old.same_content(new) for new in manifest.partitions):
                    kept.append(old)
                else:
                    delete_partition(cur, old)
        for new in manifest.partitions:
            if any(new.same_content(old) for old in kept):
                continue
            delete_partition(cur, new)  # idempotent whatever the file held before
            for entry in new.files:
                load_file(cur, entry.table, self._local(entry.sha256))
        cur.execute("DELETE FROM replica_snapshot")
        cur.execute(
            "INSERT INTO replica_snapshot VALUES (?, ?, ?, ?)",
            [manifest.version, manifest.origin, utc_naive(loaded_at), manifest.model_dump_json()],
        )

    def _forget_unused(self, manifest: Manifest) -> None:
        wanted = {f"{f.sha256}.parquet" for f in manifest.files}
        for path in self.files.glob("*.parquet"):
            if path.name not in wanted:
                path.unlink(missing_ok=True)
