"""Digests over several days, end to end: several offline collection runs on consecutive days (the clock
is moved), with the recorded Azure prices edited between runs and AWS failing one day. The digest
lists exactly the changes, new and withdrawn offers, and never reports the failed provider's offers
as withdrawn; history and snapshots answer for every day."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from collectors.runner import collect
from pricedb import clock
from pricedb.digest import build_digest
from pricedb.settings import Settings
from pricedb.snapshot import snapshot_of_day
from pricedb.store import PriceStore
from tests.collectors.aws.test_price_list import EXPECTED as AWS_LIST_OFFERS
from tests.collectors.azure.test_parse import A100_EXPECTED as AZURE_A100_OFFERS
from tests.collectors.azure.test_parse import EXPECTED as AZURE_OFFERS
from tests.conftest import FIXTURES
from tests.helpers import serving

AWS_OFFERS = len(AWS_LIST_OFFERS) + 8  # the list prices, and spot for p4d and p4de in the four regions
ALL_OFFERS = AWS_OFFERS + len(AZURE_OFFERS)
A100_OFFERS = 18 + len(AZURE_A100_OFFERS)  # AWS: p4d and p4de on-demand and spot in four regions, p4de reserved

NC24_EASTUS = ("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")
NC96_EASTUS = ("azure", "eastus", "Standard_NC96ads_A100_v4", "on_demand")
NC24_NORTHEUROPE = ("azure", "northeurope", "Standard_NC24ads_A100_v4", "on_demand")


class Clock:
    """The one clock (pricedb.clock), moved by the test so that runs happen on chosen days."""

    moment = datetime(2026, 11, 26, 4, 0, tzinfo=UTC)

    @classmethod
    def now(cls) -> datetime:
        return cls.moment


@pytest.fixture
def offline(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    fixtures = tmp_path / "fixtures"
    for name in ("aws", "azure", "fx"):
        shutil.copytree(FIXTURES / name, fixtures / name)
    monkeypatch.setattr(clock, "_source", Clock.now)
    # Runs here are a day apart; keep offers fresh between them so staleness does not blur the test.
    return settings.model_copy(
        update={"offline": True, "fixtures_dir": fixtures, "stale_after": {"aws": 3 * 1440, "azure": 3 * 1440}}
    )


def edit_azure_page(fixtures: Path, edit) -> None:
    page = fixtures / "azure" / "retail_prices_page1.json"
    body = json.loads(page.read_text())
    body["Items"] = edit(body["Items"])
    page.write_text(json.dumps(body))


def on_demand(item: dict, sku: str, region: str) -> bool:
    return (item["armSkuName"], item["armRegionName"], item["skuName"], item["type"]) == (
        sku, region, sku, "Consumption"
    )  # fmt: skip


def run_day(store: PriceStore, settings: Settings, day: int) -> dict[str, str]:
    Clock.moment = datetime(2026, 11, day, 4, 0, tzinfo=UTC)  # 12:00 in Shanghai
    summaries = asyncio.run(collect(store, settings, ["aws", "azure"]))
    return {s.provider: s.status.value for s in summaries}


def test_digests_over_several_offline_runs(offline: Settings) -> None:
    store = PriceStore(offline)
    fixtures = offline.fixtures_dir
    assert run_day(store, offline, 26) == {"fx": "ok", "aws": "ok", "azure": "ok"}

    # Day 2: Azure cuts NC24 in eastus by 10%, drops NC96 in eastus, lists NC24 in northeurope;
    # AWS answers 503 for its first price file (its whole run fails).
    def day2(items: list[dict]) -> list[dict]:
        kept = [i for i in items if not on_demand(i, "Standard_NC96ads_A100_v4", "eastus")]
        for item in kept:
            if on_demand(item, "Standard_NC24ads_A100_v4", "eastus"):
                item["retailPrice"] = item["unitPrice"] = 3.3057
        new = next(i for i in kept if on_demand(i, "Standard_NC24ads_A100_v4", "westus"))
        return [*kept, {**new, "armRegionName": "northeurope", "location": "EU North", "retailPrice": 3.92}]

    edit_azure_page(fixtures, day2)
    aws_manifest = fixtures / "aws" / "replay.json"
    healthy = aws_manifest.read_text()
    broken = json.loads(healthy)
    broken["routes"][0]["status"] = 503
    aws_manifest.write_text(json.dumps(broken))
    assert run_day(store, offline, 27) == {"fx": "ok", "aws": "failed", "azure": "ok"}

    # Day 3: AWS is back, nothing changed anywhere.
    aws_manifest.write_text(healthy)
    assert run_day(store, offline, 28) == {"fx": "ok", "aws": "ok", "azure": "ok"}

    cur = store.cursor()
    zone, now = offline.digest_zone, datetime(2026, 11, 29, 4, 0)
    first = build_digest(cur, date(2026, 11, 26), zone, now)
    assert first["changes"] == [] and first["withdrawn"] == [] and len(first["new"]) == ALL_OFFERS

    second = build_digest(cur, date(2026, 11, 27), zone, now)
    [change] = second["changes"]
    assert (change["provider"], change["region"], change["sku"], change["pricing"]) == NC24_EASTUS
    assert (change["old_price"], change["new_price"], change["pct"]) == (3.673, 3.3057, -10.0)
    assert change["new_cny_per_gb_hour"] == pytest.approx(3.3057 * 6.8095 / 1.0163 / 80)
    assert [tuple(r[k] for k in ("provider", "region", "sku", "pricing")) for r in second["new"]] == [NC24_NORTHEUROPE]
    assert [tuple(r[k] for k in ("provider", "region", "sku", "pricing")) for r in second["withdrawn"]] == [NC96_EASTUS]
    # AWS failed that day: reported as failed, and none of its offers is withdrawn.
    [aws] = second["failed_providers"]
    assert aws["provider"] == "aws" and aws["status"] == "failed" and "HTTP 503" in aws["error"]
    assert all(row["provider"] == "azure" for row in second["withdrawn"])
    aws_offers = [o for o in snapshot_of_day(cur, date(2026, 11, 27)).offers if o.provider == "aws"]
    assert len(aws_offers) == AWS_OFFERS and all(o.stale for o in aws_offers)

    third = build_digest(cur, date(2026, 11, 28), zone, now)
    assert third["unchanged"] and third["failed_providers"] == []
    assert third["summary"] == "No price changes, new or withdrawn offers on 2026-11-28 (compared to 2026-11-27)."

    # History and snapshots answer for any day, over HTTP too.
    with serving(offline, store, now) as client:
        series = client.get(
            "/offers/history?provider=azure&region=eastus&sku=Standard_NC24ads_A100_v4&pricing=on_demand"
            "&since=2026-11-26&until=2026-11-28"
        ).json()["series"]
        assert [(p["observed_at"], p["price"]) for p in series[0]["points"]] == [
            ("2026-11-26T04:00:00Z", 3.673), ("2026-11-27T04:00:00Z", 3.3057), ("2026-11-28T04:00:00Z", 3.3057)
        ]  # fmt: skip
        for day, count in (("2026-11-25", 0), ("2026-11-26", A100_OFFERS), ("2026-11-27", A100_OFFERS),
                           ("2026-11-28", A100_OFFERS)):  # fmt: skip
            answer = client.get(f"/offers?date={day}&gpu=A100&include_stale=true&limit=5000").json()
            assert answer["count"] == count
        digest = client.get("/digest?date=2026-11-27").json()
        assert digest["stored"] is False and len(digest["changes"]) == 1
    store.close()
