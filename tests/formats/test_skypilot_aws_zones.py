"""The offline round's SkyPilot AWS catalog holds every AWS GPU instance type the round stores, in the
zones the recorded DescribeInstanceTypeOfferings answers give (fixtures/aws/offerings_*.xml, read here
without the collector), under SkyPilot's own accelerator names and counts. A type no recorded answer
names is left out with a note (today's exporter: SkyPilot launches only where a zone row says);
g3.4xlarge is the one: skypilot-catalog, where the recorded zones come from, no longer lists g3.
SkyPilot's reader reading these rows at gpuprice's prices is test_skypilot_readback's table."""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from pathlib import Path

import pytest

from pricedb import clock
from pricedb.formats.foreign import HOURLY
from pricedb.formats.skypilot import skypilot_vms_csv
from pricedb.queries import Offer, current_offers, instance_zones
from tests.conftest import FIXTURES, OfflineRound
from tests.formats.readback import exported_offline_round

# SkyPilot's AcceleratorName and AcceleratorCount for each type, as skypilot-catalog v8 `aws/vms.csv`
# @ 00148f2a writes them (the rows the recorded zones come from).
SKYPILOT_AWS = {
    "g4ad.xlarge": ("Radeon Pro V520", 1.0), "g4dn.xlarge": ("T4", 1.0), "g4dn.12xlarge": ("T4", 4.0),
    "g5.xlarge": ("A10G", 1.0), "g5.12xlarge": ("A10G", 4.0), "g5.48xlarge": ("A10G", 8.0), "g5g.xlarge": ("T4g", 1.0),
    "g6.2xlarge": ("L4", 1.0), "g6.48xlarge": ("L4", 8.0), "g6f.large": ("L4", 0.125), "g6e.xlarge": ("L40S", 1.0),
    "g6e.12xlarge": ("L40S", 4.0), "g6e.48xlarge": ("L40S", 8.0), "g7e.2xlarge": ("RTX PRO Server 6000", 1.0),
    "p3.2xlarge": ("V100", 1.0), "p3.16xlarge": ("V100", 8.0), "p3dn.24xlarge": ("V100-32GB", 8.0),
    "p4d.24xlarge": ("A100", 8.0), "p4de.24xlarge": ("A100-80GB", 8.0), "p5.4xlarge": ("H100", 1.0),
    "p5.48xlarge": ("H100", 8.0), "p5en.48xlarge": ("H200", 8.0), "p6-b200.48xlarge": ("B200", 8.0),
}  # fmt: skip
NO_ZONE_ROW = {("g3.4xlarge", "us-east-1")}


def recorded_zones() -> dict[tuple[str, str], set[str]]:
    """(instance type, region) → zone IDs, from every recorded offerings page."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for page in sorted((FIXTURES / "aws").glob("offerings_*_page*.xml")):
        region = re.fullmatch(r"offerings_(.+)_page\d+\.xml", page.name).group(1)  # type: ignore[union-attr]
        for itype, zone in re.findall(
            r"<instanceType>([^<]+)</instanceType>\s*<locationType>availability-zone-id</locationType>\s*"
            r"<location>([^<]+)</location>",
            page.read_text(),
        ):
            found[(itype, region)].add(zone)
    return dict(found)


def stored_types(offers: list[Offer]) -> set[tuple[str, str]]:
    """(instance type, region) of every AWS offer the catalog takes: hourly, fresh, not sold out."""
    return {
        (o.sku, o.region)
        for o in offers
        if o.provider == "aws" and o.pricing in HOURLY and not o.stale and o.availability != "sold_out"
    }


@pytest.fixture(scope="module")
def exported(offline_round: OfflineRound, tmp_path_factory: pytest.TempPathFactory):
    with exported_offline_round(offline_round, tmp_path_factory.mktemp("skypilot-aws")) as (store, settings):
        offers = current_offers(store.cursor(), clock.now_naive()).offers
        sheet = skypilot_vms_csv(
            [o for o in offers if not o.stale and o.availability != "sold_out"],
            "aws",
            store.fx_table(),
            instance_zones(store.cursor(), "aws"),
        )
        catalog = Path(settings.export_path / "skypilot" / "aws" / "vms.csv").read_text()
    return offers, sheet, list(csv.DictReader(io.StringIO(catalog)))


def test_every_stored_aws_type_is_listed_in_the_recorded_zones(exported) -> None:
    offers, _, rows = exported
    zones = recorded_zones()
    stored = stored_types(offers)
    listed: dict[tuple[str, str], set[str]] = defaultdict(set)
    for row in rows:
        listed[(row["InstanceType"], row["Region"])].add(row["AvailabilityZone"])
    assert stored >= NO_ZONE_ROW and not NO_ZONE_ROW & set(zones)
    assert set(listed) == stored - NO_ZONE_ROW
    for key, found in listed.items():
        assert found == zones[key], key
    assert len({sku for sku, _ in listed}) == len(SKYPILOT_AWS) == 23
    assert len(rows) == sum(len(zones[key]) for key in listed)


def test_each_row_names_the_accelerator_as_skypilot_does(exported) -> None:
    _, _, rows = exported
    assert {row["InstanceType"] for row in rows} == set(SKYPILOT_AWS)
    for row in rows:
        assert (row["AcceleratorName"], float(row["AcceleratorCount"])) == SKYPILOT_AWS[row["InstanceType"]], row


def test_a_type_without_a_recorded_zone_is_left_out_and_named(exported) -> None:
    _, sheet, rows = exported
    assert "left out, their availability zones not collected: g3.4xlarge in us-east-1" in sheet.notes
    assert not any(row["InstanceType"] == "g3.4xlarge" for row in rows)
