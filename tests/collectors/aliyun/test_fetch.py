"""Alibaba Cloud fetch: the calls made (signed, paged, per region and scope, through the base URL),
API errors with their Code and Message, and a run without keys recorded as skipped."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.aliyun import AliyunCollector
from collectors.base import Fetched
from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.replay import Replay
from collectors.runner import run_provider
from pricedb.models import Pricing
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import FIXTURES, fixture_bytes
from tests.support.aliyun_server import AUTHORIZATION

KEY, SECRET = "LTAI5tTESTKEYEXAMPLE01", "TestSecretExampleDoNotUse0123456789"
REPLAY = Replay.load(FIXTURES, "aliyun")
ACTIONS = {r["file"]: r["action"] for r in json.loads((FIXTURES / "aliyun" / "replay.json").read_text())["routes"]}


@pytest.fixture
def keyed(settings: Settings) -> Settings:
    """Settings with an AccessKey pair (as ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET would give)."""
    return settings.model_copy(
        update={"aliyun_access_key_id": SecretStr(KEY), "aliyun_access_key_secret": SecretStr(SECRET)}
    )


def answer_from_fixtures(request: httpx.Request) -> httpx.Response:
    """The recorded answer for this query, if the request is signed for the right action."""
    route = REPLAY.find(request.method, str(request.url))
    if route is None:
        return httpx.Response(404, json={"Code": "InvalidParameter", "Message": f"unexpected {request.url}"})
    assert request.headers["x-acs-action"] == ACTIONS[route.file.name]
    assert AUTHORIZATION.match(request.headers["Authorization"])["key"] == KEY
    return httpx.Response(200, content=route.file.read_bytes(), headers={"content-type": "application/json"})


async def _fetch(settings: Settings, scope: str | None) -> Fetched:
    collector = AliyunCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "aliyun", settings)
        return await collector.fetch(http, collector.scope(scope) if scope else collector.full_scope())


def queries(route: respx.Route) -> list[tuple[str, dict[str, str]]]:
    return [(c.request.headers["x-acs-action"], dict(parse_qsl(c.request.url.query.decode()))) for c in route.calls]


@respx.mock
def test_the_list_scope_asks_types_stock_and_hourly_and_monthly_prices(keyed: Settings) -> None:
    route = respx.get(url__regex=r"^https://ecs\.cn-[a-z]+\.aliyuncs\.com/").mock(side_effect=answer_from_fixtures)
    fetched = asyncio.run(_fetch(keyed, "list"))
    asked = queries(route)
    types = [q for action, q in asked if action == "DescribeInstanceTypes"]
    assert types == [
        {"MinimumGPUAmount": "1", "MaxResults": "100"},
        {"MinimumGPUAmount": "1", "MaxResults": "100", "NextToken": "e71d8a535bcc11ed9a2e00163e0c8d1f"},
    ]
    stock = sorted((q["RegionId"], q["InstanceChargeType"]) for a, q in asked if a == "DescribeAvailableResource")
    assert stock == [(r, c) for r in ("cn-beijing", "cn-hangzhou", "cn-shanghai") for c in ("PostPaid", "PrePaid")]
    prices = [q for action, q in asked if action == "DescribePrice"]
    assert {q["PriceUnit"] for q in prices} == {"Hour", "Month"} and all(q["Period"] == "1" for q in prices)
    assert all("SpotStrategy" not in q and q["ResourceType"] == "instance" for q in prices)
    # beijing 12 hourly + 7 monthly, hangzhou 3 + 3, shanghai 2 + 1: every known GPU type listed
    assert len(prices) == 28
    hosts = {c.request.url.host for c in route.calls if c.request.headers["x-acs-action"] == "DescribePrice"}
    assert hosts == {f"ecs.{region}.aliyuncs.com" for region in ("cn-beijing", "cn-hangzhou", "cn-shanghai")}
    quotes = AliyunCollector(keyed).parse(fetched)
    assert {q.pricing for q in quotes} == {Pricing.ON_DEMAND, Pricing.MONTHLY} and len(quotes) == 28


@respx.mock
def test_the_spot_scope_prices_the_zones_with_stock(keyed: Settings) -> None:
    route = respx.get(url__regex=r"^https://ecs\.").mock(side_effect=answer_from_fixtures)
    fetched = asyncio.run(_fetch(keyed.model_copy(update={"regions": {"aliyun": ["cn-beijing"]}}), "spot"))
    asked = queries(route)
    stock = [q for a, q in asked if a == "DescribeAvailableResource"]
    assert stock == [
        {"RegionId": "cn-beijing", "DestinationResource": "InstanceType", "InstanceChargeType": "PostPaid",
         "SpotStrategy": "SpotAsPriceGo"}
    ]  # fmt: skip
    zones = sorted((q["InstanceType"], q["ZoneId"]) for a, q in asked if a == "DescribePrice")
    assert zones == [
        ("ecs.gn6i-c4g1.xlarge", "cn-beijing-i"),  # -l lists it without stock: not asked
        ("ecs.gn7-c12g1.3xlarge", "cn-beijing-i"),  # no zone has stock: the one listed, for a sold-out price
        ("ecs.gn7e-c16g1.4xlarge", "cn-beijing-i"),  # -l lists it without stock: not asked
    ]
    assert all(
        q["SpotStrategy"] == "SpotAsPriceGo" and q["PriceUnit"] == "Hour" for a, q in asked if a == "DescribePrice"
    )
    assert {q.sku: q.price for q in AliyunCollector(keyed).parse(fetched)} == {
        "ecs.gn6i-c4g1.xlarge": 1.48,
        "ecs.gn7-c12g1.3xlarge": 5.428,
        "ecs.gn7e-c16g1.4xlarge": 6.948,
    }


@respx.mock
def test_the_base_url_carries_every_call_and_the_signature_covers_its_host(keyed: Settings) -> None:
    route = respx.get(url__startswith="http://127.0.0.1:9321/").mock(side_effect=answer_from_fixtures)
    local = keyed.model_copy(update={"base_urls": {"aliyun": "http://127.0.0.1:9321"}})
    asyncio.run(_fetch(local, "list"))
    assert route.call_count == 2 + 6 + 28  # type pages, stock, prices
    for call in route.calls:
        assert call.request.headers["host"] == "127.0.0.1:9321"
        assert "host" in AUTHORIZATION.match(call.request.headers["Authorization"])["signed"].split(";")


# ----- errors ------------------------------------------------------------------------------------
@respx.mock
@pytest.mark.parametrize(
    ("status", "fixture", "expected"),
    [
        (403, "error_forbidden_ram.json", "DescribeInstanceTypes in cn-beijing: Forbidden.RAM: User not authorized"),
        (404, "error_invalid_access_key.json", "InvalidAccessKeyId.NotFound: Specified access key is not found."),
        # Recommend first, Code last, after a long Message: read from the whole body, not a snippet.
        (400, "error_signature_does_not_match.json", "SignatureDoesNotMatch: Specified signature is not matched"),
    ],
)
def test_api_errors_fail_with_their_code_and_message(keyed: Settings, status: int, fixture: str, expected: str) -> None:
    respx.get(url__regex=r"^https://ecs\.").mock(
        return_value=httpx.Response(status, content=fixture_bytes("aliyun", fixture))
    )
    with pytest.raises(FetchError) as caught:
        asyncio.run(_fetch(keyed, "list"))
    assert expected in str(caught.value)
    assert SECRET not in str(caught.value)


@respx.mock
def test_a_forbidden_price_inquiry_says_how_to_enable_it(keyed: Settings) -> None:
    def forbid_prices(request: httpx.Request) -> httpx.Response:
        if request.headers["x-acs-action"] == "DescribePrice":
            return httpx.Response(403, content=fixture_bytes("aliyun", "error_forbidden_ram.json"))
        return answer_from_fixtures(request)

    respx.get(url__regex=r"^https://ecs\.").mock(side_effect=forbid_prices)
    with pytest.raises(FetchError) as caught:
        asyncio.run(_fetch(keyed.model_copy(update={"regions": {"aliyun": ["cn-hangzhou"]}}), "list"))
    message = str(caught.value)
    assert message.startswith("Alibaba Cloud DescribePrice in cn-hangzhou: Forbidden.RAM")
    assert "ecs:DescribePrice" in message and "询价" in message


@respx.mock
def test_invalid_action_explains_price_inquiry(keyed: Settings) -> None:
    error = {
        "RequestId": "R",
        "HostId": "ecs.cn-beijing.aliyuncs.com",
        "Code": "InvalidAction",
        "Message": "Specified action is not valid.",
    }
    respx.get(url__regex=r"^https://ecs\.").mock(return_value=httpx.Response(400, json=error))
    with pytest.raises(
        FetchError, match=r"InvalidAction: Specified action is not valid\. \(.*price inquiry \(询价\) is not enabled"
    ):
        asyncio.run(_fetch(keyed, "list"))


@respx.mock
def test_server_errors_are_retried_then_fail(keyed: Settings) -> None:
    route = respx.get(url__regex=r"^https://ecs\.").mock(return_value=httpx.Response(503, text="busy"))
    with pytest.raises(FetchError, match="503"):
        asyncio.run(_fetch(keyed.model_copy(update={"retry_attempts": 2}), "list"))
    assert route.call_count == 2
    nonces = {c.request.headers["x-acs-signature-nonce"] for c in route.calls}
    assert len(nonces) == 2  # each attempt is signed afresh


@respx.mock
def test_paging_that_repeats_its_token_is_refused(keyed: Settings) -> None:
    page = json.loads(fixture_bytes("aliyun", "instance_types_page1.json"))
    respx.get(url__regex=r"^https://ecs\.").mock(return_value=httpx.Response(200, json=page))
    with pytest.raises(FetchError, match=r"NextToken .* repeats"):
        asyncio.run(_fetch(keyed, "list"))


# ----- without keys ------------------------------------------------------------------------------
@respx.mock
def test_without_keys_the_run_is_skipped_and_nothing_is_asked(settings: Settings) -> None:
    route = respx.get(url__regex=r"^https://ecs\.").mock(side_effect=answer_from_fixtures)
    store = PriceStore(settings)
    collector = AliyunCollector(settings)
    summary = asyncio.run(run_provider(collector, collector.scope("list"), store, settings))
    store.close()
    assert summary.status.value == "skipped" and summary.quotes == 0
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID" in (summary.error or "")
    assert route.call_count == 0


def test_source_urls_are_https_and_name_the_endpoint() -> None:
    assert AliyunCollector.source_urls == ("https://ecs.{region}.aliyuncs.com/",)
    assert urlsplit(AliyunCollector.source_urls[0]).scheme == "https"
