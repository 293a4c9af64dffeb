"""E2E Networks and the manual sheet, end to end: both load in offline mode, and
`/cheapest?mem=60GB&hours=200&gpu=A100` ranks them beside AWS and Azure, with sold-out manual offers left
out unless asked for; with E2E's API credentials set, `collect e2e` through a local server answering
in the plan API's shape stores exactly the plans' offers, committed terms as whole-term prices. The
whole path: recorded answers → collectors → DuckDB → API and CLI."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from api.cli import main as cli
from collectors.runner import collect
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import collect_offline_beside, collect_through_local_server

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


E2E_KEY, E2E_TOKEN = "e2e-live-test-api-key", "e2e-live-test-bearer-token"


def e2e_rows(store: PriceStore) -> dict[tuple[str, ...], tuple]:
    rows = store.cursor().execute(
        "SELECT region, sku, pricing, price, currency, unit, term_hours, gpu_model, gpu_memory_gb, gpu_count, "
        "availability FROM offers WHERE provider = 'e2e'"
    )
    return {row[:3]: row[3:] for row in rows.fetchall()}


def test_collect_e2e_with_credentials_reads_the_plan_api_and_stores_exactly_its_plans(settings: Settings) -> None:
    store, summaries, requests = collect_through_local_server(
        settings,
        ["e2e"],
        e2e_api_key=SecretStr(E2E_KEY),
        e2e_auth_token=SecretStr(E2E_TOKEN),
        e2e_project_id=SecretStr("40404"),
    )
    e2e = next(s for s in summaries if s.provider == "e2e")
    assert (e2e.status.value, e2e.offline) == ("ok", False)
    assert e2e.notes[0] == "source: E2E's MyAccount plan API (Delhi)"
    asked = [(path, headers.get("Authorization")) for _, path, headers, _ in requests if "myaccount" in path]
    assert [(path.split("?")[0], auth) for path, auth in asked] == [
        ("/myaccount/api/v1/images/", f"Bearer {E2E_TOKEN}")
    ]
    assert not any(path == "/pricing" for _, path, _, _ in requests)  # the page is the fallback only
    stored = e2e_rows(store)
    # Numbers the plan answer holds (fixtures/e2e/plans_delhi.json), independent of the parser.
    assert stored[("delhi", "GDC3.A10080-16.115GB", "on_demand")] == (
        226.0, "INR", "hour", None, "A100", 80.0, 1, "available",
    )  # fmt: skip
    assert stored[("delhi", "GDC3.A10080-16.115GB", "monthly")][:4] == (140000.0, "INR", "term", 720.0)
    assert stored[("delhi", "GDC3.A10080-16.115GB", "reserved_1y")][:4] == (1500000.0, "INR", "term", 8760.0)
    assert stored[("delhi", "GDC4.H200-30.375GB", "reserved_3y")][:4] == (5900000.0, "INR", "term", 26280.0)
    assert stored[("delhi", "GDC3.8xA10080-128.920GB", "on_demand")][4:7] == ("A100", 80.0, 8)
    assert stored[("delhi", "GDC.L40S-25.220GB", "on_demand")][-1] == "unknown"  # no inventory status
    assert len(stored) == 14 == e2e.quotes
    assert {sku for _, sku, _ in stored} == {
        "GDC3.A10080-16.115GB", "GDC3.8xA10080-128.920GB", "GDC-A.H100-1.120GB", "GDC.L40S-25.220GB",
        "GDC.2xA30-32.180GB", "GDC4.H200-30.375GB", "GDC.T4-8.30GB",
    }  # fmt: skip
    cursor = store.cursor()
    dumped = repr(cursor.execute("SELECT * FROM observations").fetchall()) + repr(
        cursor.execute("SELECT * FROM runs").fetchall()
    )
    assert E2E_KEY not in dumped and E2E_TOKEN not in dumped
    store.close()
    # The same answer replayed in-process (offline mode, credentials set) stores the same offers.
    keyed = settings.model_copy(
        update={"e2e_api_key": SecretStr(E2E_KEY), "e2e_auth_token": SecretStr(E2E_TOKEN),
                "e2e_project_id": SecretStr("40404")}
    )  # fmt: skip
    assert collect_offline_beside(keyed, ["e2e"], e2e_rows) == stored
