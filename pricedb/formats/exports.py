"""The files written after every run: the current price sheet as CSV and Parquet, and the SkyPilot
and gpuhunt catalogs (`skypilot/<cloud>/vms.csv` for every cloud the skypilot module can write —
aws, azure, lambda, verda —, `gpuhunt/<name>.csv` for every provider with offers, named as gpuhunt
names it: `lambdalabs.csv`, `vastai.csv`, so `GPUHUNT_CATALOG_DIR` can point at the folder), each
replaced atomically, so other tools can read current prices while `serve` holds the database. They
come from the same writers as `/export` (the sheet, skypilot and gpuhunt modules beside this one), so
the formats never drift; like `/export/skypilot/…` and `/export/gpuhunt/…` by default, the catalogs
hold fresh, available offers only (those tools know nothing of staleness or stock). A catalog that
cannot be written from what the store holds (SkyPilot's AWS catalog before AWS's zones were collected
with credentials) is not written, and `NOT_WRITTEN.txt` in its folder says why."""

from __future__ import annotations

import errno
import threading
from datetime import datetime
from pathlib import Path

import duckdb

from pricedb import clock
from pricedb.files import atomic_write, atomic_write_text
from pricedb.formats.foreign import ForeignSheet
from pricedb.formats.gpuhunt import gpuhunt_csv, gpuhunt_name
from pricedb.formats.sheet import sheet_row, write_csv, write_parquet
from pricedb.formats.skypilot import SKYPILOT_COLUMNS, ZONED_CLOUDS, CatalogUnavailable, skypilot_vms_csv
from pricedb.queries import current_offers, instance_zones
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive

CSV_NAME = "offers.csv"
PARQUET_NAME = "offers.parquet"
NOT_WRITTEN = "NOT_WRITTEN.txt"  # beside a catalog that cannot be written (skypilot/aws/ without zones): why

_export_lock = threading.Lock()


class ExportFailed(RuntimeError):
    """The files could not be written; `str()` is one line naming the folder and what to do. The
    run they follow is recorded all the same (the runner stores this on it)."""

    def __init__(self, folder: Path, reason: str) -> None:
        self.folder, self.reason = folder, reason
        super().__init__(
            f"price sheets not written to {folder}: {reason}; make the folder writable (and free space), "
            "or set GPUPRICE_EXPORT_DIR to another folder"
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, OSError):
        what = exc.strerror or str(exc)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            what = "no space left on the disk"
        elif exc.errno == errno.EFBIG:
            what = "the size limit for files (ulimit -f) was reached"
        return f"{what} ({exc.filename})" if exc.filename else what
    return str(exc).splitlines()[0]  # DuckDB's COPY: `IO Error: Cannot open file "…": Permission denied`


def write_current_exports(store: PriceStore, settings: Settings, now: datetime | None = None) -> list[Path]:
    moment = utc_naive(now or clock.now())
    offers = current_offers(store.cursor(), moment).offers
    rows = [sheet_row(o) for o in offers]
    folder = settings.export_path
    csv_path, parquet_path = folder / CSV_NAME, folder / PARQUET_NAME

    def csv_writer(temp: Path) -> None:
        with temp.open("w", encoding="utf-8", newline="") as handle:
            write_csv(rows, handle)

    fresh = [o for o in offers if not o.stale and o.availability != "sold_out"]
    fx = store.fx_table()
    catalogs: dict[Path, ForeignSheet] = {}
    unavailable: dict[Path, str] = {}  # a catalog that cannot be written: why, in a file beside where it would be
    for cloud in SKYPILOT_COLUMNS:
        path = folder / "skypilot" / cloud / "vms.csv"
        zones = instance_zones(store.cursor(), cloud) if cloud in ZONED_CLOUDS else None
        try:
            catalogs[path] = skypilot_vms_csv(fresh, cloud, fx, zones)
        except CatalogUnavailable as exc:
            unavailable[path] = str(exc)
    for provider in sorted({o.provider for o in offers}):
        catalogs[folder / "gpuhunt" / f"{gpuhunt_name(provider)}.csv"] = gpuhunt_csv(fresh, provider, fx)

    with _export_lock:
        try:
            atomic_write(csv_path, csv_writer)
            atomic_write(parquet_path, lambda temp: write_parquet(rows, temp))
            for path, sheet in catalogs.items():
                atomic_write_text(path, sheet.text)
                path.with_name(NOT_WRITTEN).unlink(missing_ok=True)
            for path, why in unavailable.items():
                path.unlink(missing_ok=True)  # an older file would be taken for current prices
                atomic_write_text(path.with_name(NOT_WRITTEN), f"{path.name} not written: {why}\n")
        except (OSError, duckdb.Error) as exc:
            raise ExportFailed(folder, _reason(exc)) from exc
    return [csv_path, parquet_path, *catalogs]
