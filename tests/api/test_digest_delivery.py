"""Digest delivery: each webhook format as its service documents it, signing, retries, and failures
that are recorded and reported but never raised."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from datetime import UTC, date, datetime
from urllib.parse import parse_qs, unquote_plus, urlsplit

import httpx
import pytest
import respx
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from api.delivery import dingtalk_sign, feishu_sign, message, targets
from api.digests import run_digest_job
from pricedb import clock
from pricedb.digest import deliveries_for
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import make_quote, make_run, seed_fx

JSON_URL = "https://hooks.example.test/gpuprice"
SLACK_URL = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXX"
FEISHU_URL = "https://open.feishu.cn/open-apis/bot/v2/hook/00000000-0000-0000-0000-000000000000"
DINGTALK_URL = "https://oapi.dingtalk.com/robot/send?access_token=abc123"
NOON = datetime(2026, 11, 29, 4, 0)  # 12:00 in Shanghai: yesterday there is Nov 28


@pytest.fixture
def stocked(store: PriceStore) -> PriceStore:
    seed_fx(store, datetime(2026, 11, 27))
    store.record_run(make_run("aws", [make_quote(price=20.0, observed_at=datetime(2026, 11, 27, 4))],
                              finished_at=datetime(2026, 11, 27, 4)))  # fmt: skip
    store.record_run(make_run("aws", [make_quote(price=22.0, observed_at=datetime(2026, 11, 28, 4))],
                              finished_at=datetime(2026, 11, 28, 4)))  # fmt: skip
    return store


def hooked(settings: Settings, **urls: str) -> Settings:
    return settings.model_copy(update={name: SecretStr(value) for name, value in urls.items()})


def run_job(store: PriceStore, settings: Settings) -> dict:
    """The daily job at NOON by the one clock: the digest's day and the webhooks' signed stamps."""
    with clock.pinned(NOON):
        digest = asyncio.run(run_digest_job(store, settings))
    assert digest is not None and digest["date"] == "2026-11-28"
    return digest


def test_no_webhooks_configured_means_no_delivery(stocked: PriceStore, settings: Settings) -> None:
    assert targets(settings) == []
    with respx.mock(assert_all_called=False) as mock:
        assert run_job(stocked, settings)["deliveries"] == []
        assert not mock.calls


def test_generic_json_and_slack(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_webhook_url=JSON_URL, digest_slack_webhook_url=SLACK_URL)
    with respx.mock(assert_all_called=True) as mock:
        generic = mock.post(JSON_URL).respond(204)
        slack = mock.post(SLACK_URL).respond(200, text="ok")
        digest = run_job(stocked, configured)
    assert [d["status"] for d in digest["deliveries"]] == ["ok", "ok"]
    sent = json.loads(generic.calls.last.request.content)
    assert sent["date"] == "2026-11-28" and sent["changes"][0]["old_price"] == 20.0 and sent["stored"] is True
    body = json.loads(slack.calls.last.request.content)
    assert body["text"].startswith("GPU price digest 2026-11-28: 1 price change")
    assert body["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "GPU price digest 2026-11-28"},
    }
    assert body["blocks"][1]["type"] == "section" and body["blocks"][1]["text"]["type"] == "mrkdwn"
    assert "| aws | us-east-1 | p4d.24xlarge | on_demand | 20 | 22 USD/hour |" in body["blocks"][1]["text"]["text"]
    assert slack.calls.last.request.headers["content-type"].startswith("application/json")


def test_feishu_text_message_signed_as_documented(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_feishu_webhook_url=FEISHU_URL, digest_feishu_secret="feishu-secret")
    with respx.mock(assert_all_called=True) as mock:
        feishu = mock.post(FEISHU_URL).respond(200, json={"code": 0, "data": {}, "msg": "success"})
        digest = run_job(stocked, configured)
    assert digest["deliveries"][0]["status"] == "ok"
    body = json.loads(feishu.calls.last.request.content)
    assert body["msg_type"] == "text" and body["content"]["text"].startswith("# GPU price digest 2026-11-28")
    # sign = base64(HMAC-SHA256 with key `timestamp + "\n" + secret` over an empty message)
    key = f"{body['timestamp']}\nfeishu-secret".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    assert body["timestamp"] == str(int(NOON.replace(tzinfo=UTC).timestamp()))


def test_feishu_unsigned_and_a_refusal_in_the_body_counts_as_failure(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_feishu_webhook_url=FEISHU_URL)
    with respx.mock(assert_all_called=True) as mock:
        feishu = mock.post(FEISHU_URL).respond(200, json={"code": 19021, "msg": "sign match fail", "data": {}})
        digest = run_job(stocked, configured)
    assert "timestamp" not in json.loads(feishu.calls.last.request.content)
    [delivery] = digest["deliveries"]
    assert delivery == {"target": "feishu", "status": "failed", "error": "feishu refused the message: code 19021: "
                        "sign match fail"}  # fmt: skip


def test_dingtalk_markdown_signed_in_the_query(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_dingtalk_webhook_url=DINGTALK_URL, digest_dingtalk_secret="SECabc")
    with respx.mock(assert_all_called=True) as mock:
        ding = mock.post(url__startswith="https://oapi.dingtalk.com/robot/send").respond(
            200, json={"errcode": 0, "errmsg": "ok"}
        )
        digest = run_job(stocked, configured)
    assert digest["deliveries"][0]["status"] == "ok"
    request = ding.calls.last.request
    body = json.loads(request.content)
    assert body["msgtype"] == "markdown" and body["markdown"]["title"] == "GPU price digest 2026-11-28"
    assert body["markdown"]["text"].startswith("# GPU price digest 2026-11-28")
    raw_query = urlsplit(str(request.url)).query
    query = parse_qs(raw_query)
    assert query["access_token"] == ["abc123"]
    stamp = query["timestamp"][0]
    # sign = urlEncode(base64(HMAC-SHA256 keyed with the secret over `timestamp + "\n" + secret`))
    expected = base64.b64encode(hmac.new(b"SECabc", f"{stamp}\nSECabc".encode(), hashlib.sha256).digest()).decode()
    encoded = raw_query.split("sign=")[1].split("&")[0]
    assert unquote_plus(encoded) == expected and "+" not in encoded and "/" not in encoded
    assert stamp == str(int(NOON.replace(tzinfo=UTC).timestamp() * 1000))  # milliseconds


def test_a_failing_webhook_is_retried_recorded_and_reported(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_webhook_url=JSON_URL, digest_slack_webhook_url=SLACK_URL)
    with respx.mock(assert_all_called=True) as mock:
        broken = mock.post(JSON_URL).mock(side_effect=[httpx.Response(503), httpx.Response(502), httpx.Response(500),
                                                       httpx.Response(503)])  # fmt: skip
        slack = mock.post(SLACK_URL).respond(200, text="ok")
        digest = run_job(stocked, configured)
    assert broken.call_count == configured.retry_attempts == 4
    assert slack.call_count == 1  # one broken target does not stop the others
    failed, ok = digest["deliveries"]
    assert failed["target"] == "json" and failed["status"] == "failed"
    assert "HTTP 503" in failed["error"] and "gave up after 4 attempts" in failed["error"]
    assert "/gpuprice" not in failed["error"]  # webhook paths carry tokens: only scheme and host are named
    assert ok == {"target": "slack", "status": "ok", "error": None}
    recorded = deliveries_for(stocked.cursor(), date(2026, 11, 28))
    assert [(d["target"], d["status"]) for d in recorded] == [("json", "failed"), ("slack", "ok")]
    # Reported by /digest (JSON and Markdown).
    app = create_app(configured, store=stocked, schedule=False)
    with TestClient(app) as client:
        app.state.gpuprice.clock = lambda: NOON
        served = client.get("/digest").json()
        assert served["stored"] and [d["status"] for d in served["deliveries"]] == ["failed", "ok"]
        assert "Delivery to json failed" in client.get("/digest?format=md").text


def test_a_4xx_is_not_retried_and_a_dead_host_does_not_crash(stocked: PriceStore, settings: Settings) -> None:
    configured = hooked(settings, digest_slack_webhook_url=SLACK_URL, digest_webhook_url=JSON_URL)
    with respx.mock(assert_all_called=True) as mock:
        slack = mock.post(SLACK_URL).respond(404, text="no_service")
        mock.post(JSON_URL).mock(side_effect=httpx.ConnectError("connection refused"))
        digest = run_job(stocked, configured)
    assert slack.call_count == 1
    errors = {d["target"]: d["error"] for d in digest["deliveries"]}
    assert "HTTP 404" in errors["slack"] and "no_service" in errors["slack"]
    assert "ConnectError" in errors["json"]


def test_signatures_match_the_documented_recipes() -> None:
    # Recomputed independently of the code above, with fixed inputs.
    assert (
        feishu_sign("secret", 1700000000)
        == base64.b64encode(hmac.new(b"1700000000\nsecret", b"", hashlib.sha256).digest()).decode()
    )
    assert (
        dingtalk_sign("SEC1", 1700000000000)
        == base64.b64encode(hmac.new(b"SEC1", b"1700000000000\nSEC1", hashlib.sha256).digest()).decode()
    )
    digest = {"date": "2026-11-28", "compared_to": "2026-11-27", "time_zone": "UTC", "summary": "quiet",
              "changes": [], "new": [], "withdrawn": [], "failed_providers": [], "cheapest": [],
              "unchanged": True}  # fmt: skip
    assert message("feishu", digest, "s", now=lambda: 1700000000.0)["timestamp"] == "1700000000"
    with pytest.raises(ValueError, match="unknown webhook kind"):
        message("teams", digest, None)
