"""Reading Vast.ai offers: which card an offer is (its `gpu_name` through the card table's names, its
memory from `gpu_ram`), GPU count, country and hourly price, or why it is left out. The collector
(collectors.vast) groups what this module reads."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.errors import ParseError
from collectors.market import sized_card
from pricedb.card_names import GpuSpec, UnknownGpu
from pricedb.cards import MODEL_FACTS
from pricedb.models import Pricing
from pricedb.shapes import host_fields

# Vast's `storage_cost` is USD per GB per 30-day month (CLI help: "storage cost in $/GB/month";
# the console's own `search.diskHour` is storage_cost × disk GB / 720).
HOURS_PER_STORAGE_MONTH = 30 * 24
# The disk every quote includes: enough for the weights and checkpoints of a model that needs
# 60–80 GB of GPU memory. The search asks for it (`allocated_storage`, `disk_space >= …`).
STANDARD_DISK_GB = 100

# Vast `gpu_name`s the card table's names do not read as they are: "A100X" is the A100 80GB PCIe
# converged accelerator (an A100 PCIe with a BlueField DPU on the board).
ALIASES = {"A100X": "A100 PCIe"}
# The name part of the sku where it is not the gpu_name with dashes: "A100 SXM" and "A100 SXM4" are
# the same card, one group.
SKU_NAMES = {"A100 SXM": "A100-SXM4"}
PRICE_FIELD = {Pricing.ON_DEMAND: "dph_base", Pricing.SPOT: "min_bid"}
_REQUIRED = ("gpu_name", "num_gpus", "gpu_ram", "storage_cost", "geolocation")
UNKNOWN_REGION = "unknown"

SKIP_UNKNOWN = "unknown GPU"
SKIP_NO_COUNT = "no GPU count"
SKIP_MEMORY = "gpu_ram not a size the card is sold in"
SKIP_NO_PRICE = "no price"
SKIP_NO_STORAGE = "no storage_cost"
SKIP_FRACTION = "a fraction of a GPU"


@dataclass(frozen=True)
class Group:
    """What offers are grouped by: one stored offer per group and pricing."""

    card: str  # "A100-SXM4", "RTX-4090": the gpu_name with dashes
    memory_gb: float
    gpu_count: int
    region: str  # ISO country code from geolocation, or "unknown"

    @property
    def sku(self) -> str:
        return f"{self.card}-{self.memory_gb:g}GB x{self.gpu_count}"


@dataclass(frozen=True)
class Listing:
    """One host's offer, priced for the standard disk."""

    group: Group
    spec: GpuSpec
    price: float  # USD per hour for the whole offer, disk included
    base: float  # dph_base or min_bid as published
    disk: float  # the standard disk's USD per hour
    storage_cost: float
    offer_id: Any
    machine_id: Any
    where: str  # geolocation as published
    # vcpus / memory_gib: `cpu_cores_effective` (the offer's share of the host's cores, whole ones) and
    # `cpu_ram` (MB, / 1024 = GiB, as SkyPilot's Vast catalog converts it); empty when not given
    host: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def per_gpu(self) -> float:
        return self.price / self.group.gpu_count

    def describe(self, pricing: Pricing) -> str:
        field = PRICE_FIELD[pricing]
        return (
            f"price = {field} {self.base:g} + {STANDARD_DISK_GB} GB disk at {self.storage_cost:g} USD/GB-month "
            f"({self.disk:.4f} USD/h); offer {self.offer_id} on machine {self.machine_id} "
            f"({self.where or 'no location'})"
        )


def country(geolocation: Any) -> str:
    """ "Texas, US" → "US"; "US" → "US"; null, empty or no two-letter code → "unknown"."""
    if not isinstance(geolocation, str):
        return UNKNOWN_REGION
    code = geolocation.rsplit(",", 1)[-1].strip()
    return code.upper() if len(code) == 2 and code.isalpha() else UNKNOWN_REGION


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def read_offer(offer: Mapping[str, Any], pricing: Pricing, where: str) -> Listing | str:
    """The listing an offer stands for, or why it is left out (a SKIP_* string). Raises ParseError
    when a field the search always returns is missing altogether: the API has changed."""
    for name in (*_REQUIRED, PRICE_FIELD[pricing]):
        if name not in offer:
            raise ParseError(f"{where} has no {name!r} field (has the Vast.ai search API changed?)")
    gpu_name = str(offer["gpu_name"]).strip()
    count = _number(offer["num_gpus"])
    if count is None or count < 1 or count != int(count):
        return SKIP_NO_COUNT
    fraction = _number(offer.get("gpu_frac"))
    if fraction is not None and fraction < 1:
        return SKIP_FRACTION
    ram_mb = _number(offer["gpu_ram"])
    if not ram_mb:
        return SKIP_MEMORY
    spec = card_of(gpu_name, ram_mb)
    if isinstance(spec, str):
        return spec
    base = _number(offer[PRICE_FIELD[pricing]])
    if base is None or base <= 0:
        return SKIP_NO_PRICE
    storage_cost = _number(offer["storage_cost"])
    if storage_cost is None or storage_cost < 0:
        return SKIP_NO_STORAGE
    disk = storage_cost * STANDARD_DISK_GB / HOURS_PER_STORAGE_MONTH
    name = SKU_NAMES.get(gpu_name, gpu_name.upper().replace(" ", "-"))
    group = Group(name, spec.memory_gb, int(count), country(offer["geolocation"]))
    return Listing(
        group=group,
        spec=spec,
        price=base + disk,
        base=base,
        disk=disk,
        storage_cost=storage_cost,
        offer_id=offer.get("id"),
        machine_id=offer.get("machine_id"),
        where=str(offer["geolocation"] or ""),
        host=_host(offer),
    )


def card_of(gpu_name: str, ram_mb: float) -> GpuSpec | str:
    """The card of an offer: the model its `gpu_name` names ("RTX 4090", "H100 SXM", "Tesla V100"),
    in the size its `gpu_ram` (MB per GPU, usable: 81559 for an 80GB card) is within 7% of; SKIP_UNKNOWN
    for a name the card table does not know, SKIP_MEMORY for a size the card is not sold in (a modded
    48GB RTX 4090). Never guessed."""
    try:
        spec = sized_card(ALIASES.get(gpu_name, gpu_name), ram_mb / 1024)
    except UnknownGpu:
        return SKIP_UNKNOWN
    return SKIP_MEMORY if spec is None else spec


def _host(offer: Mapping[str, Any]) -> dict[str, Any]:
    cores, ram_mb = _number(offer.get("cpu_cores_effective")), _number(offer.get("cpu_ram"))
    return host_fields(math.floor(cores) if cores else None, ram_mb / 1024 if ram_mb else None)


def plausible(listing: Listing) -> bool:
    """Within its card's plausible USD per GPU-hour band (pricedb.cards.MODEL_FACTS), the same band
    the run-time sanity checks apply: a host outside it is left out of its group, so one odd host
    can neither drag the group's offer out of the band (and get it rejected) nor stand for it."""
    low, high = MODEL_FACTS[listing.spec.model].usd_per_gpu_hour
    return low <= listing.per_gpu <= high
