"""A market with a past, for the pages: the offline round, plus three earlier and later runs of the
`manual` sheet (prices 10% and 5% higher on the two days before, one offer gone the day before,
then today's prices again, one a ten-millionth higher), and the digest of the day before stored as the daily job would.

So an offer has a history of several points to chart, a stored digest has changes and a
withdrawal, and every provider is fresh at the pages' clock (an hour after the round landed)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pricedb.digest import build_digest, store_digest
from pricedb.models import Pricing, Quote
from pricedb.queries import Offer, current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import OfflineRound, make_settings
from tests.helpers import make_run, serving


@dataclass(frozen=True)
class WebRound:
    db: Path
    now: datetime  # the pages' clock, naive UTC
    digest_day: date  # the day whose digest is stored
    charted: dict[str, str]  # the key of an offer with four observations (provider, region, sku, pricing)


def quote_of(offer: Offer, price: float, at: datetime) -> Quote:
    values: dict[str, Any] = {name: getattr(offer, name) for name in Quote.model_fields if hasattr(offer, name)}
    return Quote(**{**values, "price": price, "observed_at": at})


@pytest.fixture(scope="session")
def web_round(offline_round: OfflineRound, tmp_path_factory: pytest.TempPathFactory) -> WebRound:
    folder = tmp_path_factory.mktemp("web-round")
    settings = make_settings(folder, offline=True)
    shutil.copyfile(offline_round.db, settings.db)
    store = PriceStore(settings)
    try:
        cur = store.cursor()
        landed = cur.execute("SELECT max(finished_at) FROM runs").fetchone()[0]
        manual = [o for o in current_offers(cur, landed).offers if o.provider == "manual"]
        covered = cur.execute("SELECT pricings FROM runs WHERE provider = 'manual'").fetchone()[0]
        pricings = frozenset(Pricing(p) for p in covered)
        for days, factor, kept in ((-2, 1.10, manual), (-1, 1.05, manual[1:]), (0, 1.0, manual)):
            at = landed.replace(tzinfo=UTC) + timedelta(days=days, seconds=1 if days == 0 else 0)
            quotes = [quote_of(o, round(o.price * factor, 4), at) for o in kept]
            if days == 0:  # one price beyond the six decimals a page shows: the market then sorts prices by rank
                quotes[0] = quote_of(kept[0], quotes[0].price + 1e-7, at)
            store.record_run(make_run("manual", quotes, finished_at=at, pricings=pricings))
        now = landed + timedelta(hours=1)
        zone = settings.digest_zone
        day = (landed - timedelta(days=1)).replace(tzinfo=UTC).astimezone(zone).date()
        store_digest(store, build_digest(cur, day, zone, now))
        charted = next(o for o in manual[1:] if o.currency != "CNY")
    finally:
        store.close()
    key = {"provider": charted.provider, "region": charted.region, "sku": charted.sku, "pricing": charted.pricing}
    return WebRound(settings.db, now, day, key)


def open_copy(web: WebRound, folder: Path) -> tuple[Settings, PriceStore]:
    """A private copy of the web round's database, opened offline."""
    settings = make_settings(folder, offline=True)
    shutil.copyfile(web.db, settings.db)
    return settings, PriceStore(settings)


@pytest.fixture(scope="module")
def client(web_round: WebRound, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """A test client over a copy of the web round, one per test module."""
    settings, store = open_copy(web_round, tmp_path_factory.mktemp("pages"))
    with serving(settings, store, web_round.now) as test_client:
        yield test_client
    store.close()
