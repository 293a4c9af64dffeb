"""Lambda, RunPod and Verda end to end: a *live* collect through their `GPUPRICE_<PROVIDER>_BASE_URL`
against a local server answering with the recorded bodies stores exactly the offers those bodies
hold (and no secret); missing keys skip a run instead of failing it; offline, `/cheapest` ranks
their offers beside AWS and Azure."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import collect_offline_beside, collect_through_local_server

NAMES = ["lambda", "runpod", "verda"]
LAMBDA_KEY, VERDA_ID, VERDA_SECRET = "secret_e2e-lambda-key", "e2e-verda-client", "e2e-verda-secret"
VERDA_TOKEN = "offline-replay-placeholder-access-token"
USD_CNY = 6.8095 / 1.0163  # ECB 2022-07-08, the recorded FX file


def offer_rows(store: PriceStore) -> dict[tuple[str, ...], tuple[float, float | None, str]]:
    rows = store.cursor().execute(
        "SELECT provider, region, sku, pricing, price, cny_per_gb_hour, availability FROM offers "
        "WHERE provider IN (?, ?, ?)",
        NAMES,
    )
    return {row[:4]: (row[4], row[5], row[6]) for row in rows.fetchall()}


def test_live_collect_through_a_local_server_stores_exactly_what_it_answers(settings: Settings) -> None:
    store, summaries, requests = collect_through_local_server(
        settings,
        NAMES,
        lambda_api_key=SecretStr(LAMBDA_KEY),
        verda_client_id=SecretStr(VERDA_ID),
        verda_client_secret=SecretStr(VERDA_SECRET),
    )
    assert {s.provider: s.status.value for s in summaries} == {
        "fx": "ok",
        "lambda": "ok",
        "runpod": "ok",
        "verda": "ok",
    }
    assert all(not s.offline for s in summaries)
    auth = {path.split("?")[0]: headers.get("Authorization") for _, path, headers, _ in requests}
    assert auth["/api/v1/instance-types"] == f"Bearer {LAMBDA_KEY}"
    assert auth["/graphql"] is None  # RunPod's price queries need no key
    assert auth["/v1/oauth2/token"] is None and auth["/v1/instance-types"] == f"Bearer {VERDA_TOKEN}"
    stored = offer_rows(store)
    # Independent of the parsers: numbers the fixtures hold (fixtures/README.md), per instance-hour.
    assert stored[("lambda", "us-midwest-1", "gpu_8x_a100_80gb_sxm4", "on_demand")] == (
        22.32, pytest.approx(22.32 * USD_CNY / 640), "available",
    )  # fmt: skip
    assert stored[("lambda", "us-east-1", "gpu_1x_a100", "on_demand")][2] == "sold_out"
    assert stored[("runpod", "global", "NVIDIA A100 80GB PCIe x2 (community)", "spot")] == (
        0.84, pytest.approx(0.84 * USD_CNY / 160), "available",
    )  # fmt: skip
    assert stored[("verda", "FIN-03", "8A100.40S.176V", "on_demand")] == (
        5.77,
        pytest.approx(5.77 * USD_CNY / 320),
        "available",
    )
    assert stored[("verda", "FIN-01", "1A100.22V", "reserved_1y")][0] == 0.87
    assert len(stored) == 90 + 30 + 224 == sum(s.quotes for s in summaries if s.provider != "fx")
    # Nothing secret reached the database: not the keys, not the client secret, not the token.
    cursor = store.cursor()
    dumped = repr(cursor.execute("SELECT * FROM observations").fetchall()) + repr(
        cursor.execute("SELECT * FROM runs").fetchall()
    )
    for secret in (LAMBDA_KEY, VERDA_SECRET, VERDA_TOKEN):
        assert secret not in dumped
    store.close()
    # The same recorded bodies replayed in-process (offline mode) give exactly the same offers.
    assert collect_offline_beside(settings, NAMES, offer_rows) == stored


def test_without_keys_lambda_and_verda_are_skipped_and_runpod_still_runs(settings: Settings) -> None:
    store, summaries, requests = collect_through_local_server(settings, NAMES)
    summaries = {s.provider: s for s in summaries}
    paths = {path.split("?")[0] for _, path, _, _ in requests}
    assert {name: summaries[name].status.value for name in NAMES} == {
        "lambda": "skipped",
        "runpod": "ok",
        "verda": "skipped",
    }
    assert "GPUPRICE_LAMBDA_API_KEY" in summaries["lambda"].error
    assert "GPUPRICE_VERDA_CLIENT_ID" in summaries["verda"].error
    assert "/graphql" in paths and not paths & {
        "/api/v1/instance-types",
        "/v1/oauth2/token",
    }  # nothing sent without keys
    assert {row[0] for row in offer_rows(store)} == {"runpod"}
    store.close()


def test_cheapest_ranks_them_beside_aws_and_azure(offline_store: PriceStore) -> None:
    store = offline_store
    with TestClient(create_app(store.settings, store=store, schedule=False)) as client:
        answer = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()
        every = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500&include_unavailable=true").json()
    options = answer["options"]
    assert {"aws", "azure", "lambda", "runpod", "verda"} <= {o["provider"] for o in options}
    assert all(o["availability"] != "sold_out" for o in options)
    assert answer["excluded"]["unavailable"] > 0 and any(o["availability"] == "sold_out" for o in every["options"])
    totals = [o["total_cny"] for o in options]
    assert totals == sorted(totals)
    # The cheapest 60 GB for 200 h in the recorded answers: RunPod Community A100 PCIe spot, 0.42 USD/h.
    first = options[0]
    assert (first["provider"], first["sku"], first["pricing"]) == (
        "runpod",
        "NVIDIA A100 80GB PCIe x1 (community)",
        "spot",
    )
    assert first["total_cny"] == pytest.approx(200 * 0.42 * USD_CNY, abs=0.01)
    lambda_2x = next(o for o in options if (o["provider"], o["sku"]) == ("lambda", "gpu_2x_a100"))
    assert (lambda_2x["region"], lambda_2x["billed_hours"]) == ("us-west-1", 200)
    assert lambda_2x["total_cny"] == pytest.approx(200 * 3.98 * USD_CNY, abs=0.01)
    reserved = next(
        o
        for o in options
        if (o["provider"], o["sku"], o["pricing"], o["region"]) == ("verda", "1A100.22V", "reserved_1y", "FIN-01")
    )
    assert reserved["billed_hours"] == 8760 and reserved["total_cny"] == pytest.approx(8760 * 0.87 * USD_CNY, abs=0.01)
