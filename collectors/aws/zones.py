"""Which availability zones offer each instance type: EC2 `DescribeAvailabilityZones`, then
`DescribeInstanceTypeOfferings`, per region.

Why: SkyPilot's AWS catalog has one row per (instance type, zone), and SkyPilot launches only in the
zones those rows name (`regions_with_offering`, `get_region_zones`). Zone IDs are not in the price
list; only these APIs (with credentials) say which zones sell a type.

Source: the EC2 Query API, `POST https://ec2.{region}.amazonaws.com/` with a form body, SigV4-signed
like the spot requests (collectors.aws.spot). Two calls per region:

1. `Action=DescribeAvailabilityZones&Version=2016-11-15&Filter.1.Name=region-name&Filter.1.Value.1=
   {region}&Filter.2.Name=zone-type&Filter.2.Value.1=availability-zone`: the region's zones,
   `DescribeAvailabilityZonesResponse/availabilityZoneInfo/item{zoneName, zoneId, regionName, zoneType, …}`
   (Local and Wavelength Zones left out: SkyPilot's catalog lists availability zones);
2. `Action=DescribeInstanceTypeOfferings&Version=2016-11-15&LocationType=availability-zone-id&
   Filter.1.Name=instance-type&Filter.1.Value.N=…&Filter.2.Name=location&Filter.2.Value.N={zone IDs}&
   MaxResults=1000[&NextToken=…]`:
   `DescribeInstanceTypeOfferingsResponse/instanceTypeOfferingSet/item{instanceType, locationType, location}`,
   paged with `nextToken` (absent or empty on the last page).

With `LocationType=availability-zone-id` each `<location>` is the zone ID (`use1-az1`), the same in
every account, which is what SkyPilot's catalog stores (names such as `us-east-1a` differ per account).
The `location` filter takes exact zone IDs of the current region (no wildcard matches a region's IDs),
hence the first call; it also puts the region in the request body, which recorded answers and local
stand-ins need, as they do not see the regional host. Namespace `http://ec2.amazonaws.com/doc/2016-11-15/`;
member names from botocore's EC2 service model.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import urlencode
from xml.etree import ElementTree

from botocore.credentials import ReadOnlyCredentials

from collectors.aws.spot import API_VERSION, MAX_PAGES, ec2_error, post_ec2
from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http
from pricedb.models import InstanceZone

ZONES_ACTION = "DescribeAvailabilityZones"
OFFERINGS_ACTION = "DescribeInstanceTypeOfferings"
LOCATION_TYPE = "availability-zone-id"
MAX_RESULTS = 1000  # the API's maximum (shape DITOMaxResults: 5–1000)


class OfferingsPage(NamedTuple):
    offerings: list[InstanceZone]
    next_token: str | None


def zones_body(region: str) -> str:
    return urlencode(
        [
            ("Action", ZONES_ACTION),
            ("Version", API_VERSION),
            ("Filter.1.Name", "region-name"),
            ("Filter.1.Value.1", region),
            ("Filter.2.Name", "zone-type"),
            ("Filter.2.Value.1", "availability-zone"),
        ]
    )


def offerings_body(instance_types: Iterable[str], zone_ids: Iterable[str], next_token: str | None = None) -> str:
    params = [("Action", OFFERINGS_ACTION), ("Version", API_VERSION), ("LocationType", LOCATION_TYPE)]
    params.append(("Filter.1.Name", "instance-type"))
    params += [(f"Filter.1.Value.{n}", t) for n, t in enumerate(sorted(instance_types), start=1)]
    params.append(("Filter.2.Name", "location"))
    params += [(f"Filter.2.Value.{n}", z) for n, z in enumerate(sorted(zone_ids), start=1)]
    params.append(("MaxResults", str(MAX_RESULTS)))
    if next_token:
        params.append(("NextToken", next_token))
    return urlencode(params)


async def fetch_region(
    http: Http, region: str, credentials: ReadOnlyCredentials, instance_types: Iterable[str]
) -> list[InstanceZone]:
    """Every (instance type, zone ID) of `instance_types` offered in `region`, over every page."""
    raw = await post_ec2(http, region, credentials, ZONES_ACTION, zones_body(region).encode(), f"zones:{region}")
    zone_ids = parse_zone_ids(raw, region)
    if not zone_ids:
        return []
    types = sorted(instance_types)
    offerings: list[InstanceZone] = []
    token: str | None = None
    seen: set[str] = set()
    for number in range(1, MAX_PAGES + 1):
        body = offerings_body(types, zone_ids, token)
        raw = await post_ec2(http, region, credentials, OFFERINGS_ACTION, body.encode(), f"offerings:{region}:{number}")
        page = parse_offerings(raw, region, zone_ids)
        offerings += page.offerings
        token = page.next_token
        if not token:
            return offerings
        if token in seen:
            raise FetchError(f"EC2 {OFFERINGS_ACTION} in {region}: nextToken repeats; giving up")
        seen.add(token)
    raise FetchError(f"EC2 {OFFERINGS_ACTION} in {region}: more than {MAX_PAGES} pages")


def parse_zone_ids(raw: RawResponse, region: str) -> list[str]:
    """The zone IDs of `region`'s availability zones."""
    items = _items(raw, region, ZONES_ACTION, "availabilityZoneInfo")
    for item in items:
        if item.get("regionName") != region or not item.get("zoneId"):
            raise ParseError(f"{raw.url}: zone {item} answered for region {region}")
    return sorted(item["zoneId"] for item in items)


def parse_offerings(raw: RawResponse, region: str, zone_ids: Iterable[str]) -> OfferingsPage:
    asked = set(zone_ids)
    offerings = []
    for item in _items(raw, region, OFFERINGS_ACTION, "instanceTypeOfferingSet"):
        if item.get("locationType") != LOCATION_TYPE or not item.get("instanceType"):
            raise ParseError(f"{raw.url}: an offering without an instance type and zone ID: {item}")
        if item.get("location") not in asked:
            raise ParseError(f"{raw.url}: zone {item.get('location')} is not one of {region}'s zones")
        offerings.append(InstanceZone(region, item["instanceType"], item["location"]))
    token = _child_text(_root(raw, region, OFFERINGS_ACTION), "nextToken")
    return OfferingsPage(offerings, token or None)


def _root(raw: RawResponse, region: str, action: str) -> ElementTree.Element:
    try:
        root = ElementTree.fromstring(raw.body)
    except ElementTree.ParseError as exc:
        raise ParseError(f"{raw.url}: the {action} answer is not XML ({exc})") from exc
    name = _local(root.tag)
    if name == f"{action}Response":
        return root
    error = ec2_error(raw.text()) if name == "Response" else None
    if error is not None:
        raise FetchError(f"EC2 {action} in {region}: {error[0]}: {error[1]}")
    raise ParseError(f"{raw.url}: expected {action}Response, got <{name}>")


def _items(raw: RawResponse, region: str, action: str, set_name: str) -> list[dict[str, str]]:
    root = _root(raw, region, action)
    found = next((child for child in root if _local(child.tag) == set_name), None)
    if found is None:
        raise ParseError(f"{raw.url}: no {set_name} in the {action} answer")
    return [
        {_local(field.tag): (field.text or "").strip() for field in item}
        for item in found
        if _local(item.tag) == "item"
    ]


def _child_text(root: ElementTree.Element, name: str) -> str:
    child = next((c for c in root if _local(c.tag) == name), None)
    return (child.text or "").strip() if child is not None else ""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]
