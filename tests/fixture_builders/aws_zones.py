"""Writes the AWS zone fixtures of fixtures/aws: `DescribeAvailabilityZones` and
`DescribeInstanceTypeOfferings` answers per default region (run: .venv/bin/python
tests/fixture_builders/aws_zones.py; tests/fixture_builders/aws.py adds their routes to replay.json).

fixtures/README.md (## aws) says where each shape and value comes from.
"""

from __future__ import annotations

from urllib.parse import urlencode

from collectors.aws.instance_types import GPU_TYPES
from tests.fixture_builders.aws import HERE

NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
TYPES = GPU_TYPES  # what the collector asks for; the answers list the zones of the types stored offline
NEXT_TOKEN = "AAEAAXJ2bG9jYXRpb24tdG9rZW4tcGxhY2Vob2xkZXItMQ=="  # placeholder in the real format

# Per region: (zone name, zone ID). IDs are real; names map to IDs per account, so they are
# illustrative (the same pairs as the spot fixtures where those name them).
ZONES: dict[str, list[tuple[str, str]]] = {
    "us-east-1": [("us-east-1a", "use1-az2"), ("us-east-1b", "use1-az4"), ("us-east-1c", "use1-az6"),
                  ("us-east-1d", "use1-az1"), ("us-east-1e", "use1-az3"), ("us-east-1f", "use1-az5")],
    "us-west-2": [("us-west-2a", "usw2-az2"), ("us-west-2b", "usw2-az1"), ("us-west-2c", "usw2-az3"),
                  ("us-west-2d", "usw2-az4")],
    "eu-central-1": [("eu-central-1a", "euc1-az2"), ("eu-central-1b", "euc1-az3"), ("eu-central-1c", "euc1-az1")],
    "ap-northeast-1": [("ap-northeast-1a", "apne1-az4"), ("ap-northeast-1c", "apne1-az1"),
                       ("ap-northeast-1d", "apne1-az2")],
}  # fmt: skip
# Per region: instance type → the zone IDs that sell it, as skypilot-catalog `catalogs/v8/aws/vms.csv`
# @ 00148f2a lists them (one row per type and zone; Local Zones such as use1-atl2-az1 left out: the
# collector asks for availability zones only). Every AWS GPU type the offline round stores, except
# g3.4xlarge, which that catalog no longer lists (retired family: no zone row to record).
OFFERINGS: dict[str, dict[str, list[str]]] = {
    "us-east-1": {
        "g4ad.xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g4dn.12xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
        "g4dn.xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
        "g5.12xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
        "g5.48xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
        "g5.xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"],
        "g5g.xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6.2xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6.48xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6e.12xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6e.48xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6e.xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g6f.large": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "g7e.2xlarge": ["use1-az2", "use1-az6"],
        "p3.16xlarge": ["use1-az1", "use1-az2", "use1-az3", "use1-az4", "use1-az5", "use1-az6"],
        "p3.2xlarge": ["use1-az1", "use1-az2", "use1-az3", "use1-az4", "use1-az5", "use1-az6"],
        "p3dn.24xlarge": ["use1-az1", "use1-az6"],
        "p4d.24xlarge": ["use1-az1", "use1-az2", "use1-az4", "use1-az6"],
        "p4de.24xlarge": ["use1-az4", "use1-az6"],
        "p5.48xlarge": ["use1-az1", "use1-az2", "use1-az3", "use1-az4", "use1-az5", "use1-az6"],
        "p5.4xlarge": ["use1-az1", "use1-az2", "use1-az3", "use1-az4", "use1-az5", "use1-az6"],
        "p5en.48xlarge": ["use1-az2", "use1-az6"],
        "p6-b200.48xlarge": ["use1-az6"],
    },
    "us-west-2": {
        "g4ad.xlarge": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "g4dn.12xlarge": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "g4dn.xlarge": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "g5.xlarge": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "g6e.xlarge": ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"],
        "p4d.24xlarge": ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"],
        "p4de.24xlarge": ["usw2-az1", "usw2-az2", "usw2-az3"],
        "p5.48xlarge": ["usw2-az1", "usw2-az2", "usw2-az3", "usw2-az4"],
    },
    "eu-central-1": {
        "g4ad.xlarge": ["euc1-az2", "euc1-az3"],
        "g4dn.12xlarge": ["euc1-az1", "euc1-az2", "euc1-az3"],
        "g6.48xlarge": ["euc1-az2", "euc1-az3"],
        "g6e.xlarge": ["euc1-az1", "euc1-az2", "euc1-az3"],
        "p4d.24xlarge": ["euc1-az1", "euc1-az2", "euc1-az3"],
        "p4de.24xlarge": ["euc1-az1", "euc1-az2"],
    },
    "ap-northeast-1": {
        "g4ad.xlarge": ["apne1-az1", "apne1-az2", "apne1-az4"],
        "g4dn.12xlarge": ["apne1-az1", "apne1-az2", "apne1-az4"],
        "g6.48xlarge": ["apne1-az1", "apne1-az4"],
        "g6e.xlarge": ["apne1-az1", "apne1-az4"],
        "p4d.24xlarge": ["apne1-az1", "apne1-az4"],
        "p4de.24xlarge": ["apne1-az1", "apne1-az4"],
        "p5.48xlarge": ["apne1-az1", "apne1-az4"],
    },
}  # fmt: skip
PAGED = {"us-east-1": 2}  # answers split over pages, to exercise nextToken (EC2 pages at MaxResults)


def pages(region: str) -> list[list[tuple[str, str]]]:
    """The region's (instance type, zone ID) items, page by page, in the catalog's order."""
    items = [(itype, zone) for itype, zones in OFFERINGS[region].items() for zone in zones]
    count = PAGED.get(region, 1)
    size = -(-len(items) // count)
    return [items[n * size : (n + 1) * size] for n in range(count)]


def _request_id(region: str, number: int) -> str:
    index = list(ZONES).index(region) * 10 + number
    return f"5c2f8e1d-{index:04d}-4a6b-8c3d-0e9f1a2b{index:04d}"


def zones_page(region: str) -> str:
    items = "".join(
        "\n        <item>"
        "\n            <optInStatus>opt-in-not-required</optInStatus>"
        f"\n            <zoneName>{name}</zoneName>"
        f"\n            <zoneId>{zone_id}</zoneId>"
        "\n            <zoneState>available</zoneState>"
        f"\n            <regionName>{region}</regionName>"
        "\n            <messageSet/>"
        f"\n            <groupName>{region}</groupName>"
        f"\n            <networkBorderGroup>{region}</networkBorderGroup>"
        "\n            <zoneType>availability-zone</zoneType>"
        "\n        </item>"
        for name, zone_id in ZONES[region]
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<DescribeAvailabilityZonesResponse xmlns="{NS}">\n'
        f"    <requestId>{_request_id(region, 0)}</requestId>\n"
        f"    <availabilityZoneInfo>{items}\n    </availabilityZoneInfo>\n"
        "</DescribeAvailabilityZonesResponse>\n"
    )


def offerings_page(region: str, number: int) -> str:
    found = pages(region)
    items = "".join(
        "\n        <item>"
        f"\n            <instanceType>{itype}</instanceType>"
        "\n            <locationType>availability-zone-id</locationType>"
        f"\n            <location>{zone_id}</location>"
        "\n        </item>"
        for itype, zone_id in found[number - 1]
    )
    token = f"\n    <nextToken>{NEXT_TOKEN}</nextToken>" if number < len(found) else ""  # absent on the last page
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<DescribeInstanceTypeOfferingsResponse xmlns="{NS}">\n'
        f"    <requestId>{_request_id(region, number)}</requestId>\n"
        f"    <instanceTypeOfferingSet>{items}\n    </instanceTypeOfferingSet>{token}\n"
        "</DescribeInstanceTypeOfferingsResponse>\n"
    )


def routes() -> list[dict]:
    """The replay routes: the whole form body the collector sends for each page."""
    found = []
    for region, zones in ZONES.items():
        body = urlencode([("Action", "DescribeAvailabilityZones"), ("Version", "2016-11-15"),
                          ("Filter.1.Name", "region-name"), ("Filter.1.Value.1", region),
                          ("Filter.2.Name", "zone-type"), ("Filter.2.Value.1", "availability-zone")])  # fmt: skip
        found.append(_route(region, body, f"zones_{region}.xml"))
        # Later pages first: page 1's body is a prefix of the next page's (which adds NextToken at the
        # end), and replay takes the first route whose body_contains matches.
        for number in range(len(pages(region)), 0, -1):
            params = [("Action", "DescribeInstanceTypeOfferings"), ("Version", "2016-11-15"),
                      ("LocationType", "availability-zone-id"), ("Filter.1.Name", "instance-type")]  # fmt: skip
            params += [(f"Filter.1.Value.{n}", t) for n, t in enumerate(TYPES, start=1)]
            params.append(("Filter.2.Name", "location"))
            params += [(f"Filter.2.Value.{n}", z) for n, z in enumerate(sorted(z for _, z in zones), start=1)]
            params.append(("MaxResults", "1000"))
            if number > 1:
                params.append(("NextToken", NEXT_TOKEN))
            found.append(_route(region, urlencode(params), f"offerings_{region}_page{number}.xml"))
    return found


def _route(region: str, body: str, file: str) -> dict:
    return {
        "method": "POST",
        "url": f"https://ec2.{region}.amazonaws.com/",
        "body_contains": body,
        "file": file,
        "content_type": "text/xml;charset=UTF-8",
    }


def main() -> None:
    for region in ZONES:
        (HERE / f"zones_{region}.xml").write_text(zones_page(region), encoding="utf-8")
        for number in range(1, len(pages(region)) + 1):
            (HERE / f"offerings_{region}_page{number}.xml").write_text(offerings_page(region, number), encoding="utf-8")


if __name__ == "__main__":
    main()
