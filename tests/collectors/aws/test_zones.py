"""AWS zones: DescribeAvailabilityZones then DescribeInstanceTypeOfferings per region (signed, paged),
zone IDs kept per (region, instance type), errors and missing credentials only noted, and the store
replacing a region's zones with each survey."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx
import pytest
import respx

from collectors.aws import zones
from collectors.aws.instance_types import GPU_TYPES
from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http, make_client
from pricedb.models import InstanceZone, RunStatus
from pricedb.queries import instance_zones
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.collectors.aws.test_spot import EAST, XML, _fetch, auth_failure, east_only, keys, run, verify_signature
from tests.conftest import OBSERVED, fixture_bytes
from tests.helpers import make_quote, make_run

__all__ = ["keys"]  # the fixture, imported for the tests below


def ec2(request: httpx.Request) -> httpx.Response:
    """EC2 in us-east-1: its zones, then the offerings over two pages."""
    form = parse_qs(request.content.decode())
    if form["Action"] == ["DescribeAvailabilityZones"]:
        name = "zones_us-east-1.xml"
    else:
        name = f"offerings_us-east-1_page{2 if 'NextToken' in form else 1}.xml"
    return httpx.Response(200, content=fixture_bytes("aws", name), headers=XML)


def recorded(name: str) -> set[tuple[str, str]]:
    """(instance type, zone ID) of every item of a recorded offerings page, read without the collector."""
    found = re.findall(r"<instanceType>([^<]+)</instanceType>\s*<locationType>[^<]+</locationType>\s*"
                       r"<location>([^<]+)</location>", fixture_bytes("aws", name).decode())  # fmt: skip
    return set(found)


# Every item of both us-east-1 pages: 23 GPU types in 94 (type, zone) rows (fixtures/README.md ## aws).
EAST_ZONES = recorded("offerings_us-east-1_page1.xml") | recorded("offerings_us-east-1_page2.xml")


@respx.mock
def test_zone_ids_of_every_page_are_collected_with_the_list_prices(
    settings: Settings, keys: None, tmp_path: Path
) -> None:
    respx.get(url__regex=r"/index\.csv$").mock(
        return_value=httpx.Response(200, content=fixture_bytes("aws", "price_list_us-east-1.csv"))
    )
    route = respx.post(EAST).mock(side_effect=ec2)
    fetched = run(_fetch(east_only(settings), scope="list", workdir=tmp_path))
    assert {(z.sku, z.zone) for z in fetched.zones["us-east-1"]} == EAST_ZONES
    assert len(EAST_ZONES) == len(fetched.zones["us-east-1"]) == 94 and len({t for t, _ in EAST_ZONES}) == 23
    assert {("p6-b200.48xlarge", "use1-az6"), ("p3dn.24xlarge", "use1-az1"), ("g6f.large", "use1-az4")} <= EAST_ZONES
    assert {z.region for z in fetched.zones["us-east-1"]} == {"us-east-1"}
    forms = [parse_qs(call.request.content.decode()) for call in route.calls]
    assert [f["Action"][0] for f in forms] == ["DescribeAvailabilityZones"] + ["DescribeInstanceTypeOfferings"] * 2
    assert forms[0]["Filter.1.Value.1"] == ["us-east-1"] and forms[0]["Filter.2.Value.1"] == ["availability-zone"]
    offerings = forms[1]
    assert offerings["LocationType"] == ["availability-zone-id"] and offerings["MaxResults"] == ["1000"]
    assert [offerings["Filter.1.Name"], offerings["Filter.2.Name"]] == [["instance-type"], ["location"]]
    asked = [offerings[f"Filter.1.Value.{n}"][0] for n in range(1, len(GPU_TYPES) + 1)]
    assert asked == sorted(GPU_TYPES) and {"p4d.24xlarge", "g6f.large", "p5.48xlarge"} <= set(asked)
    assert sorted(v[0] for k, v in offerings.items() if k.startswith("Filter.2.Value.")) == [
        f"use1-az{n}" for n in range(1, 7)
    ]
    assert "NextToken" not in offerings and forms[2]["NextToken"][0].startswith("AAEAA")
    for call in route.calls:
        assert verify_signature(call.request)["region"] == "us-east-1"


@respx.mock
def test_without_credentials_zones_are_only_noted(settings: Settings, tmp_path: Path) -> None:
    respx.get(url__regex=r"/index\.csv$").mock(
        return_value=httpx.Response(200, content=fixture_bytes("aws", "price_list_us-east-1.csv"))
    )
    route = respx.post(EAST)
    fetched = run(_fetch(east_only(settings), scope="list", workdir=tmp_path))
    assert route.call_count == 0 and fetched.zones == {}
    assert any("availability zones not collected" in note and "no AWS credentials" in note for note in fetched.notes)


@respx.mock
def test_an_ec2_error_costs_the_zones_of_that_region_only(settings: Settings, keys: None, tmp_path: Path) -> None:
    respx.get(url__regex=r"/index\.csv$").mock(
        return_value=httpx.Response(200, content=fixture_bytes("aws", "price_list_us-east-1.csv"))
    )
    respx.post(EAST).mock(side_effect=auth_failure)
    fetched = run(_fetch(east_only(settings), scope="list", workdir=tmp_path))
    assert fetched.zones == {}
    assert any(
        "availability zones for us-east-1 not collected: EC2 DescribeAvailabilityZones in us-east-1: AuthFailure" in n
        for n in fetched.notes
    )


@respx.mock
def test_a_repeating_next_token_stops(settings: Settings) -> None:
    def always_page_one(request: httpx.Request) -> httpx.Response:
        form = parse_qs(request.content.decode())
        zones_asked = form["Action"] == ["DescribeAvailabilityZones"]
        name = "zones_us-east-1.xml" if zones_asked else "offerings_us-east-1_page1.xml"
        return httpx.Response(200, content=fixture_bytes("aws", name), headers=XML)

    respx.post(EAST).mock(side_effect=always_page_one)

    async def fetch() -> None:
        async with make_client(settings) as client:
            await zones.fetch_region(Http(client, "aws", settings), "us-east-1", _credentials(), ["p4d.24xlarge"])

    with pytest.raises(FetchError, match="nextToken repeats"):
        run(fetch())


def _credentials():
    from botocore.credentials import ReadOnlyCredentials

    return ReadOnlyCredentials("AKIDEXAMPLE", "secret", None)


def raw(body: bytes) -> RawResponse:
    return RawResponse(url=EAST, fetched_at=OBSERVED, status=200, content_type="text/xml", body=body, label="zones")


def test_a_zone_outside_the_region_or_a_foreign_answer_is_refused() -> None:
    page = fixture_bytes("aws", "offerings_us-west-2_page1.xml")
    with pytest.raises(ParseError, match="usw2-az1 is not one of us-east-1's zones"):
        zones.parse_offerings(raw(page), "us-east-1", ["use1-az1"])
    with pytest.raises(ParseError, match="answered for region us-east-1"):
        zones.parse_zone_ids(raw(fixture_bytes("aws", "zones_us-west-2.xml")), "us-east-1")
    with pytest.raises(ParseError, match="expected DescribeInstanceTypeOfferingsResponse"):
        zones.parse_offerings(raw(fixture_bytes("aws", "zones_us-east-1.xml")), "us-east-1", ["use1-az1"])
    last = zones.parse_offerings(raw(page), "us-west-2", [f"usw2-az{n}" for n in range(1, 5)])
    assert last.next_token is None and len(last.offerings) == 27
    assert last.offerings[:2] == [
        InstanceZone("us-west-2", "g4ad.xlarge", "usw2-az1"),
        InstanceZone("us-west-2", "g4ad.xlarge", "usw2-az2"),
    ]
    assert InstanceZone("us-west-2", "p4d.24xlarge", "usw2-az4") in last.offerings


def test_each_survey_replaces_its_regions_zones_and_keeps_the_others(store: PriceStore) -> None:
    east = [InstanceZone("us-east-1", "p4d.24xlarge", z) for z in ("use1-az1", "use1-az2")]
    west = [InstanceZone("us-west-2", "p4d.24xlarge", "usw2-az1")]
    store.record_run(make_run("aws", [make_quote()], zones={"us-east-1": east, "us-west-2": west}))
    later = OBSERVED + timedelta(days=1)
    store.record_run(make_run("aws", [make_quote()], finished_at=later, zones={"us-east-1": east[:1]}))
    store.record_run(make_run("aws", [], status=RunStatus.FAILED, zones={"us-west-2": []}))  # failed: ignored
    assert instance_zones(store.cursor(), "aws") == {
        ("us-east-1", "p4d.24xlarge"): ["use1-az1"],
        ("us-west-2", "p4d.24xlarge"): ["usw2-az1"],
    }
    assert instance_zones(store.cursor(), "azure") == {}
