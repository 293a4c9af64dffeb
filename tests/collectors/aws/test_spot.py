"""AWS spot: SigV4-signed DescribeSpotPriceHistory (credentials chain, signature, base URL), nextToken
paging, latest price per zone and cheapest zone per region, EC2 error XML, and no-credentials handling."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
import respx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from collectors.aws import AwsCollector, bulk, spot
from collectors.aws.instance_types import WHOLE_GPU_TYPES
from collectors.base import Fetched, RawResponse
from collectors.errors import FetchError, MissingCredentials, ParseError
from collectors.http import Http, make_client
from collectors.replay import Replay, serve_replay
from pricedb.models import Pricing
from pricedb.settings import Settings
from tests.collectors.aws.test_price_list import EXPECTED as LIST_OFFERS
from tests.conftest import FIXTURES, OBSERVED, fixture_bytes

KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<day>\d{8})/(?P<region>[a-z0-9-]+)/ec2/aws4_request, "
    r"SignedHeaders=(?P<headers>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})$"
)
EAST = spot.endpoint("us-east-1")
XML = {"content-type": "text/xml;charset=UTF-8"}


def run(coro):
    return asyncio.run(coro)


def page(region: str, number: int) -> bytes:
    return fixture_bytes("aws", f"spot_{region}_page{number}.xml")


def form(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(request.content.decode())


def east_pages(request: httpx.Request) -> httpx.Response:
    """EC2 as it pages: page 1 without NextToken, page 2 for the token page 1 returned."""
    number = 2 if "NextToken" in form(request) else 1
    return httpx.Response(200, content=page("us-east-1", number), headers=XML)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)


def east_only(settings: Settings, **update) -> Settings:
    return settings.model_copy(update={"regions": {"aws": ["us-east-1"]}, **update})


async def _fetch(settings: Settings, scope: str | None = "spot", workdir: Path | None = None) -> Fetched:
    collector = AwsCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "aws", settings, workdir=workdir)
        return await collector.fetch(http, collector.scope(scope) if scope else collector.full_scope())


def verify_signature(request: httpx.Request, key: str = KEY, secret: str = SECRET) -> re.Match:
    """Recompute the SigV4 signature from what was actually sent (method, URL, Host, body, date)."""
    auth = AUTH.match(request.headers["Authorization"])
    assert auth, request.headers["Authorization"]
    amz_date = request.headers["X-Amz-Date"]
    signed = auth["headers"].split(";")
    headers = {name: request.headers[name] for name in signed}
    aws = AWSRequest(method=request.method, url=str(request.url), data=request.content, headers=headers)
    aws.context["timestamp"] = amz_date
    signer = SigV4Auth(ReadOnlyCredentials(key, secret, None), "ec2", auth["region"])
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    assert auth["signature"] == expected
    assert auth["day"] == amz_date[:8]
    return auth


# ----- signing and paging ----------------------------------------------------------------------
@respx.mock
def test_spot_requests_are_sigv4_signed_with_the_env_credentials(settings: Settings, keys: None) -> None:
    route = respx.post(EAST).mock(side_effect=east_pages)
    run(_fetch(east_only(settings)))
    assert route.call_count == 2
    for call in route.calls:
        request = call.request
        auth = verify_signature(request)
        assert (auth["key"], auth["region"]) == (KEY, "us-east-1")
        assert {"host", "x-amz-date", "content-type"} <= set(auth["headers"].split(";"))
        assert re.fullmatch(r"\d{8}T\d{6}Z", request.headers["X-Amz-Date"])
        assert "X-Amz-Security-Token" not in request.headers
        assert SECRET not in str(request.headers) and SECRET not in request.content.decode()


@respx.mock
def test_a_session_token_is_sent(settings: Settings, keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLETOKEN")
    route = respx.post(EAST).mock(side_effect=east_pages)
    run(_fetch(east_only(settings)))
    assert route.calls.last.request.headers["X-Amz-Security-Token"] == "FwoGZXIvYXdzEXAMPLETOKEN"
    assert "x-amz-security-token" in AUTH.match(route.calls.last.request.headers["Authorization"])["headers"]


@respx.mock
def test_the_query_and_next_token_paging(settings: Settings, keys: None) -> None:
    route = respx.post(EAST).mock(side_effect=east_pages)
    fetched = run(_fetch(east_only(settings)))
    first, second = (form(call.request) for call in route.calls)
    assert first["Action"] == ["DescribeSpotPriceHistory"] and first["Version"] == ["2016-11-15"]
    assert first["ProductDescription.1"] == ["Linux/UNIX"] and first["MaxResults"] == ["1000"]
    asked = [first[f"InstanceType.{n}"][0] for n in range(1, len(WHOLE_GPU_TYPES) + 1)]
    assert asked == sorted(WHOLE_GPU_TYPES) and f"InstanceType.{len(asked) + 1}" not in first
    assert {"p4d.24xlarge", "p5.48xlarge", "g6e.xlarge", "g4dn.xlarge"} <= set(asked)
    assert not {"g6f.large", "gr6f.4xlarge"} & set(asked)  # fractional types are not asked for
    assert (first["Filter.1.Name"], first["Filter.1.Value.1"]) == (["availability-zone"], ["us-east-1*"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", first["StartTime"][0])
    assert "NextToken" not in first
    token = re.search(rb"<nextToken>([^<]+)</nextToken>", page("us-east-1", 1))[1].decode()
    assert second["NextToken"] == [token] and second["StartTime"] == first["StartTime"]
    assert route.calls[0].request.headers["content-type"].startswith("application/x-www-form-urlencoded")
    assert [r.label for r in fetched.responses] == ["spot:us-east-1:1", "spot:us-east-1:2"]


@respx.mock
def test_cheapest_zone_of_the_latest_prices_is_chosen(settings: Settings, keys: None) -> None:
    respx.post(EAST).mock(side_effect=east_pages)
    quotes = AwsCollector(settings).parse(run(_fetch(east_only(settings))))
    by_sku = {q.sku: q for q in quotes}
    assert set(by_sku) == {"p4d.24xlarge", "p4de.24xlarge"} and all(q.pricing is Pricing.SPOT for q in quotes)
    p4d, p4de = by_sku["p4d.24xlarge"], by_sku["p4de.24xlarge"]
    # p4d: zones 2.4655 / 8.1915 / 8.1203 / 7.8799; the older 2.0123 in us-east-1a is not the latest.
    assert p4d.price == 2.4655 and p4d.notes == "cheapest of 4 zones: us-east-1d (use1-az1)"
    assert p4de.price == 8.6505 and p4de.notes == "cheapest of 2 zones: us-east-1c (use1-az6)"
    assert (p4d.gpu_memory_gb, p4de.gpu_memory_gb, p4d.gpu_count) == (40.0, 80.0, 8)
    assert (p4d.billing_increment_s, p4d.billing_minimum_s) == (1, 60)
    assert p4d.source_url == "https://ec2.us-east-1.amazonaws.com/?Action=DescribeSpotPriceHistory"


@respx.mock
def test_base_url_rewrites_spot_and_the_signature_covers_the_mirror_host(
    settings: Settings, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUPRICE_AWS_BASE_URL", "http://mirror.test:8080")
    monkeypatch.setenv("GPUPRICE_AWS_REGIONS", "us-east-1")
    route = respx.post("http://mirror.test:8080/").mock(side_effect=east_pages)
    fetched = run(_fetch(Settings(retry_base_delay_s=0, retry_max_delay_s=0)))
    assert route.call_count == 2 and fetched.responses[0].url == EAST
    request = route.calls.last.request
    assert request.headers["host"] == "mirror.test:8080"
    verify_signature(request)


@respx.mock
def test_each_retry_is_signed_afresh(settings: Settings, keys: None) -> None:
    route = respx.post(EAST).mock(
        side_effect=[httpx.Response(503), httpx.Response(200, content=page("us-west-2", 1), headers=XML)]
    )
    run(_fetch(east_only(settings)))
    assert route.call_count == 2
    for call in route.calls:
        verify_signature(call.request)


def test_gpuprice_prefixed_keys_are_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPRICE_AWS_ACCESS_KEY_ID", "AKIDGPUPRICE")
    monkeypatch.setenv("GPUPRICE_AWS_SECRET_ACCESS_KEY", "s3cret")
    credentials, source = spot.resolve_credentials(Settings())
    assert credentials.access_key == "AKIDGPUPRICE" and source == "GPUPRICE_AWS_* settings"


def test_a_missing_profile_means_no_spot_with_the_reason(settings: Settings) -> None:
    credentials, why = spot.resolve_credentials(settings.model_copy(update={"aws_profile": "nope"}))
    assert credentials is None and "'nope' not found" in why


def test_offline_uses_placeholder_credentials_even_when_real_ones_exist(settings: Settings, keys: None) -> None:
    credentials, _ = spot.resolve_credentials(settings.model_copy(update={"offline": True}))
    assert credentials == spot.OFFLINE_CREDENTIALS and credentials.access_key != KEY


# ----- no credentials --------------------------------------------------------------------------
@respx.mock
def test_without_credentials_spot_is_not_covered_and_list_prices_still_parse(
    settings: Settings, tmp_path: Path
) -> None:
    respx.get(bulk.price_list_url("us-east-1")).mock(
        return_value=httpx.Response(200, content=fixture_bytes("aws", "price_list_us-east-1.csv"))
    )
    spot_route = respx.post(EAST)
    fetched = run(_fetch(east_only(settings), scope=None, workdir=tmp_path))
    assert fetched.not_covered == {Pricing.SPOT: spot.NO_CREDENTIALS}
    assert spot_route.call_count == 0
    quotes = AwsCollector(settings).parse(fetched)
    assert {q.pricing for q in quotes} == {Pricing.ON_DEMAND, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y}
    assert len(quotes) == len([k for k in LIST_OFFERS if k[0] == "us-east-1"])


@respx.mock
def test_a_spot_only_run_without_credentials_is_skipped(settings: Settings) -> None:
    with pytest.raises(MissingCredentials, match="no AWS credentials found"):
        run(_fetch(east_only(settings)))


# ----- EC2 errors ------------------------------------------------------------------------------
def auth_failure(request: httpx.Request) -> httpx.Response:
    return httpx.Response(401, content=fixture_bytes("aws", "spot_error_auth_failure.xml"), headers=XML)


@respx.mock
def test_ec2_error_xml_becomes_a_fetch_error_with_code_and_message(settings: Settings, keys: None) -> None:
    route = respx.post(EAST).mock(side_effect=auth_failure)
    with pytest.raises(FetchError) as caught:
        run(_fetch(east_only(settings)))
    assert str(caught.value) == (
        "EC2 DescribeSpotPriceHistory in us-east-1: AuthFailure: "
        "AWS was not able to validate the provided access credentials"
    )
    assert isinstance(caught.value.__cause__, FetchError) and "HTTP 401" in str(caught.value.__cause__)
    assert route.call_count == 1  # a 4xx is not retried


@respx.mock
def test_spot_errors_do_not_cost_the_list_prices(settings: Settings, keys: None, tmp_path: Path) -> None:
    respx.get(bulk.price_list_url("us-east-1")).mock(
        return_value=httpx.Response(200, content=fixture_bytes("aws", "price_list_us-east-1.csv"))
    )
    respx.post(EAST).mock(side_effect=auth_failure)
    fetched = run(_fetch(east_only(settings), scope=None, workdir=tmp_path))
    assert "AuthFailure" in fetched.not_covered[Pricing.SPOT]
    assert len(AwsCollector(settings).parse(fetched)) == len([k for k in LIST_OFFERS if k[0] == "us-east-1"])


@respx.mock
def test_one_failing_region_is_noted_and_the_others_kept(settings: Settings, keys: None) -> None:
    respx.post(EAST).mock(side_effect=east_pages)
    respx.post(spot.endpoint("us-west-2")).mock(return_value=httpx.Response(503))
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1", "us-west-2"]}})
    fetched = run(_fetch(settings))
    assert len(fetched.notes) == 1 and fetched.notes[0].startswith("spot prices for us-west-2 not collected")
    assert {q.region for q in AwsCollector(settings).parse(fetched)} == {"us-east-1"}


@respx.mock
def test_every_region_failing_fails_a_spot_run(settings: Settings, keys: None) -> None:
    respx.post(EAST).mock(return_value=httpx.Response(503))
    respx.post(spot.endpoint("us-west-2")).mock(side_effect=auth_failure)
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1", "us-west-2"]}})
    with pytest.raises(FetchError, match=r"us-east-1: HTTP 503.*us-west-2: .*AuthFailure"):
        run(_fetch(settings))


@respx.mock
def test_a_region_answering_no_prices_at_all_is_noted(settings: Settings, keys: None) -> None:
    empty = re.sub(rb"<item>.*</item>", b"", page("us-west-2", 1), flags=re.DOTALL)
    respx.post(EAST).mock(return_value=httpx.Response(200, content=empty, headers=XML))
    fetched = run(_fetch(east_only(settings)))
    assert fetched.notes == ["DescribeSpotPriceHistory returned no spot prices for us-east-1"]
    assert AwsCollector(settings).parse(fetched) == []


@respx.mock
def test_a_repeating_next_token_stops_with_an_error(settings: Settings, keys: None) -> None:
    respx.post(EAST).mock(return_value=httpx.Response(200, content=page("us-east-1", 1), headers=XML))
    with pytest.raises(FetchError, match="nextToken repeats"):
        run(_fetch(east_only(settings)))


# ----- parse -----------------------------------------------------------------------------------
def raw_page(body: bytes, label: str = "spot:us-east-1:1") -> RawResponse:
    return RawResponse(url=EAST, fetched_at=OBSERVED, body=body, label=label)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "not XML"),
        (b"<html><body>Service Unavailable</body></html>", "expected DescribeSpotPriceHistoryResponse"),
        (fixture_bytes("aws", "spot_error_auth_failure.xml"), "AuthFailure: AWS was not able"),
        (
            b'<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"/>',
            "spotPriceHistorySet",
        ),
        (page("us-east-1", 1).replace(b"8.191500", b"N/A"), "bad spotPrice 'N/A'"),
        (page("us-east-1", 1).replace(b"2025-09-12T19:02:11.000Z", b"yesterday"), "bad timestamp"),
        (page("us-east-1", 1).replace(b"<availabilityZone>us-east-1a", b"<availabilityZone>eu-west-1a"), "eu-west-1a"),
    ],
    ids=["empty", "html", "error-xml", "no-set", "price", "timestamp", "foreign-zone"],
)
def test_broken_spot_answers_are_parse_errors(body: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        spot.parse_spot([raw_page(body)], AwsCollector.quote)


def test_a_spot_page_needs_its_region_label() -> None:
    with pytest.raises(ParseError, match="labelled"):
        spot.parse_spot([raw_page(page("us-east-1", 1), label="spot")], AwsCollector.quote)


def test_other_products_and_unknown_instance_types_are_ignored_and_fractional_ones_are_slices() -> None:
    body = page("us-west-2", 1).replace(b"<instanceType>p4de.24xlarge", b"<instanceType>g6f.large")
    windows = page("us-west-2", 1).replace(b"Linux/UNIX", b"Windows")
    unknown = page("us-west-2", 1).replace(b"<instanceType>p4d.24xlarge", b"<instanceType>p6-b300.48xlarge")
    skipped: Counter[str] = Counter()
    quotes = spot.parse_spot(
        [
            raw_page(body, "spot:us-west-2:1"),
            raw_page(windows, "spot:us-west-2:2"),
            raw_page(unknown, "spot:us-west-2:3"),
        ],
        AwsCollector.quote,
        skipped,
    )
    assert [(q.sku, q.price, q.notes, q.gpu_fraction) for q in quotes] == [
        ("g6f.large", 10.9991, "only zone: us-west-2b (usw2-az1)", 0.125),  # a slice, never a whole L4
        ("p4d.24xlarge", 7.9992, "only zone: us-west-2b (usw2-az1)", None),
        ("p4de.24xlarge", 10.9991, "only zone: us-west-2b (usw2-az1)", None),
    ]
    assert set(skipped) == {"p6-b300.48xlarge: GPU family 'p6-b300' not in the table (card unknown)"}


def test_every_gpu_family_gets_its_cards_from_the_table() -> None:
    """A spot answer for other families: each quote carries its family's card and GPUs per size."""
    body = (
        page("us-west-2", 1)
        .replace(b"<instanceType>p4d.24xlarge", b"<instanceType>g6e.12xlarge")
        .replace(b"<instanceType>p4de.24xlarge", b"<instanceType>p5.4xlarge")
    )
    quotes = {q.sku: q for q in spot.parse_spot([raw_page(body, "spot:us-west-2:1")], AwsCollector.quote)}
    cards = {sku: (q.gpu_model, q.gpu_memory_gb, q.gpu_count, q.form_factor) for sku, q in quotes.items()}
    assert cards == {"g6e.12xlarge": ("L40S", 48.0, 4, "PCIe"), "p5.4xlarge": ("H100", 80.0, 1, "SXM5")}


@respx.mock
def test_more_instance_types_than_one_batch_are_asked_for_in_several_requests(
    settings: Settings, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spot, "BATCH", 30)
    route = respx.post(EAST).mock(return_value=httpx.Response(200, content=page("us-west-2", 1), headers=XML))
    fetched = run(_fetch(east_only(settings)))
    asked = [form(call.request) for call in route.calls]
    per_request = [[v[0] for k, v in sorted(f.items()) if k.startswith("InstanceType.")] for f in asked]
    assert len(asked) == -(-len(WHOLE_GPU_TYPES) // 30) and all(len(types) <= 30 for types in per_request)
    assert sorted(t for types in per_request for t in types) == sorted(WHOLE_GPU_TYPES)
    assert [r.label for r in fetched.responses] == [f"spot:us-east-1:{n}" for n in range(1, len(asked) + 1)]


def test_zone_ids_alone_are_enough() -> None:
    """Answers that carry only availabilityZoneId (no zone name) still give a quote naming the id."""
    body = re.sub(rb"\s*<availabilityZone>[^<]*</availabilityZone>", b"", page("us-west-2", 1))
    quotes = spot.parse_spot([raw_page(body, "spot:us-west-2:1")], AwsCollector.quote)
    assert {q.notes for q in quotes} == {"only zone: usw2-az1"}


def test_ec2_error_reads_code_and_message_from_a_truncated_snippet() -> None:
    snippet = (
        '<?xml version="1.0"?> <Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not au…'
    )
    assert spot.ec2_error(snippet) == ("UnauthorizedOperation", "You are not au")
    assert spot.ec2_error("<html>Bad Gateway</html>") is None


# ----- offline: the signed path against the replayed fixtures -----------------------------------
def test_replay_manifest_matches_the_requests_the_collector_sends() -> None:
    replay = Replay.load(FIXTURES, "aws")
    (batch,) = spot.batches()
    for region in ("us-east-1", "us-west-2", "eu-central-1", "ap-northeast-1"):
        body = spot.request_body(region, OBSERVED, batch).encode()
        route = replay.find("POST", spot.endpoint(region), body)
        assert route is not None and route.file.name == f"spot_{region}_page1.xml"
    token = re.search(rb"<nextToken>([^<]+)</nextToken>", page("us-east-1", 1))[1].decode()
    second = replay.find("POST", EAST, spot.request_body("us-east-1", OBSERVED, batch, token).encode())
    assert second is not None and second.file.name == "spot_us-east-1_page2.xml"


def test_a_local_replay_server_behind_the_base_url_gets_signed_requests(
    settings: Settings, keys: None, tmp_path: Path
) -> None:
    with serve_replay([Replay.load(FIXTURES, "aws")]) as server:
        local = settings.model_copy(update={"base_urls": {"aws": server.url}})
        fetched = run(_fetch(local, scope=None, workdir=tmp_path))
        seen = list(server.requests)
    quotes = AwsCollector(local).parse(fetched)
    assert fetched.not_covered == {} and {q.pricing for q in quotes} == set(Pricing) - {Pricing.MONTHLY}
    assert len([q for q in quotes if q.pricing is Pricing.SPOT]) == 8
    posts = [headers for method, _, headers, _ in seen if method == "POST"]
    # Spot: us-east-1 twice (two pages), the other three regions once; zones (collectors.aws.zones):
    # one DescribeAvailabilityZones per region, DescribeInstanceTypeOfferings twice for us-east-1.
    assert len(posts) == 5 + 4 + 5
    for headers in posts:
        auth = AUTH.match(headers["Authorization"])
        assert auth and auth["key"] == KEY and "host" in auth["headers"].split(";")
