"""The manifest: what one published snapshot holds.

`manifest.json` names the current snapshot; `snapshots/<version>.json` keeps each one until it is
pruned. A snapshot is a list of partitions. A partition is one slice of a family of tables (the runs
with their observations and held offers for a range of run ids, the digests of a month, the current
offers whole), with a signature of its content and one Parquet file per table that has rows in it.
Files are named by their content (SHA-256), so a name never changes meaning: a publish uploads the
files of the partitions whose signature changed and refers to the others as they were."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

FORMAT = "gpuprice-snapshot/1"
MANIFEST_NAME = "manifest.json"
SNAPSHOTS_FOLDER = "snapshots"
DATA_FOLDER = "data"

# A run id, an ISO date, or open. Names and bounds come from outside (a bucket, a web server): each is
# checked for what it may be, so no manifest can name a file outside the snapshot or another table.
Bound = int | Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")] | None
Family = Literal["runs", "offers", "fx_rates", "digests", "zones"]


class FileEntry(BaseModel):
    table: Literal[
        "runs", "observations", "held_offers", "offers", "fx_rates", "digests", "deliveries", "instance_zones"
    ]
    # relative to the snapshot's root (the folder, the bucket's prefix, the URL)
    path: Annotated[str, StringConstraints(pattern=r"^data/[a-z_]+/[A-Za-z0-9_-][A-Za-z0-9_.-]*\.parquet$")]
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0)
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Partition(BaseModel):
    family: Family
    label: str
    lo: Bound = None  # rows with lo <= column < hi (None: unbounded); whole tables have neither
    hi: Bound = None
    signature: str
    files: list[FileEntry] = Field(default_factory=list)

    @property
    def identity(self) -> tuple[str, Bound, Bound]:
        return (self.family, self.lo, self.hi)

    def same_content(self, other: Partition) -> bool:
        return self.identity == other.identity and self.signature == other.signature


class Manifest(BaseModel):
    format: str = FORMAT
    origin: str  # stays the same for every snapshot published to one place; a new one means a new history
    version: int
    published_at: datetime  # aware UTC
    schema_version: int
    gpuprice_version: str
    last_run_id: int  # the newest run the snapshot holds
    partitions: list[Partition]

    @property
    def files(self) -> list[FileEntry]:
        return [f for p in self.partitions for f in p.files]

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def to_bytes(self) -> bytes:
        return self.model_dump_json(indent=1).encode()


def snapshot_name(version: int) -> str:
    return f"{SNAPSHOTS_FOLDER}/{version:012d}.json"


class ManifestRefused(ValueError):
    """A manifest this gpuprice cannot load (another format, a newer schema, not JSON): the reason."""


def parse_manifest(body: bytes, where: str, schema_version: int) -> Manifest:
    try:
        manifest = Manifest.model_validate_json(body)
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise ManifestRefused(f"{where}/{MANIFEST_NAME} is not a gpuprice snapshot manifest ({first})") from None
    if manifest.format != FORMAT:
        raise ManifestRefused(f"{where}/{MANIFEST_NAME} is in format {manifest.format!r}; this gpuprice reads {FORMAT}")
    if manifest.schema_version > schema_version:
        raise ManifestRefused(
            f"snapshot {manifest.version} has database schema {manifest.schema_version}, newer than this "
            f"gpuprice's {schema_version} (gpuprice {manifest.gpuprice_version} published it): upgrade this gpuprice"
        )
    return manifest
