"""Reading Cloud Billing Catalog SKUs: which ones price a part of a GPU machine (a GPU of
collectors.gcp.gpus, an A2 / A3 / G2 / N1 vCPU or GiB of RAM, local SSD), for which pricing, at what
price.

`classify` turns one SKU into a `Component` (a part, a pricing, a price, the regions it covers) or
the reason (a SKIP_* string) it is left out. The collector composes machine prices from the
components (collectors.gcp.machines).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from collectors.base import RawResponse
from collectors.errors import ParseError
from collectors.gcp.gpus import BY_ID, accelerator_of
from pricedb.card_names import UnknownGpu, identify
from pricedb.models import Pricing


@dataclass(frozen=True, order=True)
class Part:
    """What a SKU prices: a GPU (`name` its accelerator id), a machine family's vCPU or RAM (`name`
    the family: "a2", "n1"), or local SSD."""

    kind: str  # GPU, CORE, RAM or SSD below
    name: str = ""

    def __str__(self) -> str:
        if self.kind == GPU:
            return BY_ID[self.name].label
        return {CORE: f"{self.name.upper()} vCPU", RAM: f"{self.name.upper()} RAM"}.get(self.kind, "local SSD")


GPU, CORE, RAM, SSD = "gpu", "core", "ram", "ssd"
LOCAL_SSD = Part(SSD)

# The usage unit each kind of part must be billed in; another unit means the catalogue changed under us.
UNITS: dict[str, frozenset[str]] = {
    GPU: frozenset({"h"}),
    CORE: frozenset({"h"}),
    RAM: frozenset({"GiBy.h"}),
    SSD: frozenset({"GiBy.mo", "GiBy.h"}),
}

USAGE = {
    "OnDemand": Pricing.ON_DEMAND,
    "Preemptible": Pricing.SPOT,
    "Commit1Yr": Pricing.RESERVED_1Y,
    "Commit3Yr": Pricing.RESERVED_3Y,
}

# SKUs that look like machine parts but price something else: Dynamic Workload Scheduler
# (flex-start, "Defined Duration") and calendar-mode capacity, reservations, sole-tenant nodes,
# custom machine shapes, premium surcharges, suspended-VM state, Virtual Workstation licences.
EXCLUDED = re.compile(
    r"\b(DWS|Dynamic Workload|Defined Duration|Flex[- ]?start|Calendar|Reserved|Reservation|Sole Tenancy|"
    r"Custom|Premium|VM state|Virtual Workstation)\b",
    re.IGNORECASE,
)
_SPOT = r"(?:Spot Preemptible |Preemptible )?"
# The vCPU and RAM SKUs of the machine families priced here ("N1 Predefined Instance Core running in
# Americas", "G2 Instance Ram running in …", "Commitment v1: A2 Cpu in Americas for 1 Year"). N1's
# commitments are the generic "Commitment v1: Cpu in …" shared with other families: not read.
_HOST = re.compile(
    rf"^(?:{_SPOT}(?P<family>A2|A3|G2|N1 Predefined) Instance (?P<what>Core|Ram) running in "
    r"|Commitment v1: (?P<committed>A2|A3|G2) (?P<cwhat>Cpu|Ram) in )",
    re.IGNORECASE,
)
LOCAL_SSD_SKU = re.compile(r"^(?:SSD backed Local Storage\b|Commitment v1: Local SSD in )", re.IGNORECASE)

SKIP_USAGE = "usage type not OnDemand, Preemptible, Commit1Yr or Commit3Yr"
SKIP_EXCLUDED = "DWS / calendar / reserved / sole-tenancy / custom / premium SKU"
SKIP_OTHER_GPU = "a GPU no machine type here carries"
SKIP_UNKNOWN_GPU = "a GPU the card table does not know"
SKIP_OTHER = "not a part of a GPU machine type"
SKIP_ZERO = "price is not positive"
SKIP_NO_REGION = "no service regions"


@dataclass(frozen=True)
class Component:
    part: Part
    pricing: Pricing
    price: float  # per `unit`, in `currency`
    unit: str
    currency: str
    sku_id: str
    description: str
    regions: tuple[str, ...]
    effective: str
    raw: RawResponse

    def per_hour(self, hours_per_month: float) -> float:
        return self.price / hours_per_month if self.unit.endswith(".mo") else self.price


def _field(item: Mapping[str, Any], path: str, where: str) -> Any:
    value: Any = item
    for name in path.split("."):
        if not isinstance(value, Mapping) or name not in value:
            raise ParseError(f"{where}: no {path!r} in a SKU (has the Cloud Billing Catalog API changed?)")
        value = value[name]
    return value


def _part(group: str, description: str) -> Part | str:
    if group == "GPU":
        accelerator = accelerator_of(description)
        if accelerator is not None:
            return Part(GPU, accelerator.id)
        try:
            identify(description)
        except UnknownGpu:
            return SKIP_UNKNOWN_GPU
        return SKIP_OTHER_GPU
    host = _HOST.match(description)
    if host is not None and group in ("CPU", "RAM"):
        family = (host.group("family") or host.group("committed")).split()[0].lower()
        kind = CORE if (host.group("what") or host.group("cwhat")).lower() in ("core", "cpu") else RAM
        if (kind == CORE) == (group == "CPU"):
            return Part(kind, family)
    if group in ("LocalSSD", "SSD") and LOCAL_SSD_SKU.match(description):
        return LOCAL_SSD
    return SKIP_OTHER


def _pricing(usage: str, description: str) -> Pricing | None:
    pricing = USAGE.get(usage)
    # Some spot SKUs (local SSD "attached to Spot Preemptible VMs") are filed as OnDemand: the
    # description is what says they are spot.
    if pricing is Pricing.ON_DEMAND and "preemptible" in description.lower():
        return Pricing.SPOT
    return pricing


def unit_price(sku: Mapping[str, Any], where: str) -> tuple[float, str, str, str]:
    """(price, usage unit, currency, effectiveTime) of the tier that applies from zero usage, in the
    most recent pricingInfo entry."""
    infos = _field(sku, "pricingInfo", where)
    if not isinstance(infos, list) or not infos:
        raise ParseError(f"{where}: pricingInfo is empty")
    info = max(infos, key=lambda i: str(i.get("effectiveTime", "")) if isinstance(i, Mapping) else "")
    expression = _field(info, "pricingExpression", where)
    rates = _field(expression, "tieredRates", where)
    first = [r for r in rates if isinstance(r, Mapping) and float(r.get("startUsageAmount", 0) or 0) == 0]
    if not first:
        raise ParseError(f"{where}: no tiered rate starts at zero usage")
    money = _field(first[0], "unitPrice", where)
    try:
        # one division, so 2 units + 933908000 nanos is exactly the float 2.933908
        price = (int(money.get("units", 0) or 0) * 10**9 + int(money.get("nanos", 0) or 0)) / 1e9
    except (TypeError, ValueError) as exc:
        raise ParseError(f"{where}: unitPrice {money!r} is not units + nanos") from exc
    return (
        price,
        str(_field(expression, "usageUnit", where)),
        str(_field(money, "currencyCode", where)),
        str(info.get("effectiveTime", "")),
    )


def classify(sku: Mapping[str, Any], raw: RawResponse) -> Component | str:
    """The machine part this SKU prices, or why it is left out (a SKIP_* string)."""
    where = f"{raw.url} SKU {sku.get('skuId', '?')}"
    description = str(_field(sku, "description", where))
    group = str(_field(sku, "category.resourceGroup", where))
    usage = str(_field(sku, "category.usageType", where))
    if group == "GPU" and EXCLUDED.search(description):
        return SKIP_EXCLUDED  # before the card is read: a reserved or DWS GPU is never an unknown one
    part = _part(group, description)
    if not isinstance(part, Part):
        return part
    if EXCLUDED.search(description):
        return SKIP_EXCLUDED
    pricing = _pricing(usage, description)
    if pricing is None:
        return SKIP_USAGE
    price, unit, currency, effective = unit_price(sku, where)
    if unit not in UNITS[part.kind]:
        raise ParseError(
            f"{where}: {description!r} is billed per {unit!r}, expected {'/'.join(sorted(UNITS[part.kind]))}"
        )
    if price <= 0:
        return SKIP_ZERO
    regions = _field(sku, "serviceRegions", where)
    if not isinstance(regions, list) or not regions:
        return SKIP_NO_REGION
    return Component(
        part, pricing, price, unit, currency, str(sku.get("skuId", "?")), description, tuple(map(str, regions)),
        effective, raw,
    )  # fmt: skip


def skus_of(raw: RawResponse) -> list[Mapping[str, Any]]:
    body = raw.json()
    if isinstance(body, dict) and "skus" not in body and "nextPageToken" in body:
        return []  # Google's JSON leaves out empty lists: a page without SKUs
    return raw.json_list("skus", "Cloud Billing Catalog API")


def fetched_at(components: list[Component]) -> datetime:
    return min(c.raw.fetched_at for c in components)
