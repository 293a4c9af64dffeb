"""What the read-back tests share: the offline round's database, copied, with its files exported."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pricedb.formats.exports import write_current_exports
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import OfflineRound, make_settings


@contextmanager
def exported_offline_round(offline_round: OfflineRound, folder: Path) -> Iterator[tuple[PriceStore, Settings]]:
    """A private copy of the offline round's store, its after-run files written to `settings.export_path`."""
    settings = make_settings(folder, offline=True)
    shutil.copyfile(offline_round.db, settings.db)
    store = PriceStore(settings)
    try:
        write_current_exports(store, settings)
        yield store, settings
    finally:
        store.close()
