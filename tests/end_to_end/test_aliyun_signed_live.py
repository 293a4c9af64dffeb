"""Alibaba Cloud, live path through a signature-checking server: with keys set and GPUPRICE_ALIYUN_BASE_URL
pointed at a local server that checks every request's signature and answers in the API's formats,
`collect` stores exactly the offers those answers hold (hourly, spot and monthly normalized per the
contract, sold-out offers marked), and `/cheapest?mem=60GB&hours=200&gpu=A100` ranks them beside AWS and
Azure. A wrong secret is refused by the server and fails the run; no keys skip it."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from collectors import fx_ecb
from collectors.replay import Replay, serve_replay
from collectors.runner import collect
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.collectors.aliyun.test_parse import EXPECTED, GPUS
from tests.conftest import FIXTURES
from tests.support.aliyun_server import serve_verifying

KEY, SECRET = "LTAI5tTESTKEYEXAMPLE01", "TestSecretExampleDoNotUse0123456789"
USD_TO_CNY = 6.8095 / 1.0163  # ECB 2022-07-08, the recorded FX file


CREDENTIAL_FIELDS = {"aliyun_access_key_id", "aliyun_access_key_secret", "aliyun_security_token"}


def live_settings(settings: Settings, base_urls: dict[str, str]) -> Settings:
    """The test settings, re-read so that the ALIBABA_CLOUD_* / GPUPRICE_ALIYUN_* keys set by the test count."""
    return Settings(**{**settings.model_dump(exclude=CREDENTIAL_FIELDS), "base_urls": base_urls})


def aliyun_offers(store: PriceStore) -> dict[tuple[str, str, str], tuple]:
    rows = store.cursor().execute(
        "SELECT region, sku, pricing, price, currency, unit, availability, gpu_count, gpu_memory_gb, cny_per_hour, "
        "cny_per_gb_hour FROM offers WHERE provider = 'aliyun'"
    )
    return {row[:3]: row[3:] for row in rows.fetchall()}


def test_keys_set_and_a_signature_checking_server_give_exactly_its_offers_beside_aws_and_azure(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SECRET)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    others = ["aws", "azure", fx_ecb.NAME]
    with serve_replay([Replay.load(FIXTURES, name) for name in others]) as plain, serve_verifying(KEY, SECRET) as ecs:
        live = live_settings(settings, {**{name: plain.url for name in others}, "aliyun": ecs.url})
        store = PriceStore(live)
        summaries = asyncio.run(collect(store, live, ["aws", "azure", "aliyun"]))
    assert {s.provider: s.status.value for s in summaries} == {"fx": "ok", "aws": "ok", "azure": "ok", "aliyun": "ok"}
    # Every request reached the server signed correctly, and every recorded answer was asked for once.
    assert ecs.requests and all(seen.verdict == "ok" for seen in ecs.requests)
    routes = {route.url.split("/", 3)[3] for route in Replay.load(FIXTURES, "aliyun").routes}
    assert sorted(seen.path.lstrip("/") for seen in ecs.requests) == sorted(routes)

    stored = aliyun_offers(store)
    assert {k: (v[0], v[3]) for k, v in stored.items()} == {k: (v[0], v[2]) for k, v in EXPECTED.items()}
    for (_, sku, pricing), (price, currency, unit, _, count, memory, cny_hour, cny_gb_hour) in stored.items():
        assert currency == "CNY" and (count, memory) == GPUS[sku]
        hours = 730 if pricing == "monthly" else 1  # a month's price per hour: / 730 (CONTRACT §2)
        assert unit == ("month" if pricing == "monthly" else "hour")
        assert cny_hour == pytest.approx(price / hours)
        assert cny_gb_hour == pytest.approx(price / hours / (count * memory))
    summary = next(s for s in summaries if s.provider == "aliyun")
    assert summary.quotes == len(EXPECTED) and summary.rejected == 0

    app = create_app(live, store=store, schedule=False)
    with TestClient(app) as client:
        options = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()["options"]
        everything = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500&include_unavailable=true").json()[
            "options"
        ]
    store.close()
    assert {"aliyun", "aws", "azure"} <= {o["provider"] for o in options}
    mine = [o for o in options if o["provider"] == "aliyun"]
    assert all(o["availability"] == "available" and o["gpu_memory_gb"] * o["gpu_count"] >= 60 for o in mine)
    assert {(o["region"], o["sku"], o["pricing"]) for o in mine} == {
        k for k, v in EXPECTED.items() if v[2] == "available" and GPUS[k[1]][0] * GPUS[k[1]][1] >= 60
    }
    for option in mine:
        if option["pricing"] == "monthly":
            assert option["total_cny"] == pytest.approx(math.ceil(200 / 730) * option["price"])
        else:
            assert option["billed_hours"] == 200 and option["total_cny"] == pytest.approx(200 * option["price"])
    spot = next(
        o for o in mine if (o["region"], o["sku"], o["pricing"]) == ("cn-hangzhou", "ecs.gn7e-c16g1.4xlarge", "spot")
    )
    assert spot["total_cny"] == pytest.approx(200 * 6.601)
    aws_spot = next(o for o in options if o["provider"] == "aws" and o["pricing"] == "spot")
    assert aws_spot["cny_per_hour"] == pytest.approx(float(aws_spot["price"]) * USD_TO_CNY)
    totals = [o["total_cny"] for o in options]
    assert totals == sorted(totals)
    sold_out = {(o["region"], o["sku"], o["pricing"]) for o in everything if o["availability"] == "sold_out"}
    assert {k for k in sold_out if k[1].startswith("ecs.")} == {
        k for k, v in EXPECTED.items() if v[2] == "sold_out" and GPUS[k[1]][0] * GPUS[k[1]][1] >= 60
    }


def test_a_wrong_secret_is_refused_by_the_server_and_fails_the_run(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPRICE_ALIYUN_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("GPUPRICE_ALIYUN_ACCESS_KEY_SECRET", "not-the-secret")
    with serve_verifying(KEY, SECRET) as ecs:
        live = live_settings(settings, {"aliyun": ecs.url})
        store = PriceStore(live)
        (summary,) = asyncio.run(collect(store, live, ["aliyun"], include_fx=False))
        offers = aliyun_offers(store)
        store.close()
    assert summary.status.value == "failed"
    assert "SignatureDoesNotMatch: Specified signature is not matched with our calculation" in (summary.error or "")
    assert "not-the-secret" not in (summary.error or "")
    assert [seen.verdict for seen in ecs.requests] == ["signature mismatch"]
    assert offers == {}


def test_without_keys_the_cli_reports_aliyun_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_replay([Replay.load(FIXTURES, fx_ecb.NAME)]) as fx, serve_verifying(KEY, SECRET) as ecs:
        monkeypatch.setenv("GPUPRICE_FX_BASE_URL", fx.url)
        monkeypatch.setenv("GPUPRICE_ALIYUN_BASE_URL", ecs.url)
        code = cli(["collect", "aliyun", "--db", str(tmp_path / "cli.duckdb"), "--json"])
        requests = list(ecs.requests)
    runs = {run["provider"]: run for run in json.loads(capsys.readouterr().out)["runs"]}
    assert code != 0  # exit status 0 only if every named provider succeeded
    assert runs["fx"]["status"] == "ok" and runs["aliyun"]["status"] == "skipped"
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in runs["aliyun"]["error"]
    assert requests == []
