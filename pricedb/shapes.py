"""Host shapes (vCPUs and RAM) of GPU offers, for the catalog formats that need them (SkyPilot's
`vCPUs`/`MemoryGiB`, gpuhunt's required `cpu`/`memory`) and the price sheet's last columns.

An offer's own shape comes first: collectors store what the source publishes (Lambda `specs`,
Verda `cpu`/`memory`, Aliyun `CpuCoreCount`/`MemorySize`, …) in the quote's `vcpus` and
`memory_gib` (`host_fields` reads a source's figures). Price APIs that do not publish it (AWS spot,
Azure retail prices, GCP SKUs) fall back to the table below, per (provider, instance type). Its
values are the public figures in SkyPilot's published catalogs (skypilot-org/skypilot-catalog,
`catalogs/v8/aws/vms.csv`, `catalogs/v6/azure/vms.csv`, `catalogs/v8/gcp/vms.csv`), which take them
from the clouds' own APIs (EC2 DescribeInstanceTypes, Azure `az vm list-skus`, GCE machine types).
An offer with neither has an unknown shape: written with empty vCPUs/RAM where the format allows
that (SkyPilot, the price sheet) and left out where it does not (gpuhunt), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class HostShape:
    vcpus: int
    memory_gib: float
    arch: str = "x86_64"  # SkyPilot's `Arch` (AWS); gpuhunt's cpu_arch is "x86" for it
    generation: str | None = None  # Azure Hyper-V generation (SkyPilot's `Generation`)


_AZURE_V2 = "V2"

SHAPES: dict[tuple[str, str], HostShape] = {
    ("aws", "p4d.24xlarge"): HostShape(96, 1152.0),
    ("aws", "p4de.24xlarge"): HostShape(96, 1152.0),
    ("azure", "Standard_NC24ads_A100_v4"): HostShape(24, 220.0, generation=_AZURE_V2),
    ("azure", "Standard_NC48ads_A100_v4"): HostShape(48, 440.0, generation=_AZURE_V2),
    ("azure", "Standard_NC96ads_A100_v4"): HostShape(96, 880.0, generation=_AZURE_V2),
    ("azure", "Standard_ND96asr_v4"): HostShape(96, 900.0, generation=_AZURE_V2),
    ("azure", "Standard_ND96amsr_A100_v4"): HostShape(96, 1800.0, generation=_AZURE_V2),
    ("gcp", "a2-highgpu-1g"): HostShape(12, 85.0),
    ("gcp", "a2-highgpu-2g"): HostShape(24, 170.0),
    ("gcp", "a2-highgpu-4g"): HostShape(48, 340.0),
    ("gcp", "a2-highgpu-8g"): HostShape(96, 680.0),
    ("gcp", "a2-megagpu-16g"): HostShape(96, 1360.0),
    ("gcp", "a2-ultragpu-1g"): HostShape(12, 170.0),
    ("gcp", "a2-ultragpu-2g"): HostShape(24, 340.0),
    ("gcp", "a2-ultragpu-4g"): HostShape(48, 680.0),
    ("gcp", "a2-ultragpu-8g"): HostShape(96, 1360.0),
}


@dataclass(frozen=True, slots=True)
class InstanceStorage:
    """An instance type's local disks and EFA interfaces: what SkyPilot's AWS catalog says in
    `LocalDiskType`, `LocalDiskSize` (GB per disk), `LocalDiskCount`, `NVMeSupported` and
    `MaximumEfaInterfaces` (its fetcher reads them from EC2 DescribeInstanceTypes)."""

    disk_type: str  # "ssd" | "hdd"
    disk_size_gb: float
    disk_count: int
    nvme: bool  # NVMe required (SkyPilot's NVMeSupported)
    max_efa_interfaces: int | None


# AWS's P4 page (https://aws.amazon.com/ec2/instance-types/p4/): p4d and p4de carry 8 x 1000 GB NVMe
# SSD instance storage and 4 x 100 Gbps EFA. Types not listed: empty disk cells (SkyPilot then treats
# them as having no local disk), never guessed.
INSTANCE_STORAGE: dict[tuple[str, str], InstanceStorage] = {
    ("aws", "p4d.24xlarge"): InstanceStorage("ssd", 1000.0, 8, True, 4),
    ("aws", "p4de.24xlarge"): InstanceStorage("ssd", 1000.0, 8, True, 4),
}


class Shaped(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def sku(self) -> str: ...
    @property
    def vcpus(self) -> int | None: ...
    @property
    def memory_gib(self) -> float | None: ...


def shape_of(provider: str, sku: str) -> HostShape | None:
    """The table's shape for an instance type, if it knows it."""
    return SHAPES.get((provider, sku))


def host_shape(offer: Shaped) -> HostShape | None:
    """The offer's own shape (as its source published it), else the table's, else None. The table
    still supplies what sources never say (AWS `Arch`, Azure `Generation`) for types it knows."""
    known = shape_of(offer.provider, offer.sku)
    if offer.vcpus is None or offer.memory_gib is None:
        return known
    if known is None:
        return HostShape(offer.vcpus, offer.memory_gib)
    return HostShape(offer.vcpus, offer.memory_gib, known.arch, known.generation)


def _positive(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not value > 0 or value == float("inf"):
        return None
    return float(value)


def host_fields(vcpus: Any, memory_gib: Any) -> dict[str, Any]:
    """Quote fields for a host shape as a source publishes it: both figures when both are positive
    numbers (and the vCPU count whole), else none — the shape is then unknown, which is not an error:
    a missing shape never fails a price run."""
    cores, memory = _positive(vcpus), _positive(memory_gib)
    if cores is None or memory is None or cores != int(cores):
        return {}
    return {"vcpus": int(cores), "memory_gib": round(memory, 3)}
