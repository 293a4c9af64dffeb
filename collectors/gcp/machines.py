"""GPU machine types and how their price is composed from SKU components.

Google does not price a VM: it prices its parts. A GPU machine's hourly price is

    GPUs × GPU SKU + vCPUs × family core SKU + GiB × family RAM SKU (+ local SSD GB × SSD SKU ÷ 730)

with every part taken from the same pricing (on-demand, spot or a commitment) in the same region.
A machine type is offered in a region and pricing only when every one of its parts is priced there:
mixing a spot GPU with an on-demand host, or a DWS GPU with anything, would make up a price nobody
is charged.

The shapes are Google's published ones ("Accelerator-optimized machine family",
https://cloud.google.com/compute/docs/accelerator-optimized-machines: A2 with A100 40GB / 80GB, A3
High with H100 80GB, G2 with L4). a2-ultragpu and a3-highgpu types come with local SSD (375 GB per
disk) that is billed with them (gpuhunt `local_ssd_sizes_gib` adds it the same way); a2-highgpu,
a2-megagpu and g2 have none bundled.

N1 VMs take GPUs attached by the user (https://cloud.google.com/compute/docs/gpus: T4, P100, P4 ×
1/2/4, V100 × 1/2/4/8): the host is the user's choice, so each count is offered on one stated host,
n1-standard with 4 vCPUs (15 GiB) per GPU, within every GPU's vCPU limit; the SKU says both
("n1-standard-8+2xnvidia-tesla-t4") and the notes spell the host out.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.gcp.gpus import ACCELERATORS, BY_ID
from collectors.gcp.skus import CORE, GPU, LOCAL_SSD, RAM, SSD, Component, Part
from pricedb.models import Pricing


@dataclass(frozen=True)
class MachineType:
    name: str
    gpus: int
    accelerator: str  # collectors.gcp.gpus id
    family: str  # whose core and RAM SKUs price the host: "a2", "a3", "g2", "n1"
    vcpus: int
    ram_gib: float
    local_ssd_gb: int = 0

    @property
    def gpu(self) -> Part:
        return Part(GPU, self.accelerator)

    def parts(self) -> dict[Part, float]:
        """Quantity of each part (GPUs, vCPUs, GiB of RAM, GB of local SSD)."""
        quantities = {
            self.gpu: float(self.gpus),
            Part(CORE, self.family): float(self.vcpus),
            Part(RAM, self.family): self.ram_gib,
        }
        if self.local_ssd_gb:
            quantities[LOCAL_SSD] = float(self.local_ssd_gb)
        return quantities


A100_40, A100_80, H100, L4 = "nvidia-tesla-a100", "nvidia-a100-80gb", "nvidia-h100-80gb", "nvidia-l4"
N1_VCPUS_PER_GPU = 4
MACHINE_TYPES: tuple[MachineType, ...] = (
    MachineType("a2-highgpu-1g", 1, A100_40, "a2", 12, 85),
    MachineType("a2-highgpu-2g", 2, A100_40, "a2", 24, 170),
    MachineType("a2-highgpu-4g", 4, A100_40, "a2", 48, 340),
    MachineType("a2-highgpu-8g", 8, A100_40, "a2", 96, 680),
    MachineType("a2-megagpu-16g", 16, A100_40, "a2", 96, 1360),
    MachineType("a2-ultragpu-1g", 1, A100_80, "a2", 12, 170, 375),
    MachineType("a2-ultragpu-2g", 2, A100_80, "a2", 24, 340, 750),
    MachineType("a2-ultragpu-4g", 4, A100_80, "a2", 48, 680, 1500),
    MachineType("a2-ultragpu-8g", 8, A100_80, "a2", 96, 1360, 3000),
    MachineType("a3-highgpu-1g", 1, H100, "a3", 26, 234, 750),
    MachineType("a3-highgpu-2g", 2, H100, "a3", 52, 468, 1500),
    MachineType("a3-highgpu-4g", 4, H100, "a3", 104, 936, 3000),
    MachineType("a3-highgpu-8g", 8, H100, "a3", 208, 1872, 6000),
    *(MachineType(f"g2-standard-{v}", n, L4, "g2", v, 4 * v) for v, n in
      ((4, 1), (8, 1), (12, 1), (16, 1), (24, 2), (32, 1), (48, 4), (96, 8))),
    *(MachineType(f"n1-standard-{N1_VCPUS_PER_GPU * n}+{n}x{a.id}", n, a.id, "n1", N1_VCPUS_PER_GPU * n,
                  3.75 * N1_VCPUS_PER_GPU * n) for a in ACCELERATORS for n in a.attach_counts),
)  # fmt: skip

# What each kind of part's quantity is called in the composition notes (a GPU: its accelerator's label).
_LABEL = {CORE: "vCPU", RAM: "GiB", SSD: "GB local SSD"}
_USAGE_WORDS = {
    Pricing.ON_DEMAND: "on-demand",
    Pricing.SPOT: "Spot (preemptible; Google may change Spot prices up to once every 30 days)",
    Pricing.RESERVED_1Y: "1-year resource-based committed use: the hourly rate is paid for every hour of the term",
    Pricing.RESERVED_3Y: "3-year resource-based committed use: the hourly rate is paid for every hour of the term",
}

Table = dict[tuple[str, Pricing, Part], Component]


@dataclass(frozen=True)
class Composition:
    machine: MachineType
    region: str
    pricing: Pricing
    price: float  # per hour
    currency: str
    components: tuple[tuple[Component, float], ...]  # (component, quantity)
    notes: str


def _num(value: float) -> str:
    return f"{value:.10g}"


def compose(machine: MachineType, region: str, pricing: Pricing, table: Table, hours_per_month: float) -> (
    Composition | list[Part]
):  # fmt: skip
    """The machine's hourly price from its parts in one region and pricing, or the parts missing."""
    found: list[tuple[Component, float]] = []
    missing: list[Part] = []
    for part, quantity in machine.parts().items():
        component = table.get((region, pricing, part))
        if component is None:
            missing.append(part)
        else:
            found.append((component, quantity))
    if missing:
        return missing
    currencies = {c.currency for c, _ in found}
    if len(currencies) != 1:
        return []  # parts priced in different currencies cannot be added up; never seen, never guessed
    price = sum(c.per_hour(hours_per_month) * quantity for c, quantity in found)
    terms = []
    for component, quantity in found:
        part = component.part
        label = BY_ID[part.name].label if part.kind == GPU else _LABEL[part.kind]
        if part.kind == GPU:
            terms.append(f"{quantity:g} × {label} {_num(component.price)}")
        elif component.unit.endswith(".mo"):
            terms.append(f"{quantity:g} {label} × {_num(component.price)}/GB-month ÷ {hours_per_month:g}")
        else:
            terms.append(f"{quantity:g} {label} × {_num(component.price)}")
    currency = currencies.pop()
    skus = ", ".join(f"{c.sku_id} {c.description!r}" for c, _ in found)
    host = f"; the host is n1-standard-{machine.vcpus}, one choice of many" if machine.family == "n1" else ""
    notes = (
        f"{' + '.join(terms)} = {price:.6f} {currency}/h ({_USAGE_WORDS[pricing]}); "
        f"Google prices the parts, not the machine{host}: SKUs {skus}"
    )
    return Composition(machine, region, pricing, price, currency, tuple(found), notes)


def build_table(components: list[Component], wanted_regions: set[str] | None) -> tuple[Table, list[str]]:
    """(region, pricing, part) → the component that prices it, and notes on conflicts. When two SKUs
    price the same part in the same region (a multi-regional "Americas" SKU and a regional one), the
    one covering fewer regions is the more specific and wins."""
    table: Table = {}
    notes: list[str] = []
    for component in components:
        for region in component.regions:
            if wanted_regions is not None and region not in wanted_regions:
                continue
            key = (region, component.pricing, component.part)
            held = table.get(key)
            if held is None or len(component.regions) < len(held.regions):
                if held is not None:
                    notes.append(
                        f"{region} {component.pricing.value} {component.part}: {component.sku_id} over {held.sku_id}"
                    )
                table[key] = component
    return table, notes
