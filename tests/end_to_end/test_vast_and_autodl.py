"""Vast.ai and AutoDL through the whole path: offline collect → `/cheapest` ranking them beside
AWS and Azure, and a live collect against a local server answering with the recorded bodies
(through GPUPRICE_VAST_BASE_URL / GPUPRICE_AUTODL_BASE_URL) storing exactly what they contain."""

from __future__ import annotations

import math

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.end_to_end.test_offline_round_to_api_and_cli import offer_prices
from tests.helpers import collect_offline_beside, collect_through_local_server

USD_TO_CNY = 6.8095 / 1.0163  # ECB 2022-07-08, the recorded FX file
TOKEN = "autodl-login-token-for-tests"


def test_cheapest_ranks_marketplace_offers_beside_the_clouds(offline_round, offline_store: PriceStore) -> None:
    store = offline_store
    summaries = {s.provider: s for s in offline_round.summaries}
    assert summaries["vast"].status.value == "ok" and summaries["autodl"].status.value == "ok"
    assert (summaries["vast"].quotes, summaries["autodl"].quotes) == (27, 61)
    assert summaries["vast"].rejected == summaries["autodl"].rejected == 0
    with TestClient(create_app(store.settings, store=store, schedule=False)) as client:
        options = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()["options"]
        every = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500&include_unavailable=true").json()["options"]
    assert {"aws", "azure", "vast", "autodl"} <= {o["provider"] for o in options}
    totals = [o["total_cny"] for o in options]
    assert totals == sorted(totals)
    for option in options:
        assert option["gpu_count"] * option["gpu_memory_gb"] >= 60  # no 40GB x1 offer is viable
        assert option["availability"] != "sold_out"
    by_key = {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in every}
    vast = by_key[("vast", "US", "A100-SXM4-80GB x1", "on_demand")]
    assert vast["cny_per_hour"] == pytest.approx(1.158633 * USD_TO_CNY, rel=1e-6)
    assert vast["total_cny"] == pytest.approx(200 * vast["cny_per_hour"], abs=0.01)
    assert vast["notes"].startswith("cheapest of 5 offers; median 1.2189 USD/h")
    autodl = by_key[("autodl", "west-B", "A100-SXM4-80GB x1", "on_demand")]
    assert (autodl["cny_per_hour"], autodl["total_cny"]) == (pytest.approx(5.98), pytest.approx(1196.0))
    monthly = by_key[("autodl", "west-B", "A100-SXM4-80GB x1", "monthly")]
    assert monthly["total_cny"] == pytest.approx(math.ceil(200 / 730) * 3180.0)
    sold_out = by_key[("autodl", "neimeng-C", "A100-SXM4-80GB x1", "on_demand")]
    assert sold_out["availability"] == "sold_out" and sold_out not in options
    # Marketplace offers are among the cheapest viable ways to 60 GB for 200 h in these recordings.
    assert options[0]["provider"] in ("vast", "autodl", "runpod")
    rank = {(o["provider"], o["region"], o["sku"], o["pricing"]): o["rank"] for o in options}
    autodl_rank = rank[("autodl", "west-B", "A100-SXM4-80GB x1", "on_demand")]
    vast_rank = rank[("vast", "US", "A100-SXM4-80GB x1", "on_demand")]
    azure_rank = rank[("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")]
    assert autodl_rank < vast_rank < azure_rank  # ¥5.98/h < $1.16/h (¥7.76) < $3.67/h


def test_live_collect_against_a_local_server_stores_exactly_what_it_answers(settings: Settings) -> None:
    names = ["vast", "autodl"]
    store, summaries, requests = collect_through_local_server(settings, names, autodl_token=SecretStr(TOKEN))
    assert {s.provider: s.status.value for s in summaries} == {"fx": "ok", "vast": "ok", "autodl": "ok"}
    assert all(not s.offline for s in summaries)
    autodl_calls = [headers for _, path, headers, _ in requests if "/machine/" in path or "/autodl/" in path]
    assert len(autodl_calls) == 10 and {h["Authorization"] for h in autodl_calls} == {TOKEN}
    vast_calls = [headers for _, path, headers, _ in requests if path == "/api/v0/bundles/"]
    assert len(vast_calls) == 2 and not any("Authorization" in h for h in vast_calls)
    stored = offer_prices(store)
    store.close()
    assert collect_offline_beside(settings, names, offer_prices) == stored
    # Independent of the parsers: the numbers the fixtures hold (fixtures/README.md).
    usd = 1.1378 + 0.15 * 100 / 720
    assert stored[("vast", "US", "A100-SXM4-80GB x1", "on_demand")] == (
        pytest.approx(usd),
        pytest.approx(usd * USD_TO_CNY / 80),
    )
    assert stored[("vast", "CZ", "A100-PCIE-40GB x1", "spot")][0] == pytest.approx(0.40 + 0.08 * 100 / 720)
    assert stored[("autodl", "west-B", "A100-SXM4-80GB x2", "on_demand")] == (11.96, pytest.approx(11.96 / 160))
    assert stored[("autodl", "beijing-B", "A100-PCIE-40GB x1", "on_demand")] == (3.45, pytest.approx(3.45 / 40))
    assert stored[("autodl", "west-B", "A100-SXM4-80GB x1", "monthly")] == (3180.0, pytest.approx(3180 / 730 / 80))
    assert len(stored) == sum(s.quotes for s in summaries if s.provider != "fx") == 27 + 61


def test_without_a_token_autodl_is_skipped_and_vast_still_runs(settings: Settings) -> None:
    live = collect_through_local_server(settings, ["vast", "autodl"])
    live.store.close()
    summaries = {s.provider: s for s in live.summaries}
    assert summaries["vast"].status.value == "ok"
    assert summaries["autodl"].status.value == "skipped" and "GPUPRICE_AUTODL_TOKEN" in summaries["autodl"].error
