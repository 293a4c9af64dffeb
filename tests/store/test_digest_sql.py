"""The digest compares its two days in SQL (pricedb.digest): on random runs it equals the digest built
the plain way, from the two whole snapshots in Python (the way it was built before)."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from pricedb.digest import _pricing_rank, build_digest, change_row, day_window, offer_row
from pricedb.queries import Offer
from pricedb.snapshot import snapshot_at
from pricedb.store import PriceStore
from tests.store.test_snapshot_sql import START, recorded


def plain_changes(cur: Any, day: date, zone: ZoneInfo, now: datetime) -> dict[str, Any]:
    start, end = day_window(day, zone)
    old = {o.key: o for o in snapshot_at(cur, start, now).offers}
    after = snapshot_at(cur, end, now).offers
    new = {o.key: o for o in after}
    changes = [
        change_row(old[key], new[key])  # type: ignore[arg-type]
        for key in sorted(old.keys() & new.keys())
        if (old[key].price, old[key].currency, old[key].unit) != (new[key].price, new[key].currency, new[key].unit)
    ]
    changes.sort(key=lambda row: (-abs(row["pct"] or 0.0), row["provider"], row["region"], row["sku"]))
    best: dict[tuple[str, float, str, str], Offer] = {}
    for offer in after:
        if offer.stale or offer.availability == "sold_out" or offer.cny_per_gb_hour is None:
            continue
        group = (offer.gpu_model, offer.gpu_memory_gb, offer.gpu_partition or "", offer.pricing)
        held = best.get(group)
        if held is None or (offer.cny_per_gb_hour, offer.key) < (held.cny_per_gb_hour or 0.0, held.key):
            best[group] = offer
    order = sorted(best, key=lambda g: (g[0], g[1], g[2], _pricing_rank(g[3])))
    return {
        "changes": changes,
        "new": [offer_row(new[key]) for key in sorted(new.keys() - old.keys())],  # type: ignore[arg-type]
        "withdrawn": [offer_row(old[key]) for key in sorted(old.keys() - new.keys())],  # type: ignore[arg-type]
        "cheapest": [offer_row(best[group]) for group in order],  # type: ignore[arg-type]
    }


@pytest.mark.parametrize("seed", range(6))
def test_the_digest_in_sql_equals_the_plain_one(store: PriceStore, seed: int) -> None:
    rng = random.Random(seed)
    runs = recorded(store, rng)
    cur = store.cursor()
    compared = 0
    for zone in (ZoneInfo("UTC"), ZoneInfo("Asia/Shanghai")):
        day = START.date() - timedelta(days=1)
        while day <= runs[-1].finished_at.date() + timedelta(days=1):
            now = datetime.combine(day, datetime.min.time()) + timedelta(hours=rng.choice((12, 30, 200)))
            digest = build_digest(cur, day, zone, now)
            expected = plain_changes(cur, day, zone, now)
            assert {part: digest[part] for part in expected} == expected, (seed, day, zone.key)
            compared += bool(digest["changes"] or digest["new"] or digest["withdrawn"])
            day += timedelta(days=1)
    assert compared > 0
