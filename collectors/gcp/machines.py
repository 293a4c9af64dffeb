"""A2 machine types and how their price is composed from SKU components.

Google does not price a VM: it prices its parts. An A2 machine's hourly price is

    GPUs × GPU SKU + vCPUs × "A2 Instance Core" + GiB × "A2 Instance Ram" (+ local SSD GB × SSD SKU ÷ 730)

with every part taken from the same pricing (on-demand, spot or a commitment) in the same region.
A machine type is offered in a region and pricing only when every one of its parts is priced there:
mixing a spot GPU with an on-demand host, or a DWS GPU with anything, would make up a price nobody
is charged.

The table below is Google's published shape of each machine type ("Accelerator-optimized machine
family", https://cloud.google.com/compute/docs/accelerator-optimized-machines#a2-vms). a2-ultragpu
types come with local SSD (375 GB per GPU) that is billed with them (gpuhunt `local_ssd_sizes_gib`
adds it the same way); a2-highgpu and a2-megagpu have none.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.gcp.skus import Component, Part
from pricedb.models import Pricing


@dataclass(frozen=True)
class MachineType:
    name: str
    gpus: int
    gpu: Part
    vcpus: int
    ram_gib: float
    local_ssd_gb: int = 0

    def parts(self) -> dict[Part, float]:
        """Quantity of each part (GPUs, vCPUs, GiB of RAM, GB of local SSD)."""
        quantities = {self.gpu: float(self.gpus), Part.CORE: float(self.vcpus), Part.RAM: self.ram_gib}
        if self.local_ssd_gb:
            quantities[Part.SSD] = float(self.local_ssd_gb)
        return quantities


MACHINE_TYPES: tuple[MachineType, ...] = (
    MachineType("a2-highgpu-1g", 1, Part.GPU40, 12, 85),
    MachineType("a2-highgpu-2g", 2, Part.GPU40, 24, 170),
    MachineType("a2-highgpu-4g", 4, Part.GPU40, 48, 340),
    MachineType("a2-highgpu-8g", 8, Part.GPU40, 96, 680),
    MachineType("a2-megagpu-16g", 16, Part.GPU40, 96, 1360),
    MachineType("a2-ultragpu-1g", 1, Part.GPU80, 12, 170, 375),
    MachineType("a2-ultragpu-2g", 2, Part.GPU80, 24, 340, 750),
    MachineType("a2-ultragpu-4g", 4, Part.GPU80, 48, 680, 1500),
    MachineType("a2-ultragpu-8g", 8, Part.GPU80, 96, 1360, 3000),
)

# What each part's quantity is called in the composition notes.
_LABEL = {
    Part.GPU40: "A100 40GB GPU",
    Part.GPU80: "A100 80GB GPU",
    Part.CORE: "vCPU",
    Part.RAM: "GiB",
    Part.SSD: "GB local SSD",
}
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
        label = _LABEL[component.part]
        if component.part in (Part.GPU40, Part.GPU80):
            terms.append(f"{quantity:g} × {label} {_num(component.price)}")
        elif component.unit.endswith(".mo"):
            terms.append(f"{quantity:g} {label} × {_num(component.price)}/GB-month ÷ {hours_per_month:g}")
        else:
            terms.append(f"{quantity:g} {label} × {_num(component.price)}")
    currency = currencies.pop()
    skus = ", ".join(f"{c.sku_id} {c.description!r}" for c, _ in found)
    notes = (
        f"{' + '.join(terms)} = {price:.6f} {currency}/h ({_USAGE_WORDS[pricing]}); "
        f"Google prices the parts, not the machine: SKUs {skus}"
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
