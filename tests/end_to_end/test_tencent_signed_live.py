"""Tencent Cloud, live path through a signature-checking server: with keys set and
GPUPRICE_*_BASE_URL pointed at a local server that checks TC3 signatures and answers in Tencent's
real format, `gpuprice collect` stores
exactly the offers those answers contain — hourly, spot, monthly and subscription prices normalized,
sold-out offers marked; a wrong key fails the run with Tencent's own error; without keys the run is
skipped; and `/cheapest?mem=60GB&hours=200&gpu=A100` ranks Tencent's offers beside AWS and Azure."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from collectors import fx_ecb
from collectors.replay import Replay, serve_replay
from pricedb import clock
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import FIXTURES
from tests.support.tencent_server import tc3_gate

SECRET_ID, SECRET_KEY = "AKIDgpupriceE2E00000000000000000000", "gpupriceE2eSecretKey000000000000"
PROVIDERS = ("aws", "azure", "tencent")

# What the recorded answers hold (fixtures/README.md, ## tencent), written out by hand: not derived
# from the parser. (region, sku, pricing) -> (price in CNY, unit, availability).
A, S = "available", "sold_out"
EXPECTED = {
    ("ap-beijing", "GT4.4XLARGE96", "on_demand"): (31.2, "hour", A),
    ("ap-beijing", "GT4.8XLARGE192", "on_demand"): (62.4, "hour", A),
    ("ap-beijing", "GT4.20XLARGE474", "on_demand"): (124.8, "hour", A),
    ("ap-beijing", "GT4.41XLARGE948", "on_demand"): (249.6, "hour", A),
    ("ap-beijing", "GT4.4XLARGE96", "spot"): (6.24, "hour", A),
    ("ap-beijing", "GT4.8XLARGE192", "spot"): (12.48, "hour", A),
    ("ap-beijing", "GT4.41XLARGE948", "spot"): (49.92, "hour", S),
    ("ap-beijing", "GT4.4XLARGE96", "monthly"): (12948.0, "month", A),
    ("ap-beijing", "GT4.4XLARGE96", "reserved_1y"): (128962.08, "term", A),
    ("ap-beijing", "GT4.4XLARGE96", "reserved_3y"): (233064.0, "term", A),
    ("ap-beijing", "GT4.8XLARGE192", "monthly"): (25896.0, "month", A),
    ("ap-beijing", "GT4.8XLARGE192", "reserved_1y"): (257924.16, "term", A),
    ("ap-beijing", "GT4.8XLARGE192", "reserved_3y"): (466128.0, "term", A),
    ("ap-shanghai", "GT4.4XLARGE96", "on_demand"): (31.2, "hour", A),
    ("ap-shanghai", "GT4.8XLARGE192", "on_demand"): (62.4, "hour", A),
    ("ap-shanghai", "GT4.41XLARGE948", "on_demand"): (249.6, "hour", S),
    ("ap-shanghai", "GT4.4XLARGE96", "spot"): (6.24, "hour", A),
    ("ap-shanghai", "GT4.8XLARGE192", "spot"): (12.48, "hour", A),
    ("ap-shanghai", "GT4.4XLARGE96", "monthly"): (12948.0, "month", A),
    ("ap-shanghai", "GT4.4XLARGE96", "reserved_1y"): (128962.08, "term", A),
    ("ap-shanghai", "GT4.4XLARGE96", "reserved_3y"): (233064.0, "term", A),
    ("ap-shanghai", "GT4.41XLARGE948", "monthly"): (103584.0, "month", A),
    ("ap-guangzhou", "GT4.4XLARGE96", "on_demand"): (31.2, "hour", A),
    ("ap-guangzhou", "GT4.8XLARGE192", "on_demand"): (62.4, "hour", A),
    ("ap-guangzhou", "GT4.41XLARGE948", "on_demand"): (249.6, "hour", A),
    ("ap-guangzhou", "GT4.4XLARGE96", "spot"): (5.616, "hour", A),
    ("ap-guangzhou", "GT4.4XLARGE96", "monthly"): (12948.0, "month", A),
    ("ap-guangzhou", "GT4.8XLARGE192", "monthly"): (25896.0, "month", A),
    ("ap-guangzhou", "GT4.8XLARGE192", "reserved_1y"): (257924.16, "term", A),
    ("ap-guangzhou", "GT4.8XLARGE192", "reserved_3y"): (466128.0, "term", A),
    ("ap-beijing", "GN7.2XLARGE32", "on_demand"): (8.68, "hour", A),
    ("ap-beijing", "GN7.2XLARGE32", "spot"): (1.736, "hour", A),
    ("ap-beijing", "GN7.LARGE20", "on_demand"): (3.36, "hour", A),  # a 1/4 T4 vGPU slice
    ("ap-beijing", "GN7.LARGE20", "spot"): (0.672, "hour", A),
    ("ap-beijing", "GN10Xp.2XLARGE40", "on_demand"): (20.36, "hour", A),
    ("ap-beijing", "GN10Xp.2XLARGE40", "monthly"): (8600.0, "month", A),
    ("ap-beijing", "GN10Xp.2XLARGE40", "reserved_1y"): (85656.0, "term", A),
    ("ap-beijing", "GN10Xp.20XLARGE320", "on_demand"): (162.88, "hour", S),
    ("ap-beijing", "PNV4.7XLARGE116", "on_demand"): (12.29, "hour", A),
    ("ap-beijing", "PNV4.7XLARGE116", "monthly"): (5400.0, "month", A),
    ("ap-beijing", "GN8.LARGE56", "on_demand"): (10.15, "hour", A),
}
TERM_HOURS = {"hour": 1, "month": 730, "term": None}


@pytest.fixture
def environment(tmp_path, monkeypatch: pytest.MonkeyPatch):
    """A local stand-in for AWS, Azure, ECB and Tencent (signatures checked) and the settings to reach it."""
    problems: list[str] = []
    replays = [Replay.load(FIXTURES, name) for name in [*PROVIDERS, fx_ecb.NAME]]
    with serve_replay(replays, gate=tc3_gate(SECRET_ID, SECRET_KEY, problems)) as server:
        for name in [*PROVIDERS, "fx"]:
            monkeypatch.setenv(f"GPUPRICE_{name.upper()}_BASE_URL", server.url)
        monkeypatch.setenv("GPUPRICE_RETRY_BASE_DELAY_S", "0")
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
        monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)
        yield server, problems, str(tmp_path / "e2e.duckdb")


def collect(db: str, capsys: pytest.CaptureFixture[str], *providers: str) -> tuple[int, dict[str, dict]]:
    status = cli(["collect", *providers, "--db", db, "--json"])
    runs = json.loads(capsys.readouterr().out)["runs"]
    return status, {run["provider"]: run for run in runs}


def tencent_offers(db: str) -> dict[tuple[str, str, str], tuple]:
    store = PriceStore(Settings(db=db))
    offers = current_offers(store.cursor(), clock.now_naive()).offers
    store.close()
    return {
        (o.region, o.sku, o.pricing): (
            o.price,
            o.unit,
            o.availability,
            o.currency,
            o.cny_per_hour,
            o.term_hours,
            o.stale,
        )
        for o in offers
        if o.provider == "tencent"
    }


def test_collect_stores_exactly_the_answers_and_cheapest_ranks_them(
    environment, capsys: pytest.CaptureFixture[str]
) -> None:
    server, problems, db = environment
    status, runs = collect(db, capsys, *PROVIDERS)
    assert status == 0 and {p: runs[p]["status"] for p in PROVIDERS} == dict.fromkeys(PROVIDERS, "ok")
    tencent_calls = [headers for _, _, headers, _ in server.requests if "X-TC-Action" in headers]
    assert len(tencent_calls) == 9 and problems == []  # every Tencent call carried a valid signature
    assert {h["X-TC-Region"] for h in tencent_calls} == {"ap-beijing", "ap-shanghai", "ap-guangzhou"}

    stored = tencent_offers(db)
    assert {key: (price, unit, availability) for key, (price, unit, availability, *_) in stored.items()} == EXPECTED
    for key, (price, unit, _, currency, cny_per_hour, term_hours, stale) in stored.items():
        hours = TERM_HOURS[unit] or term_hours
        assert currency == "CNY" and not stale
        assert cny_per_hour == pytest.approx(price / hours), key  # CNY needs no FX: ¥ per hour as published
    assert stored[("ap-beijing", "GT4.4XLARGE96", "reserved_3y")][5] == 26280

    store = PriceStore(Settings(db=db))
    with TestClient(create_app(Settings(db=db), store=store, schedule=False)) as client:
        body = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()
        with_sold_out = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500&include_unavailable=true").json()
    store.close()
    options = {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in body["options"]}
    assert {o["provider"] for o in body["options"]} == set(PROVIDERS)
    totals = [o["total_cny"] for o in body["options"]]
    assert totals == sorted(totals)
    # GT4.4XLARGE96 (1 × 40GB) cannot hold 60 GB; the 2-GPU type can.
    assert not any(o["sku"] == "GT4.4XLARGE96" for o in body["options"])
    stepped = options[("tencent", "ap-beijing", "GT4.8XLARGE192", "on_demand")]
    assert (stepped["billed_hours"], stepped["total_cny"]) == (200, round(96 * 62.4 + 104 * 31.2, 2))
    assert stepped["cost_basis"] == "96 h × ¥62.4000/h + 104 h × ¥31.2000/h (stepped price)"
    month = options[("tencent", "ap-guangzhou", "GT4.8XLARGE192", "monthly")]
    assert (month["billed_hours"], month["total_cny"]) == (730, 25896.0)
    sold_out = ("tencent", "ap-shanghai", "GT4.41XLARGE948", "on_demand")
    assert sold_out not in options and body["excluded"]["unavailable"] == 2
    unavailable = {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in with_sold_out["options"]}
    assert unavailable[sold_out]["availability"] == "sold_out"


def test_a_wrong_key_fails_the_run_with_tencents_error_and_keeps_the_last_offers(
    environment, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, problems, db = environment
    assert collect(db, capsys, "tencent")[0] == 0
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "not-the-key-the-server-knows")
    status, runs = collect(db, capsys, "tencent")
    assert status == 1 and runs["tencent"]["status"] == "failed"
    assert problems and set(problems) == {"signature mismatch"}
    error = runs["tencent"]["error"]
    assert "AuthFailure.SignatureFailure: The provided credentials could not be validated." in error
    assert "Tencent Cloud refused the API keys" in error and "not-the-key" not in error
    kept = tencent_offers(db)
    assert set(kept) == set(EXPECTED) and all(row[-1] for row in kept.values())  # kept, and now stale


def test_without_keys_tencent_is_skipped(environment, capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    server, _, db = environment
    monkeypatch.delenv("TENCENTCLOUD_SECRET_ID")
    monkeypatch.delenv("TENCENTCLOUD_SECRET_KEY")
    status, runs = collect(db, capsys, "tencent")
    assert status == 1 and runs["tencent"]["status"] == "skipped"
    assert "set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY" in runs["tencent"]["error"]
    assert not any("X-TC-Action" in headers for _, _, headers, _ in server.requests)
