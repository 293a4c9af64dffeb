"""SkyPilot catalog `vms.csv` per cloud, so SkyPilot reads gpuprice's prices unmodified.

Each cloud's catalog has its own column set and conventions, taken from the published catalogs
(skypilot-org/skypilot-catalog `catalogs/v8/<cloud>/vms.csv`, Azure `v6`) and the fetchers that
write them (skypilot-org/skypilot `sky/catalog/data_fetchers/fetch_<cloud>.py`). Common to all: one
row per (instance type, region) with the on-demand `Price` and the `SpotPrice` (empty when there is
none; `Price` empty when only spot is offered) in USD per instance-hour, and `GpuInfo`, the dict
SkyPilot's reader parses with `ast.literal_eval` (`Gpus[0].MemoryInfo.SizeInMiB` per GPU,
`TotalGpuMemoryInMiB` the true total for all GPUs — SkyPilot's own Lambda and Vast fetchers write the
per-GPU figure there; the issue asks for the total). Per cloud:

- **aws** (`fetch_aws.py` USEFUL_COLUMNS): `…, Region, AvailabilityZone, Arch`; `AcceleratorCount`
  a float (`8.0`). SkyPilot has one row per availability zone; gpuprice knows regions only, so
  `AvailabilityZone` is empty.
- **azure** (`fetch_azure.py`): `…, Region, Generation`; `AcceleratorCount` an integer. (SkyPilot's
  own Azure fetcher writes a bare accelerator name in `GpuInfo`, which its reader cannot parse; the
  dict form written here is the one the reader understands.)
- **lambda** (`fetch_lambda_cloud.py`): `InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
  MemoryGiB, Price, Region, GpuInfo, SpotPrice`; counts and sizes as floats; `GpuInfo` names the GPU
  as the accelerator (`A100-80GB`) with a float `Count`; no spot market, so `SpotPrice` is empty.
- **verda** (`fetch_verda.py`): `InstanceType, UpstreamCloudId, vCPUs, MemoryGiB, AcceleratorName,
  AcceleratorCount, GpuInfo, Region, Price, SpotPrice`; A100s are always named with their memory
  (`A100-80GB`, `A100-40GB`); `GpuInfo` is JSON (double quotes, no `Manufacturer`, integer `Count`),
  which `ast.literal_eval` reads too; `UpstreamCloudId` repeats the instance type.

Refused (`SKYPILOT_UNSUPPORTED`, each with the reason the API answers): gcp, runpod, vast, oci.
Shapes: the offer's own (from its source), else pricedb.shapes' table; unknown → empty cells.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pricedb.cards import MODEL_FACTS
from pricedb.formats.foreign import HOURLY, ForeignSheet, UsdPricer
from pricedb.fx import FxTable
from pricedb.queries import Offer
from pricedb.shapes import HostShape, host_shape

_BASE = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
         "SpotPrice", "Region")  # fmt: skip


def _num(value: float | int) -> str:
    return repr(float(value))


def skypilot_accelerator_name(model: str, memory_gb: float) -> str:
    """SkyPilot's names: the model's smallest size is the bare name (`A100`), others carry it (`A100-80GB`)."""
    facts = MODEL_FACTS.get(model)
    if facts is None or memory_gb == min(facts.memory_sizes_gb):
        return model
    return f"{model}-{memory_gb:g}GB"


def verda_accelerator_name(model: str, memory_gb: float) -> str:
    """Verda's catalog names every A100 with its memory (`A100-40GB` too); other GPUs as SkyPilot does."""
    return f"{model}-{memory_gb:g}GB" if model == "A100" else skypilot_accelerator_name(model, memory_gb)


def _per_gpu_mib(offer: Offer) -> int:
    return round(offer.gpu_memory_gb * 1024)


def _gpu_info_dict(offer: Offer, name: str, count: float | int, manufacturer: bool) -> dict[str, Any]:
    gpu: dict[str, Any] = {"Name": name}
    if manufacturer:
        gpu["Manufacturer"] = "NVIDIA"
    gpu.update(Count=count, MemoryInfo={"SizeInMiB": _per_gpu_mib(offer)})
    return {"Gpus": [gpu], "TotalGpuMemoryInMiB": _per_gpu_mib(offer) * offer.gpu_count}


def skypilot_gpu_info(offer: Offer) -> str:
    """AWS and Azure: the GPU model as `Name`, an integer count, a Python literal."""
    return repr(_gpu_info_dict(offer, offer.gpu_model, offer.gpu_count, manufacturer=True))


def _lambda_gpu_info(offer: Offer) -> str:
    name = skypilot_accelerator_name(offer.gpu_model, offer.gpu_memory_gb)
    return repr(_gpu_info_dict(offer, name, float(offer.gpu_count), manufacturer=True))


def _verda_gpu_info(offer: Offer) -> str:
    name = verda_accelerator_name(offer.gpu_model, offer.gpu_memory_gb)
    return json.dumps(_gpu_info_dict(offer, name, offer.gpu_count, manufacturer=False))


@dataclass(frozen=True)
class Layout:
    columns: tuple[str, ...]
    gpu_info: Callable[[Offer], str]
    accelerator: Callable[[str, float], str] = skypilot_accelerator_name
    count_as_float: bool = True


_LAMBDA = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "Region", "GpuInfo",
           "SpotPrice")  # fmt: skip
_VERDA = ("InstanceType", "UpstreamCloudId", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount", "GpuInfo",
          "Region", "Price", "SpotPrice")  # fmt: skip
LAYOUTS: dict[str, Layout] = {
    "aws": Layout((*_BASE, "AvailabilityZone", "Arch"), skypilot_gpu_info),
    "azure": Layout((*_BASE, "Generation"), skypilot_gpu_info, count_as_float=False),
    "lambda": Layout(_LAMBDA, _lambda_gpu_info),
    "verda": Layout(_VERDA, _verda_gpu_info, accelerator=verda_accelerator_name),
}
SKYPILOT_COLUMNS: dict[str, list[str]] = {cloud: list(layout.columns) for cloud, layout in LAYOUTS.items()}

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


def skypilot_vms_csv(offers: Iterable[Offer], cloud: str, fx: FxTable) -> ForeignSheet:
    layout = LAYOUTS[cloud]
    usd = UsdPricer(fx)
    merged: dict[tuple[str, str], dict[str, Offer | float]] = {}
    for offer in offers:
        if offer.provider != cloud or offer.pricing not in HOURLY:
            continue
        price = usd(offer)
        if price is None:
            continue
        entry = merged.setdefault((offer.sku, offer.region), {})
        entry[offer.pricing] = price
        if "offer" not in entry or offer.pricing == "on_demand":
            entry["offer"] = offer
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(layout.columns)
    unknown_shapes = 0
    for key in sorted(merged):
        entry = merged[key]
        offer = entry["offer"]
        assert isinstance(offer, Offer)
        shape = host_shape(offer)
        unknown_shapes += shape is None
        values = _row(layout, offer, shape, entry)
        writer.writerow([values[c] for c in layout.columns])
    notes = usd.notes()
    if unknown_shapes:
        notes.append(f"{unknown_shapes} instance types without a known vCPU/RAM shape: vCPUs and MemoryGiB empty")
    if "AvailabilityZone" in layout.columns and merged:
        notes.append("AvailabilityZone is empty: gpuprice records prices per region, not per zone")
    return ForeignSheet(buffer.getvalue(), len(merged), notes)


def _row(layout: Layout, offer: Offer, shape: HostShape | None, entry: dict[str, Offer | float]) -> dict[str, str]:
    count = float(offer.gpu_count) if layout.count_as_float else offer.gpu_count
    prices = {pricing: value for pricing, value in entry.items() if not isinstance(value, Offer)}
    return {
        "InstanceType": offer.sku,
        "UpstreamCloudId": offer.sku,
        "AcceleratorName": layout.accelerator(offer.gpu_model, offer.gpu_memory_gb),
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
    }
