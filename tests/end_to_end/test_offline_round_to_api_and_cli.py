"""The whole path, offline: recorded provider answers → collectors → DuckDB → API and CLI.

1. `--offline` replays fixtures/ through the same fetch and parse code as live runs.
2. Pointed through GPUPRICE_<PROVIDER>_BASE_URL at a local HTTP server answering with the same
   recorded bodies, a *live* collect stores exactly the offers those answers contain.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from collectors.registry import COLLECTORS
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import collect_offline_beside, collect_through_local_server


def offer_prices(store: PriceStore) -> dict[tuple[str, ...], tuple[float, float | None]]:
    rows = store.cursor().execute("SELECT provider, region, sku, pricing, price, cny_per_gb_hour FROM offers")
    return {row[:4]: (row[4], row[5]) for row in rows.fetchall()}


@pytest.fixture
def offline_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"offline": True})


def test_offline_collect_then_cheapest(
    offline_round, offline_store: PriceStore, capsys: pytest.CaptureFixture[str]
) -> None:
    statuses = {s.provider: s.status.value for s in offline_round.summaries}
    assert statuses == {"fx": "ok", **{name: "ok" for name in COLLECTORS}}
    store, offline_settings = offline_store, offline_store.settings
    app = create_app(offline_settings, store=store, schedule=False)
    with TestClient(app) as client:
        body = client.get("/cheapest?mem=60GB&hours=200&limit=500").json()
        providers = {o["provider"] for o in body["options"]}
        assert {"aws", "azure"} <= providers
        for option in body["options"]:
            assert option["gpu_count"] * option["gpu_memory_gb"] >= 60
            assert option["offline"] is True and option["stale"] is False
            flat = option["billed_hours"] * option["cny_per_hour"]
            if option["pricing"] in ("on_demand", "spot") and "(stepped price)" in option["cost_basis"]:
                assert option["total_cny"] < flat  # cheaper hours after the steps (Tencent)
            elif option["pricing"] in ("on_demand", "spot"):
                assert option["total_cny"] == pytest.approx(flat, abs=0.01)
        totals = [o["total_cny"] for o in body["options"]]
        assert totals == sorted(totals)
        offers = client.get("/offers?limit=5000").json()["offers"]
        assert all(o["fx_date"] == "2022-07-08" for o in offers if o["currency"] != "CNY")
    store.close()
    # The CLI, on the same file, prints exactly what the API returned.
    capsys.readouterr()
    assert cli(["cheapest", "--mem", "60GB", "--hours", "200", "--limit", "500", "--json",
                "--db", str(offline_settings.db)]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == body


def test_cli_collect_offline_and_query(offline_settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(offline_settings.db)
    assert cli(["collect", "--offline", "--db", db, "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert {r["provider"] for r in runs} == {"fx", *COLLECTORS}
    assert cli(["cheapest", "--mem", "60GB", "--hours", "200", "--json", "--db", db]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["options"] and answer["query"] == {**answer["query"], "mem_gb": 60.0, "hours": 200.0}
    assert cli(["cheapest", "--mem", "abc", "--db", db]) == 2
    assert "not a memory size" in capsys.readouterr().err
    assert cli(["providers", "--db", db]) == 0


def test_live_collect_against_a_local_server_stores_exactly_what_it_answers(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    names = ["aws", "azure"]
    store, summaries, requests = collect_through_local_server(settings, names)
    assert {s.provider: s.status.value for s in summaries} == {"fx": "ok", "aws": "ok", "azure": "ok"}
    assert all(not s.offline for s in summaries)
    signed = [headers for method, path, headers, body in requests if method == "POST"]
    assert signed and all(h["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") for h in signed)
    stored = offer_prices(store)
    store.close()
    # The same recorded bodies replayed in-process (offline mode) give exactly the same offers.
    assert collect_offline_beside(settings, names, offer_prices) == stored
    # Independent of the parsers: the numbers the fixtures hold (see fixtures/README.md).
    usd_to_cny = 6.8095 / 1.0163  # ECB 2022-07-08, the recorded FX file
    assert stored[("aws", "us-east-1", "p4d.24xlarge", "on_demand")] == (
        21.957642,
        pytest.approx(21.957642 * usd_to_cny / 320),
    )
    assert stored[("aws", "us-east-1", "p4de.24xlarge", "on_demand")][0] == 27.44705
    assert stored[("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")] == (
        3.673,
        pytest.approx(3.673 * usd_to_cny / 80),
    )
    assert stored[("azure", "eastus", "Standard_ND96amsr_A100_v4", "reserved_1y")][0] == 183722
    assert len(stored) == sum(s.quotes for s in summaries if s.provider != "fx")
