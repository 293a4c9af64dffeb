"""Host shapes (vCPUs and RAM) of the GPU instance types gpuprice knows, for the catalog formats
that need them (SkyPilot's `vCPUs`/`MemoryGiB`, gpuhunt's required `cpu`/`memory`).

Price sources do not carry these figures, so they are kept here, per (provider, instance type).
Values are the public figures in SkyPilot's published catalogs (skypilot-org/skypilot-catalog,
`catalogs/v8/aws/vms.csv`, `catalogs/v6/azure/vms.csv`, `catalogs/v8/gcp/vms.csv`), which take them
from the clouds' own APIs (EC2 DescribeInstanceTypes, Azure `az vm list-skus`, GCE machine types).
An instance type missing here has an unknown shape: it is written with empty vCPUs/RAM where the
format allows that (SkyPilot) and left out where it does not (gpuhunt), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass


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


def shape_of(provider: str, sku: str) -> HostShape | None:
    return SHAPES.get((provider, sku))
