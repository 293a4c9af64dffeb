"""The files written after every run: the current price sheet as CSV and Parquet, replaced
atomically, so other tools can read current prices while `serve` holds the database."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.sheet import atomic_write, sheet_row, write_csv, write_parquet
from pricedb.store import PriceStore, utc_naive

CSV_NAME = "offers.csv"
PARQUET_NAME = "offers.parquet"

_export_lock = threading.Lock()


def write_current_exports(store: PriceStore, settings: Settings, now: datetime | None = None) -> list[Path]:
    moment = utc_naive(now or datetime.now(UTC))
    rows = [sheet_row(o) for o in current_offers(store.cursor(), moment).offers]
    folder = settings.export_path
    csv_path, parquet_path = folder / CSV_NAME, folder / PARQUET_NAME

    def csv_writer(temp: Path) -> None:
        with temp.open("w", encoding="utf-8", newline="") as handle:
            write_csv(rows, handle)

    with _export_lock:
        atomic_write(csv_path, csv_writer)
        atomic_write(parquet_path, lambda temp: write_parquet(rows, temp))
    return [csv_path, parquet_path]
