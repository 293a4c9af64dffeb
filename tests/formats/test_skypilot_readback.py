"""SkyPilot 0.14.1's own catalog reader, run on the SkyPilot catalogs gpuprice writes from the offline
round of every collector: per exported cloud, listing, hourly costs, instance type ↔ accelerator and
region/zone look-ups all answer, and equal gpuprice's offers (fresh and available, as exported).

Table-driven: every (instance type, region) the offers hold is asked about, whatever cards the
offline data holds. SkyPilot pins click and uvicorn below gpuprice's, so it lives in its own venv
(.venv-readback, made by `.ci/readback-venv`, which `.ci/run` calls) and answers from a subprocess
(tests/formats/skypilot_reader.py). Without that venv these tests fail, saying how to make it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pricedb import clock
from pricedb.formats.foreign import UsdPricer
from pricedb.formats.skypilot import LAYOUTS, accelerator_count, accelerator_name
from pricedb.queries import Offer, current_offers, instance_zones
from pricedb.shapes import INSTANCE_STORAGE, host_shape
from tests.conftest import OfflineRound
from tests.formats.readback import exported_offline_round

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-readback"
REQUIREMENTS = ROOT / ".ci" / "readback-requirements.txt"
READER = Path(__file__).with_name("skypilot_reader.py")
CLOUDS = tuple(LAYOUTS)  # every cloud gpuprice writes a SkyPilot catalog for


def readback_python() -> Path:
    """The read-back venv's interpreter; a missing or outdated venv fails the test, never skips it."""
    marker = VENV / REQUIREMENTS.name
    if not marker.exists() or marker.read_text() != REQUIREMENTS.read_text():
        pytest.fail(
            f"{VENV} is missing or not built from {REQUIREMENTS}: run .ci/readback-venv (once; .ci/run does it)",
            pytrace=False,
        )
    return VENV / "bin" / "python"


@dataclass
class Row:
    """What gpuprice offers for one (instance type, region): the figures SkyPilot must answer."""

    cloud: str
    sku: str
    region: str
    accelerator: str
    count: float  # GPUs per instance; a slice's share (g6f.large 0.125)
    prices: dict[str, float] = field(default_factory=dict)  # on_demand / spot, USD per hour
    vcpus: float | None = None
    memory_gib: float | None = None
    spot_zone: str | None = None

    @property
    def spot_only(self) -> bool:
        return "on_demand" not in self.prices


@dataclass
class Exported:
    rows: list[Row]
    zones: dict[tuple[str, str], list[str]]  # AWS (region, sku) → zone IDs
    plain: Path  # <cloud>/vms.csv
    mapped: Path  # the same, plus an AWS account's zone-name mapping (aws/az_mappings-*.csv)
    zone_names: dict[str, str]  # zone ID → the mapping's zone name


def _rows(offers: list[Offer], fx: Any, zones: dict[tuple[str, str], list[str]]) -> list[Row]:
    """The rows the catalogs must hold: every priced offer, AWS's only where its zones were collected
    (the exporter leaves the others out and says so; test_skypilot_aws_zones checks that only g3.4xlarge,
    which no recorded zone answer names, is left out)."""
    usd = UsdPricer(fx)
    rows: dict[tuple[str, str, str], Row] = {}
    for offer in offers:
        price = usd(offer) if offer.provider in LAYOUTS and offer.pricing in ("on_demand", "spot") else None
        if price is None or (offer.provider == "aws" and not zones.get((offer.region, offer.sku))):
            continue
        row = rows.setdefault(
            (offer.provider, offer.sku, offer.region),
            Row(offer.provider, offer.sku, offer.region, accelerator_name(offer), accelerator_count(offer)),
        )
        row.prices[offer.pricing] = price
        shape = host_shape(offer)
        if shape is not None and (offer.pricing == "on_demand" or row.vcpus is None):
            row.vcpus, row.memory_gib = float(shape.vcpus), float(shape.memory_gib)
        if offer.pricing == "spot" and offer.notes:
            row.spot_zone = next((w.strip("()") for w in offer.notes.split() if "-az" in w), None)
    return sorted(rows.values(), key=lambda r: (r.cloud, r.sku, r.region))


@pytest.fixture(scope="module")
def exported(offline_round: OfflineRound, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    folder = tmp_path_factory.mktemp("skypilot-readback")
    with exported_offline_round(offline_round, folder) as (store, settings):
        offers = [o for o in current_offers(store.cursor(), clock.now_naive()).offers if not o.stale]
        zones = instance_zones(store.cursor(), "aws")
        rows = _rows([o for o in offers if o.availability != "sold_out"], store.fx_table(), zones)
    plain = settings.export_path / "skypilot"
    assert sorted(p.parent.name for p in plain.glob("*/vms.csv")) == sorted(CLOUDS)
    assert {r.cloud for r in rows} == set(CLOUDS), "the offline data holds offers of every exported cloud"
    mapped = folder / "mapped"
    shutil.copytree(plain, mapped)
    zone_names = {}
    for region in sorted({region for region, _ in zones}):
        ids = sorted({z for (r, _), found in zones.items() if r == region for z in found})
        zone_names.update({zone_id: f"{region}{chr(ord('a') + n)}" for n, zone_id in enumerate(ids)})
    # SkyPilot's mapping file (fetch_aws.py writes it from DescribeAvailabilityZones): zone ID → this account's name.
    lines = ["AvailabilityZoneName,AvailabilityZone", *(f"{name},{zid}" for zid, name in zone_names.items())]
    (mapped / "aws" / "az_mappings-123456789012.csv").write_text("\n".join(lines) + "\n")
    yield Exported(rows, zones, plain, mapped, zone_names)


class Asked:
    """SkyPilot answering sets of calls, each about the catalogs in its folder, in one subprocess started
    at once. It imports SkyPilot once (about half of a reader's CPU) and reads each folder in a child
    forked from itself, so no set sees what SkyPilot kept of another's catalogs."""

    def __init__(self, work: Path, sets: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
        self.calls = {name: calls for name, (_, calls) in sets.items()}
        arguments = []
        for name, (folder, calls) in sets.items():
            calls_file = work / f"{name}-calls.json"
            calls_file.write_text(json.dumps(calls))
            arguments += [str(folder), str(calls_file)]
        self.process = subprocess.Popen(
            [str(readback_python()), str(READER), *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._answered: dict[str, list[Any]] | None = None

    def answers(self, name: str) -> list[Any]:
        """The answers to set `name` in order; an error answer fails the test with SkyPilot's message."""
        if self._answered is None:
            out, err = self.process.communicate(timeout=600)
            assert self.process.returncode == 0, err[-3000:]
            self._answered = dict(zip(self.calls, json.loads(out), strict=True))
        answers = self._answered[name]
        for asked, answer in zip(self.calls[name], answers, strict=True):
            assert "ok" in answer, f"SkyPilot refused {asked}: {answer['error']}"
        return [answer["ok"] for answer in answers]


def call(cloud: str, name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"cloud": cloud, "call": name, "args": list(args), "kwargs": kwargs}


@pytest.fixture(scope="module")
def asked(exported: Exported, tmp_path_factory: pytest.TempPathFactory) -> Asked:
    """The plain catalogs, and AWS's with an account's zone names, asked in one reader started now."""
    sets = {"plain": (exported.plain, list(_plain_calls(exported).values())),
            "mapped": (exported.mapped, _mapped_calls(exported))}  # fmt: skip
    return Asked(tmp_path_factory.mktemp("skypilot-calls"), sets)


@pytest.fixture(scope="module")
def plain_answers(exported: Exported, asked: Asked) -> dict[str, Any]:
    return dict(zip(_plain_calls(exported), asked.answers("plain"), strict=True))


def _plain_calls(exported: Exported) -> dict[str, dict[str, Any]]:
    """Every question about the plain catalogs, by a key the tests look answers up with."""
    calls: dict[str, dict[str, Any]] = {}
    for cloud in CLOUDS:
        calls[f"{cloud} list"] = call(cloud, "list_accelerators", True, None, None, None, all_regions=True)
    for row in exported.rows:
        key = f"{row.cloud} {row.sku} {row.region}"
        for pricing in row.prices:
            calls[f"{key} cost {pricing}"] = call(row.cloud, "get_hourly_cost", row.sku, pricing == "spot", row.region)
        calls[f"{key} accelerators"] = call(row.cloud, "get_accelerators_from_instance_type", row.sku)
        calls[f"{key} types"] = call(
            row.cloud, "get_instance_type_for_accelerator", row.accelerator, row.count,
            use_spot=row.spot_only, region=row.region,
        )  # fmt: skip
        calls[f"{key} shape"] = call(row.cloud, "get_vcpus_mem_from_instance_type", row.sku)
        calls[f"{key} region"] = call(row.cloud, "validate_region_zone", row.region, None)
        for pricing in row.prices:
            calls[f"{key} offering {pricing}"] = call(
                row.cloud, "regions_with_offering", row.sku, None, pricing == "spot", row.region, None
            )
        for zone in exported.zones.get((row.region, row.sku), []) if row.cloud == "aws" else []:
            calls[f"{key} zone {zone}"] = call("aws", "validate_region_zone", row.region, zone)
            if not row.spot_only:
                calls[f"{key} zone cost {zone}"] = call("aws", "get_hourly_cost", row.sku, False, row.region, zone)
        storage = INSTANCE_STORAGE.get((row.cloud, row.sku))
        if row.cloud == "aws":
            calls[f"{key} disk"] = call("aws", "get_local_disk_from_instance_type", row.sku)
        if storage is not None:
            total = int(storage.disk_size_gb * storage.disk_count)
            calls[f"{key} disk types"] = call(
                "aws", "get_instance_type_for_accelerator", row.accelerator, row.count,
                use_spot=row.spot_only, local_disk=f"ssd:{total}+", region=row.region,
            )  # fmt: skip
    return calls


@pytest.mark.parametrize("cloud", CLOUDS)
def test_listing_holds_every_offer_at_its_price(exported: Exported, plain_answers: dict[str, Any], cloud: str) -> None:
    listed = {
        (info["instance_type"], info["region"]): (name, info)
        for name, infos in plain_answers[f"{cloud} list"].items()
        for info in infos
    }
    rows = [r for r in exported.rows if r.cloud == cloud]
    assert rows and set(listed) == {(r.sku, r.region) for r in rows}
    for row in rows:
        name, info = listed[(row.sku, row.region)]
        assert (name, info["accelerator_count"]) == (row.accelerator, row.count)
        assert (info["price"], info["spot_price"]) == (row.prices.get("on_demand"), row.prices.get("spot"))
        assert (info["cpu_count"], info["memory"]) == (row.vcpus, row.memory_gib)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_hourly_costs_equal_the_offers(exported: Exported, plain_answers: dict[str, Any], cloud: str) -> None:
    for row in (r for r in exported.rows if r.cloud == cloud):
        for pricing, price in row.prices.items():
            # Spot per region is SkyPilot's cheapest zone, which is the zone gpuprice's spot offer names.
            assert plain_answers[f"{cloud} {row.sku} {row.region} cost {pricing}"] == price, (row, pricing)


@pytest.mark.parametrize("cloud", CLOUDS)
def test_instance_types_and_accelerators_find_each_other(
    exported: Exported, plain_answers: dict[str, Any], cloud: str
) -> None:
    for row in (r for r in exported.rows if r.cloud == cloud):
        key = f"{cloud} {row.sku} {row.region}"
        assert plain_answers[f"{key} accelerators"] == {row.accelerator: row.count}
        found, fuzzy = plain_answers[f"{key} types"]
        assert row.sku in (found or []), (row, fuzzy)
        assert plain_answers[f"{key} shape"] == [row.vcpus, row.memory_gib]


@pytest.mark.parametrize("cloud", CLOUDS)
def test_regions_and_zones_are_where_the_offers_are(
    exported: Exported, plain_answers: dict[str, Any], cloud: str
) -> None:
    for row in (r for r in exported.rows if r.cloud == cloud):
        key = f"{cloud} {row.sku} {row.region}"
        assert plain_answers[f"{key} region"] == [row.region, None]
        zones = exported.zones.get((row.region, row.sku), [])
        for pricing in row.prices:
            [region] = plain_answers[f"{key} offering {pricing}"]
            assert region["name"] == row.region
            if cloud == "aws":  # launchable: on-demand in every zone that sells it, spot where it is priced
                expected = [row.spot_zone] if pricing == "spot" else zones
                assert sorted(region["zones"]) == sorted(expected) and expected, (row, pricing)
        for zone in zones if cloud == "aws" else []:
            assert plain_answers[f"{key} zone {zone}"] == [row.region, zone]
            if not row.spot_only:
                assert plain_answers[f"{key} zone cost {zone}"] == row.prices["on_demand"]


def test_aws_local_disks_answer_from_the_catalog(exported: Exported, plain_answers: dict[str, Any]) -> None:
    aws = [r for r in exported.rows if r.cloud == "aws"]
    assert any((r.cloud, r.sku) in INSTANCE_STORAGE for r in aws)
    for row in aws:
        key = f"aws {row.sku} {row.region}"
        storage = INSTANCE_STORAGE.get(("aws", row.sku))
        if storage is None:
            assert plain_answers[f"{key} disk"] is None
            continue
        total = int(storage.disk_size_gb * storage.disk_count)
        assert plain_answers[f"{key} disk"] == f"{'nvme' if storage.nvme else 'ssd'}:{total}"
        assert row.sku in (plain_answers[f"{key} disk types"][0] or [])


def _mapped_calls(exported: Exported) -> list[dict[str, Any]]:
    calls = []
    for row in (r for r in exported.rows if r.cloud == "aws"):
        calls.append(call("aws", "get_hourly_cost", row.sku, row.spot_only, row.region))
        calls.append(call("aws", "regions_with_offering", row.sku, None, row.spot_only, row.region, None))
        for zone in exported.zones[(row.region, row.sku)]:
            calls.append(call("aws", "validate_region_zone", row.region, exported.zone_names[zone]))
    return calls


def test_aws_with_an_accounts_zone_names_everything_still_answers(exported: Exported, asked: Asked) -> None:
    """With an account's mapping file SkyPilot joins on the zone ID and then speaks zone names."""
    answers = iter(asked.answers("mapped"))
    for row in (r for r in exported.rows if r.cloud == "aws"):
        assert next(answers) == row.prices["spot" if row.spot_only else "on_demand"]
        [region] = next(answers)
        zones = exported.zones[(row.region, row.sku)]
        expected = sorted(exported.zone_names[z] for z in ([row.spot_zone] if row.spot_only else zones))
        assert sorted(region["zones"]) == expected
        for zone in zones:
            assert next(answers) == [row.region, exported.zone_names[zone]]
