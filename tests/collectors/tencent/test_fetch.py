"""Tencent Cloud collector, fetching: signed calls per region and charge type, base-URL rewriting
(the signature covers the host contacted), API errors answered with HTTP 200, retries with a fresh
signature, credentials (both variable families, none → skipped), scopes, offline replay, and the
cost of a long job on a stepped offer."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import respx

from api.cheapest import job_cost
from collectors.errors import FetchError, MissingCredentials
from collectors.http import Http, make_client
from collectors.runner import collect, run_provider
from collectors.tencent import TencentCollector, api
from collectors.tencent.instance_types import FAMILIES
from pricedb import clock
from pricedb.models import RunStatus
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import fixture_bytes
from tests.support.tencent_server import signature_problem

SECRET_ID, SECRET_KEY = "AKIDgpupriceTEST0000000000000000000", "gpupriceTestSecretKey0000000000"
JSON = {"content-type": "application/json"}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", SECRET_KEY)


def from_env(settings: Settings, **update) -> Settings:
    """The test settings, re-read with the environment as the test set it (keys, base URL, regions)."""
    fresh = Settings(
        db=settings.db,
        export_dir=settings.export_dir,
        retry_base_delay_s=0.0,
        retry_max_delay_s=0.0,
        http_timeout_s=2.0,
    )
    return fresh.model_copy(update=update)


def recorded(request: httpx.Request) -> httpx.Response:
    """The API as recorded: the answer for the request's region (header) and charge type (body)."""
    charge = json.loads(request.content)["Filters"][1]["Values"][0]
    body = fixture_bytes("tencent", f"{request.headers['X-TC-Region']}_{charge}.json")
    return httpx.Response(200, content=body, headers=JSON)


def fetch(settings: Settings, scope: str | None = None):
    collector = TencentCollector(settings)

    async def go():
        async with make_client(settings) as client:
            chosen = collector.scope(scope) if scope else collector.full_scope()
            return await collector.fetch(Http(client, "tencent", settings), chosen)

    return collector, asyncio.run(go())


def calls_by(route, since: int = 0) -> set[tuple[str, str]]:
    """(region, charge type) of each call the route received, from call number `since` on."""
    return {
        (c.request.headers["X-TC-Region"], json.loads(c.request.content)["Filters"][1]["Values"][0])
        for c in list(route.calls)[since:]
    }


@respx.mock
def test_one_signed_call_per_region_and_charge_type(settings: Settings, keys: None) -> None:
    route = respx.post(api.ENDPOINT).mock(side_effect=recorded)
    collector, fetched = fetch(from_env(settings))
    regions, charges = ("ap-beijing", "ap-shanghai", "ap-guangzhou"), ("POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID")
    assert calls_by(route) == {(r, c) for r in regions for c in charges} and route.call_count == 9
    for call in route.calls:
        request = call.request
        assert (
            signature_problem("POST", str(request.url), request.headers, request.content, SECRET_ID, SECRET_KEY) is None
        )
        assert request.headers["X-TC-Action"] == "DescribeZoneInstanceConfigInfos"
        assert request.headers["X-TC-Version"] == "2017-03-12"
        assert request.headers["Content-Type"] == "application/json; charset=utf-8"
        assert request.headers["Host"] == "cvm.tencentcloudapi.com"
        assert json.loads(request.content)["Filters"][0] == {"Name": "instance-family", "Values": list(FAMILIES)}
        assert SECRET_KEY not in str(request.headers) + request.content.decode()
    assert len(collector.parse(fetched)) == 41
    assert fetched.notes == [
        "unknown GPU, not collected: HCCPNV4h.48XLARGE1024 (an A100 family whose GPU memory Tencent does not "
        "publish) (1 item)",
    ]


@respx.mock
def test_scopes_ask_only_for_their_charge_types(settings: Settings, keys: None) -> None:
    route = respx.post(api.ENDPOINT).mock(side_effect=recorded)
    live = from_env(settings)
    fetch(live, "spot")
    assert {charge for _, charge in calls_by(route)} == {"SPOTPAID"} and route.call_count == 3
    fetch(live, "list")
    assert {charge for _, charge in calls_by(route, since=3)} == {"POSTPAID_BY_HOUR", "PREPAID"}
    assert route.call_count == 3 + 6


@respx.mock
def test_base_url_and_regions_settings_and_the_signature_covers_the_mirror_host(
    settings: Settings, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPRICE_TENCENT_BASE_URL", "http://mirror.test:8080")
    monkeypatch.setenv("GPUPRICE_TENCENT_REGIONS", "ap-shanghai")
    route = respx.post("http://mirror.test:8080/").mock(side_effect=recorded)
    fetch(from_env(settings))
    assert calls_by(route) == {("ap-shanghai", c) for c in ("POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID")}
    for call in route.calls:
        request = call.request
        assert request.headers["Host"] == "mirror.test:8080"
        assert (
            signature_problem("POST", str(request.url), request.headers, request.content, SECRET_ID, SECRET_KEY) is None
        )


@respx.mock
def test_a_retried_call_is_signed_again(settings: Settings, keys: None) -> None:
    answers = iter([httpx.Response(503, text="busy"), None])

    def flaky(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or recorded(request)

    route = respx.post(api.ENDPOINT).mock(side_effect=flaky)
    fetch(from_env(settings, regions={"tencent": ["ap-shanghai"]}), "spot")
    first, second = (c.request for c in route.calls)
    assert route.call_count == 2 and "Authorization" in first.headers
    assert signature_problem("POST", str(second.url), second.headers, second.content, SECRET_ID, SECRET_KEY) is None


# ----- API errors come back with HTTP 200 ------------------------------------------------------
@respx.mock
def test_an_auth_failure_fails_the_run_with_a_message_about_the_keys(
    store: PriceStore, settings: Settings, keys: None
) -> None:
    refusal = fixture_bytes("tencent", "error_auth_secret_id_not_found.json")
    respx.post(api.ENDPOINT).mock(return_value=httpx.Response(200, content=refusal, headers=JSON))
    live = from_env(settings)
    summary = asyncio.run(run_provider(TencentCollector(live), TencentCollector(live).full_scope(), store, live))
    assert summary.status is RunStatus.FAILED
    assert (
        "AuthFailure.SecretIdNotFound: The SecretId is not found, please ensure that your SecretId is correct."
        in summary.error
    )
    assert "RequestId b253d23f-1ecb-460e-b794-89d1893334de" in summary.error
    assert (
        "Tencent Cloud refused the API keys: check TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY" in summary.error
    )
    assert "(and 8 more of the 9 calls failed)" in summary.error
    assert SECRET_KEY not in summary.error


@respx.mock
def test_other_api_errors_carry_code_and_message(settings: Settings, keys: None) -> None:
    error = {"Response": {"Error": {"Code": "UnauthorizedOperation", "Message": "CAM鉴权失败"}, "RequestId": "r-1"}}
    respx.post(api.ENDPOINT).mock(return_value=httpx.Response(200, json=error))
    with pytest.raises(
        FetchError,
        match=r"ap-beijing \(SPOTPAID\): UnauthorizedOperation: CAM鉴权失败 \(RequestId r-1\)\. The key's CAM",
    ):
        fetch(from_env(settings, regions={"tencent": ["ap-beijing"]}), "spot")


# ----- credentials ------------------------------------------------------------------------------
def test_without_keys_the_run_is_skipped_naming_the_settings(store: PriceStore, settings: Settings) -> None:
    summary = asyncio.run(
        run_provider(TencentCollector(settings), TencentCollector(settings).full_scope(), store, settings)
    )
    assert summary.status is RunStatus.SKIPPED
    assert summary.error == (
        "Tencent Cloud prices need an API key pair (SecretId and SecretKey not set): set TENCENTCLOUD_SECRET_ID and "
        "TENCENTCLOUD_SECRET_KEY (or GPUPRICE_TENCENT_SECRET_ID and GPUPRICE_TENCENT_SECRET_KEY)"
    )


def test_half_a_key_pair_names_the_missing_half(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", SECRET_ID)
    with pytest.raises(MissingCredentials, match=r"\(SecretKey not set\)"):
        api.credentials(Settings())


@pytest.mark.parametrize("prefix", ["TENCENTCLOUD_", "GPUPRICE_TENCENT_"])
def test_both_variable_families_are_read_and_the_key_stays_secret(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    monkeypatch.setenv(f"{prefix}SECRET_ID", SECRET_ID)
    monkeypatch.setenv(f"{prefix}SECRET_KEY", SECRET_KEY)
    settings = Settings()
    keys = api.credentials(settings)
    assert keys.secret_id == SECRET_ID and keys.secret_key.get_secret_value() == SECRET_KEY
    assert SECRET_KEY not in repr(settings) + repr(keys) + settings.model_dump_json()


# ----- offline -----------------------------------------------------------------------------------
def test_offline_replays_each_region_and_a_200_hour_job_follows_the_steps(settings: Settings) -> None:
    offline = settings.model_copy(update={"offline": True})
    store = PriceStore(offline)
    summaries = asyncio.run(collect(store, offline, ["tencent"]))
    assert [(s.provider, s.status.value, s.quotes) for s in summaries] == [("fx", "ok", 31), ("tencent", "ok", 41)]
    now = clock.now_naive()
    offers = {(o.region, o.sku, o.pricing): o for o in current_offers(store.cursor(), now).offers}
    store.close()
    assert {region for region, _, _ in offers} == {"ap-beijing", "ap-shanghai", "ap-guangzhou"}
    assert all(o.offline for o in offers.values())
    stepped = offers[("ap-beijing", "GT4.8XLARGE192", "on_demand")]
    cost = job_cost(stepped, 200, offline)
    # 96 h at ¥62.40, then 104 h at the second step's ¥31.20 (the third starts at hour 360).
    assert cost is not None and cost.billed_hours == 200
    assert cost.total_cny == pytest.approx(96 * 62.4 + 104 * 31.2)
    assert job_cost(stepped, 400, offline).total_cny == pytest.approx(96 * 62.4 + 264 * 31.2 + 40 * 21.216)
    flat = offers[("ap-shanghai", "GT4.8XLARGE192", "on_demand")]
    assert job_cost(flat, 200, offline).total_cny == pytest.approx(200 * 62.4)


def test_the_gpuprice_names_win_over_tencents_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENCENTCLOUD_SECRET_ID", "AKIDfromTencentVariables")
    monkeypatch.setenv("TENCENTCLOUD_SECRET_KEY", "tencent-variable-key")
    monkeypatch.setenv("GPUPRICE_TENCENT_SECRET_ID", "AKIDfromGpupriceVariables")
    monkeypatch.setenv("GPUPRICE_TENCENT_SECRET_KEY", "gpuprice-variable-key")
    keys = api.credentials(Settings())
    assert (keys.secret_id, keys.secret_key.get_secret_value()) == (
        "AKIDfromGpupriceVariables",
        "gpuprice-variable-key",
    )
