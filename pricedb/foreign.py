"""The price sheet in other tools' catalog formats, so they read gpuprice's data unmodified.

- **SkyPilot** `vms.csv` per cloud (skypilot-org/skypilot `sky/catalog/data_fetchers/fetch_<cloud>.py`
  `USEFUL_COLUMNS`; published as skypilot-org/skypilot-catalog `catalogs/v8/<cloud>/vms.csv`): one
  row per (instance type, region) with the on-demand `Price` and the `SpotPrice` (empty when there
  is none) in USD per instance-hour; `GpuInfo` is the Python-literal dict SkyPilot's reader parses
  with `ast.literal_eval` (`Gpus[0].MemoryInfo.SizeInMiB` per GPU, `TotalGpuMemoryInMiB` for all).
  Where SkyPilot has one row per availability zone (AWS), gpuprice knows regions only, so
  `AvailabilityZone` is empty. (SkyPilot's own Azure fetcher writes a bare accelerator name in
  `GpuInfo`, which its reader cannot parse and then reports no device memory for the whole cloud;
  the dict form written here for every cloud is the one that reader understands.)
- **gpuhunt** catalog CSV per provider (dstackai/gpuhunt `src/gpuhunt/_internal/storage.py`
  `CATALOG_V2_FIELDS`, read by `storage.load`): one row per offer, `price` in USD per hour, `spot`
  as `True`/`False`, `gpu_memory` in GB per GPU, `cpu`/`memory` required (rows whose host shape is
  unknown are left out rather than guessed).

Both formats are hourly rentals in USD: only on-demand and spot offers are written; a price in
another currency is converted with the ECB reference rate of its FX date (the notes say so).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from pricedb.fx import FxTable
from pricedb.gpus import MODEL_FACTS
from pricedb.queries import Offer
from pricedb.shapes import shape_of
from pricedb.sheet import iso_utc

HOURLY = ("on_demand", "spot")

_SKYPILOT_BASE = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo",
                  "Price", "SpotPrice", "Region"]  # fmt: skip
SKYPILOT_COLUMNS: dict[str, list[str]] = {
    "aws": [*_SKYPILOT_BASE, "AvailabilityZone", "Arch"],
    "azure": [*_SKYPILOT_BASE, "Generation"],
}
SKYPILOT_UNSUPPORTED = {
    "gcp": "SkyPilot's GCP catalog prices the host (vCPU+RAM) and the GPUs in separate rows; gpuprice stores "
    "whole-instance prices, so it cannot write that layout faithfully",
}

GPUHUNT_COLUMNS = ["instance_name", "location", "price", "cpu", "memory", "gpu_count", "gpu_name", "gpu_memory",
                   "spot", "disk_size", "gpu_vendor", "flags", "cpu_arch", "provider_data"]  # fmt: skip


@dataclass
class ForeignSheet:
    text: str
    rows: int
    notes: list[str] = field(default_factory=list)


class UsdPricer:
    """USD per instance-hour for an offer, converting other currencies through the ECB rates."""

    def __init__(self, fx: FxTable) -> None:
        self.fx = fx
        self.converted: set[str] = set()
        self.unconvertible = 0

    def __call__(self, offer: Offer) -> float | None:
        if offer.currency == "USD" and offer.unit == "hour":
            return offer.price
        if offer.cny_per_hour is not None:
            rate = self.fx.to_cny("USD", offer.fx_date or offer.observed_at.date())
            if rate is not None:
                self.converted.add(f"{offer.currency}/{offer.unit}")
                return round(offer.cny_per_hour / rate.rate, 6)
        self.unconvertible += 1
        return None

    def notes(self) -> list[str]:
        notes = []
        if self.converted:
            notes.append(
                f"converted to USD per hour via CNY with ECB reference rates: {', '.join(sorted(self.converted))}"
            )
        if self.unconvertible:
            notes.append(f"{self.unconvertible} offers left out: no USD rate known for their currency")
        return notes


def _num(value: float | int) -> str:
    return repr(float(value))


def skypilot_accelerator_name(model: str, memory_gb: float) -> str:
    """SkyPilot's names: the model's smallest size is the bare name (`A100`), others carry it (`A100-80GB`)."""
    facts = MODEL_FACTS.get(model)
    if facts is None or memory_gb == min(facts.memory_sizes_gb):
        return model
    return f"{model}-{memory_gb:g}GB"


def skypilot_gpu_info(offer: Offer) -> str:
    per_gpu_mib = round(offer.gpu_memory_gb * 1024)
    info = {
        "Gpus": [{"Name": offer.gpu_model, "Manufacturer": "NVIDIA", "Count": offer.gpu_count,
                  "MemoryInfo": {"SizeInMiB": per_gpu_mib}}],
        "TotalGpuMemoryInMiB": per_gpu_mib * offer.gpu_count,
    }  # fmt: skip
    return repr(info)


def skypilot_vms_csv(offers: Iterable[Offer], cloud: str, fx: FxTable) -> ForeignSheet:
    columns = SKYPILOT_COLUMNS[cloud]
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
    writer.writerow(columns)
    unknown_shapes = 0
    for key in sorted(merged):
        entry = merged[key]
        offer = entry["offer"]
        assert isinstance(offer, Offer)
        shape = shape_of(offer.provider, offer.sku)
        unknown_shapes += shape is None
        count = float(offer.gpu_count) if cloud == "aws" else offer.gpu_count
        values = {
            "InstanceType": offer.sku,
            "AcceleratorName": skypilot_accelerator_name(offer.gpu_model, offer.gpu_memory_gb),
            "AcceleratorCount": repr(count),
            "vCPUs": _num(shape.vcpus) if shape else "",
            "MemoryGiB": _num(shape.memory_gib) if shape else "",
            "GpuInfo": skypilot_gpu_info(offer),
            "Price": _num(entry["on_demand"]) if "on_demand" in entry else "",  # type: ignore[arg-type]
            "SpotPrice": _num(entry["spot"]) if "spot" in entry else "",  # type: ignore[arg-type]
            "Region": offer.region,
            "AvailabilityZone": "",
            "Arch": shape.arch if shape else "",
            "Generation": (shape.generation or "") if shape else "",
        }
        writer.writerow([values[c] for c in columns])
    notes = usd.notes()
    if unknown_shapes:
        notes.append(f"{unknown_shapes} instance types without a known vCPU/RAM shape: vCPUs and MemoryGiB empty")
    if cloud == "aws" and merged:
        notes.append("AvailabilityZone is empty: gpuprice records prices per region, not per zone")
    return ForeignSheet(buffer.getvalue(), len(merged), notes)


def gpuhunt_csv(offers: Iterable[Offer], provider: str, fx: FxTable) -> ForeignSheet:
    usd = UsdPricer(fx)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=GPUHUNT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    rows = no_shape = 0
    for offer in sorted((o for o in offers if o.provider == provider and o.pricing in HOURLY), key=lambda o: o.key):
        shape = shape_of(offer.provider, offer.sku)
        if shape is None:
            no_shape += 1
            continue
        price = usd(offer)
        if price is None:
            continue
        data = {"pricing": offer.pricing, "observed_at": iso_utc(offer.observed_at), "source_url": offer.source_url}
        writer.writerow(
            {
                "instance_name": offer.sku,
                "location": offer.region,
                "price": repr(float(price)),
                "cpu": str(shape.vcpus),
                "memory": repr(float(shape.memory_gib)),
                "gpu_count": str(offer.gpu_count),
                "gpu_name": offer.gpu_model,
                "gpu_memory": repr(float(offer.gpu_memory_gb)),
                "spot": str(offer.pricing == "spot"),
                "disk_size": "",
                "gpu_vendor": "nvidia",
                "flags": "",
                "cpu_arch": "arm" if shape.arch in ("arm64", "aarch64") else "x86",
                "provider_data": json.dumps(data, sort_keys=True),
            }
        )
        rows += 1
    notes = usd.notes()
    if no_shape:
        notes.append(f"{no_shape} offers left out: their vCPU/RAM shape is unknown and gpuhunt requires it")
    return ForeignSheet(buffer.getvalue(), rows, notes)
