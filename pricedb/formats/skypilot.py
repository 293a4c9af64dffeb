"""SkyPilot catalog `vms.csv` per cloud, so SkyPilot reads gpuprice's prices unmodified.

Each cloud's catalog has its own column set and conventions, taken from the published catalogs
(skypilot-org/skypilot-catalog `catalogs/v8/<cloud>/vms.csv`, Azure `v6`) and the fetchers that
write them (skypilot-org/skypilot `sky/catalog/data_fetchers/fetch_<cloud>.py`). Common to all: one
row per (instance type, region) with the on-demand `Price` and the `SpotPrice` (empty when there is
none; `Price` empty when only spot is offered) in USD per instance-hour, and `GpuInfo`, the dict
SkyPilot's reader parses with `ast.literal_eval` (`Gpus[0].MemoryInfo.SizeInMiB` per GPU,
`TotalGpuMemoryInMiB` the true total for all GPUs — SkyPilot's own Lambda and Vast fetchers write the
per-GPU figure there; the issue asks for the total). Per cloud:

- **aws** (`fetch_aws.py` USEFUL_COLUMNS): `…, Region, AvailabilityZone, Arch, LocalDiskType,
  NVMeSupported, LocalDiskSize, LocalDiskCount, MaximumEfaInterfaces`; `AcceleratorCount` a float
  (`8.0`). One row per (instance type, availability zone ID), the zones from EC2
  DescribeInstanceTypeOfferings (collectors.aws.zones, stored in `instance_zones`): SkyPilot launches
  only where these rows say, and its account mapping joins on zone IDs (`use1-az1`). The region's
  on-demand `Price` is on every zone row; `SpotPrice` only on the zone the spot offer names (gpuprice
  keeps each region's cheapest zone), so SkyPilot's regional spot price — the cheapest zone's — is
  gpuprice's. Instance types whose zones are unknown are left out; with no zones at all (never
  collected with AWS credentials) the catalog is not written (`CatalogUnavailable`). Disk and EFA
  columns from pricedb.shapes' `INSTANCE_STORAGE`, empty for types it does not list.
- **azure** (`fetch_azure.py`): `…, Region, Generation`; `AcceleratorCount` an integer. (SkyPilot's
  own Azure fetcher writes a bare accelerator name in `GpuInfo`, which its reader cannot parse; the
  dict form written here is the one the reader understands.)
- **lambda** (`fetch_lambda_cloud.py`): `InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
  MemoryGiB, Price, Region, GpuInfo, SpotPrice`; counts and sizes as floats; `GpuInfo` names the GPU
  as the accelerator (`A100-80GB`) with a float `Count`; no spot market, so `SpotPrice` is empty.
- **verda** (`fetch_verda.py`): `InstanceType, UpstreamCloudId, vCPUs, MemoryGiB, AcceleratorName,
  AcceleratorCount, GpuInfo, Region, Price, SpotPrice`; `GpuInfo` is JSON (double quotes, no
  `Manufacturer`, integer `Count`), which `ast.literal_eval` reads too; `UpstreamCloudId` repeats the
  instance type.

Accelerator names are the card table's `skypilot_name` (pricedb.cards: `A100` for 40GB, `A100-80GB`,
`H100-NVL`, `RTXA5000`, …, as skypilot-catalog v8's `common/accelerators.csv` spells them); a card
SkyPilot has no name for keeps gpuprice's model name; where one cloud's catalog spells a card its
own way (AWS: `RTX PRO Server 6000` for g7e), `CLOUD_NAMES` says so. A slice (gpuprice's
`gpu_fraction`) counts as its share of one GPU, `AcceleratorCount` 0.125 for g6f.large, as
SkyPilot's own AWS catalog writes it, never as a whole card.

Refused (`SKYPILOT_UNSUPPORTED`, each with the reason the API answers): gcp, runpod, vast, oci.
Shapes: the offer's own (from its source), else pricedb.shapes' table; unknown → empty cells.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pricedb.cards import card
from pricedb.formats.foreign import HOURLY, ForeignSheet, UsdPricer
from pricedb.fx import FxTable
from pricedb.queries import Offer
from pricedb.shapes import INSTANCE_STORAGE, HostShape, host_shape

_BASE = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
         "SpotPrice", "Region")  # fmt: skip
_AWS_DISKS = ("LocalDiskType", "NVMeSupported", "LocalDiskSize", "LocalDiskCount", "MaximumEfaInterfaces")
# The zone ID in an AWS spot offer's notes ("cheapest of 4 zones: us-east-1d (use1-az1)", collectors.aws.spot).
_ZONE_ID = re.compile(r"\b([a-z]{2,}\d+-az\d+)\b")

ZonesOf = Mapping[tuple[str, str], list[str]]  # (region, instance type) → zone IDs, pricedb.queries.instance_zones


class CatalogUnavailable(Exception):
    """This cloud's catalog cannot be written from what gpuprice holds now; `str()` says why."""


def _num(value: float | int) -> str:
    return repr(float(value))


def skypilot_accelerator_name(model: str, memory_gb: float, form_factor: str | None = None) -> str:
    """SkyPilot's name for the card (the card table's `skypilot_name`), else gpuprice's model name."""
    known = card(model, memory_gb, form_factor)
    return known.skypilot_name if known is not None and known.skypilot_name else model


# Where one cloud's SkyPilot catalog spells a card otherwise than the card table's `skypilot_name`:
# skypilot-catalog v8 `aws/vms.csv` @ 00148f2a names g7e's card as AWS does.
CLOUD_NAMES: dict[tuple[str, str], str] = {("aws", "RTXPRO6000"): "RTX PRO Server 6000"}


def accelerator_name(offer: Offer) -> str:
    name = skypilot_accelerator_name(offer.gpu_model, offer.gpu_memory_gb, offer.form_factor)
    return CLOUD_NAMES.get((offer.provider, name), name)


def accelerator_count(offer: Offer) -> float | int:
    """GPUs per instance as SkyPilot counts them: a slice is its share of one GPU (g6f.large: 0.125,
    as SkyPilot's own AWS catalog writes it), never a whole card."""
    if offer.gpu_fraction:
        return offer.gpu_count * offer.gpu_fraction
    return offer.gpu_count


def _per_gpu_mib(offer: Offer) -> int:
    return round(offer.gpu_memory_gb * 1024)


def _gpu_info_dict(offer: Offer, name: str, count: float | int, manufacturer: bool) -> dict[str, Any]:
    """`count` GPUs of `name` (a slice's share); a slice's memory is its own, as SkyPilot writes it."""
    gpu: dict[str, Any] = {"Name": name}
    if manufacturer:
        known = card(offer.gpu_model, offer.gpu_memory_gb, offer.form_factor)
        gpu["Manufacturer"] = known.vendor if known is not None else "NVIDIA"
    gpu.update(Count=count, MemoryInfo={"SizeInMiB": _per_gpu_mib(offer)})
    return {"Gpus": [gpu], "TotalGpuMemoryInMiB": _per_gpu_mib(offer) * offer.gpu_count}


def skypilot_gpu_info(offer: Offer) -> str:
    """AWS and Azure: the GPU model as `Name`, an integer count, a Python literal."""
    return repr(_gpu_info_dict(offer, offer.gpu_model, accelerator_count(offer), manufacturer=True))


def _lambda_gpu_info(offer: Offer) -> str:
    return repr(_gpu_info_dict(offer, accelerator_name(offer), float(accelerator_count(offer)), manufacturer=True))


def _verda_gpu_info(offer: Offer) -> str:
    return json.dumps(_gpu_info_dict(offer, accelerator_name(offer), accelerator_count(offer), manufacturer=False))


@dataclass(frozen=True)
class Layout:
    columns: tuple[str, ...]
    gpu_info: Callable[[Offer], str]
    count_as_float: bool = True
    per_zone: bool = False


_LAMBDA = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
           "SpotPrice")  # fmt: skip
_VERDA = ("InstanceType", "UpstreamCloudId", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount", "GpuInfo",
          "Region", "Price", "SpotPrice")  # fmt: skip
LAYOUTS: dict[str, Layout] = {
    "aws": Layout((*_BASE, "AvailabilityZone", "Arch", *_AWS_DISKS), skypilot_gpu_info, per_zone=True),
    "azure": Layout((*_BASE, "Generation"), skypilot_gpu_info, count_as_float=False),
    "lambda": Layout(_LAMBDA, _lambda_gpu_info),
    "verda": Layout(_VERDA, _verda_gpu_info),
}
SKYPILOT_COLUMNS: dict[str, list[str]] = {cloud: list(layout.columns) for cloud, layout in LAYOUTS.items()}
# Clouds whose catalog needs the zones each instance type is sold in (collected with credentials).
ZONED_CLOUDS = frozenset(cloud for cloud, layout in LAYOUTS.items() if layout.per_zone)

NO_AWS_ZONES = (
    "SkyPilot launches AWS instances only in the availability zones its catalog lists, and gpuprice has not "
    "collected AWS's zones: they come from EC2 DescribeInstanceTypeOfferings, which needs AWS credentials "
    "(GPUPRICE_AWS_ACCESS_KEY_ID and GPUPRICE_AWS_SECRET_ACCESS_KEY, or botocore's chain); run `gpuprice collect "
    "aws` with credentials, and the catalog is written with one row per instance type and zone"
)

SKYPILOT_UNSUPPORTED = {
    "gcp": "SkyPilot's GCP catalog prices the host (vCPU+RAM) and the GPUs in separate rows; gpuprice stores "
    "whole-instance prices, so it cannot write that layout faithfully",
    "runpod": "SkyPilot's RunPod catalog lists Secure Cloud pods per country (Region, e.g. US) and data center "
    "(AvailabilityZone, e.g. US-TX-3); gpuprice records RunPod's prices RunPod-wide (region 'global', Secure and "
    "Community Cloud), with no country or data center to fill those columns",
    "vast": "SkyPilot's Vast catalog prices a host class (GPUs, CPU cores and RAM in the instance type) per "
    "georegion ('Texas, US, NA') at the median of the matching hosts; gpuprice keeps one offer per card, GPU count "
    "and country at the cheapest host's price, so Price and Region would not mean what SkyPilot reads",
    "oci": "SkyPilot's OCI catalog has one row per region and availability domain (US-ASHBURN-1-AD-1); gpuprice "
    "stores Oracle's single list price once (region 'global') and has no table of regions and their availability "
    "domains, so those rows would be invented",
}


@dataclass
class _Entry:
    """One (instance type, region): its on-demand and spot offers, USD per hour."""

    offer: Offer
    prices: dict[str, float] = field(default_factory=dict)
    spot_notes: str | None = None


def skypilot_vms_csv(offers: Iterable[Offer], cloud: str, fx: FxTable, zones: ZonesOf | None = None) -> ForeignSheet:
    """The catalog of `cloud`. `zones` (region, instance type) → zone IDs is needed for the clouds
    in ZONED_CLOUDS; without any, `CatalogUnavailable` says why the catalog cannot be written."""
    layout = LAYOUTS[cloud]
    if layout.per_zone and not zones:
        raise CatalogUnavailable(NO_AWS_ZONES)
    usd = UsdPricer(fx)
    merged: dict[tuple[str, str], _Entry] = {}
    for offer in offers:
        if offer.provider != cloud or offer.pricing not in HOURLY:
            continue
        price = usd(offer)
        if price is None:
            continue
        entry = merged.setdefault((offer.sku, offer.region), _Entry(offer))
        entry.prices[offer.pricing] = price
        if offer.pricing == "on_demand":
            entry.offer = offer
        else:
            entry.spot_notes = offer.notes
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(layout.columns)
    unknown_shapes = rows = 0
    zoneless: list[str] = []
    spot_unplaced = 0
    for (sku, region), entry in sorted(merged.items()):
        shape = host_shape(entry.offer)
        unknown_shapes += shape is None
        values = _row(layout, entry, shape)
        if not layout.per_zone:
            writer.writerow([values[c] for c in layout.columns])
            rows += 1
            continue
        zone_ids = (zones or {}).get((region, sku))
        if not zone_ids:
            zoneless.append(f"{sku} in {region}")
            continue
        spot_zone = _spot_zone(entry.spot_notes)
        spot_unplaced += "spot" in entry.prices and spot_zone not in zone_ids
        for zone in zone_ids:
            row = {**values, "AvailabilityZone": zone}
            if zone != spot_zone:
                row["SpotPrice"] = ""
            writer.writerow([row[c] for c in layout.columns])
            rows += 1
    notes = usd.notes()
    if unknown_shapes:
        notes.append(f"{unknown_shapes} instance types without a known vCPU/RAM shape: vCPUs and MemoryGiB empty")
    if zoneless:
        notes.append(f"left out, their availability zones not collected: {', '.join(zoneless)}")
    if spot_unplaced:
        notes.append(f"{spot_unplaced} spot prices left out: their zone is not among the type's collected zones")
    if layout.per_zone and merged:
        notes.append("SpotPrice is on the cheapest zone only (the zone gpuprice's spot offer names)")
    return ForeignSheet(buffer.getvalue(), rows, notes)


def _spot_zone(notes: str | None) -> str | None:
    found = _ZONE_ID.search(notes or "")
    return found.group(1) if found else None


def _row(layout: Layout, entry: _Entry, shape: HostShape | None) -> dict[str, str]:
    offer, prices = entry.offer, entry.prices
    count = accelerator_count(offer)
    count = float(count) if layout.count_as_float else count
    storage = INSTANCE_STORAGE.get((offer.provider, offer.sku))
    return {
        "InstanceType": offer.sku,
        "UpstreamCloudId": offer.sku,
        "AcceleratorName": accelerator_name(offer),
        "AcceleratorCount": repr(count),
        "vCPUs": _num(shape.vcpus) if shape else "",
        "MemoryGiB": _num(shape.memory_gib) if shape else "",
        "GpuInfo": layout.gpu_info(offer),
        "Price": _num(prices["on_demand"]) if "on_demand" in prices else "",
        "SpotPrice": _num(prices["spot"]) if "spot" in prices else "",
        "Region": offer.region,
        "AvailabilityZone": "",
        "Arch": shape.arch if shape else "",
        "Generation": (shape.generation or "") if shape else "",
        "LocalDiskType": storage.disk_type if storage else "",
        "NVMeSupported": str(storage.nvme) if storage else "False",
        "LocalDiskSize": _num(storage.disk_size_gb) if storage else "",
        "LocalDiskCount": _num(storage.disk_count) if storage else "",
        "MaximumEfaInterfaces": _num(storage.max_efa_interfaces) if storage and storage.max_efa_interfaces else "",
    }
