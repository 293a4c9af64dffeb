"""E2E Networks and the manual sheet, end to end: both load in offline mode, and
`/cheapest?mem=60GB&hours=200&gpu=A100` ranks them beside AWS and Azure, with sold-out manual offers left
out unless asked for. The whole path: recorded answers → collectors → DuckDB → API and CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from collectors.runner import collect
from pricedb.settings import Settings
from pricedb.store import PriceStore

INR_TO_CNY = 6.8095 / 80.5280  # ECB 2022-07-08, the recorded FX file
USD_TO_CNY = 6.8095 / 1.0163
SOLD_OUT = ("manual", "us-east", "coreweave/HGX A100 80GB x8", "on_demand")


@pytest.fixture
def offline_store(settings: Settings):
    offline = settings.model_copy(update={"offline": True})
    store = PriceStore(offline)
    summaries = asyncio.run(collect(store, offline, ["aws", "azure", "e2e", "manual"]))
    assert {s.provider: s.status.value for s in summaries} == dict.fromkeys(
        ["fx", "aws", "azure", "e2e", "manual"], "ok"
    )
    assert all(s.offline for s in summaries)
    yield offline, store
    store.close()


def options_by_key(body: dict) -> dict[tuple[str, str, str, str], dict]:
    return {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in body["options"]}


def test_cheapest_60gb_for_200_hours_ranks_e2e_and_manual_beside_aws_and_azure(offline_store) -> None:
    settings, store = offline_store
    app = create_app(settings, store=store, schedule=False)
    with TestClient(app) as client:
        body = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()
        with_sold_out = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500&include_unavailable=true").json()
        only_new = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&provider=e2e,manual").json()
    options = options_by_key(body)
    assert {"aws", "azure", "e2e", "manual"} <= {o["provider"] for o in body["options"]}
    totals = [o["total_cny"] for o in body["options"]]
    assert totals == sorted(totals) and [o["rank"] for o in body["options"]] == list(range(1, len(totals) + 1))
    for option in body["options"]:
        assert option["gpu_count"] * option["gpu_memory_gb"] >= 60 and option["offline"] is True

    # E2E's published 1×A100 80GB hourly price, billed per minute: 200 h × ₹226, in CNY.
    e2e = options[("e2e", "india", "GDC3.A10080-16.115GB", "on_demand")]
    assert (e2e["price"], e2e["currency"], e2e["billed_hours"]) == (226.0, "INR", 200.0)
    assert e2e["total_cny"] == pytest.approx(200 * 226 * INR_TO_CNY, abs=0.01)
    assert "excludes 18% GST" in e2e["notes"]
    # E2E's 30-day plan covers 200 h with one term (a placeholder figure, and it says so).
    thirty = options[("e2e", "india", "GDC3.A10080-16.115GB", "monthly")]
    assert (thirty["billed_hours"], thirty["unit"], thirty["term_hours"]) == (720.0, "term", 720.0)
    assert thirty["total_cny"] == pytest.approx(146000 * INR_TO_CNY, abs=0.01)
    assert "fixture price" in thirty["notes"]
    # A manual row, converted with the rate of the latest day on or before the day it was seen.
    runpod = options[("manual", "secure-cloud", "runpod/A100 SXM", "on_demand")]
    assert runpod["total_cny"] == pytest.approx(200 * 1.79 * USD_TO_CNY, abs=0.01)
    assert runpod["observed_at"] == "2026-11-09T00:00:00Z" and runpod["fx_date"] == "2022-07-08"
    # Ranked beside the clouds: the E2E on-demand node is cheaper than Azure's 1×A100 80GB for this job.
    azure = options[("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")]
    assert e2e["total_cny"] < azure["total_cny"]
    assert e2e["rank"] < azure["rank"]

    # The sold-out manual offer is left out (and counted), unless asked for.
    assert SOLD_OUT not in options and body["excluded"]["unavailable"] == 1
    included = options_by_key(with_sold_out)[SOLD_OUT]
    assert included["availability"] == "sold_out"
    assert included["total_cny"] == pytest.approx(200 * 17.6 * USD_TO_CNY, abs=0.01)

    assert {o["provider"] for o in only_new["options"]} == {"e2e", "manual"}


def test_cli_answers_the_same_question_from_the_same_file(offline_store, capsys) -> None:
    settings, store = offline_store
    app = create_app(settings, store=store, schedule=False)
    with TestClient(app) as client:
        api_body = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&provider=e2e,manual").json()
    store.close()
    db = str(settings.db)
    assert (
        cli(
            [
                "cheapest",
                "--mem",
                "60GB",
                "--hours",
                "200",
                "--gpu",
                "A100",
                "--provider",
                "e2e,manual",
                "--json",
                "--db",
                db,
            ]
        )
        == 0
    )
    cli_body = json.loads(capsys.readouterr().out)
    assert cli_body["options"] == api_body["options"]
    assert cli(["providers", "--db", db, "--json"]) == 0
    states = {p["provider"]: p for p in json.loads(capsys.readouterr().out)["providers"]}
    assert (states["e2e"]["status"], states["manual"]["status"]) == ("ok", "ok")
