"""Reading the three ECS answers, purely: instance types, stock, prices.

Shapes (field names as in Alibaba Cloud's API reference and its SDK models, `alibabacloud_ecs20140526`):

- DescribeInstanceTypes: `{"RequestId", "NextToken", "InstanceTypes": {"InstanceType": [{"InstanceTypeId",
  "InstanceTypeFamily", "CpuCoreCount", "MemorySize", "GPUAmount", "GPUSpec", "GPUMemorySize", …}]}}`;
  `GPUMemorySize` is GiB per GPU.
- DescribeAvailableResource (`DestinationResource=InstanceType`): `{"RequestId", "AvailableZones":
  {"AvailableZone": [{"RegionId", "ZoneId", "Status", "StatusCategory", "AvailableResources":
  {"AvailableResource": [{"Type": "InstanceType", "SupportedResources": {"SupportedResource": [{"Value",
  "Status", "StatusCategory"}]}}]}}]}}`. `Status` is Available / SoldOut; `StatusCategory` is WithStock,
  ClosedWithStock (stock left, not replenished), WithoutStock or ClosedWithoutStock.
- DescribePrice: `{"RequestId", "PriceInfo": {"Price": {"OriginalPrice", "DiscountPrice", "TradePrice",
  "Currency", "DetailInfos": {"DetailInfo": [{"Resource", "OriginalPrice", "DiscountPrice", "TradePrice",
  "SubRules"}]}}, "Rules": {"Rule": [{"RuleId", "Description"}]}}}`. The order's total includes the
  default system disk; the `InstanceType` detail is the instance alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collectors.aliyun.api import json_object
from collectors.aliyun.instance_types import Skipped, card_of
from collectors.base import RawResponse
from collectors.errors import ParseError
from pricedb.card_names import GpuSpec
from pricedb.shapes import host_fields

IN_STOCK = frozenset({"WithStock", "ClosedWithStock", "Available"})
OUT_OF_STOCK = frozenset({"WithoutStock", "ClosedWithoutStock", "SoldOut"})


@dataclass(frozen=True)
class InstanceType:
    sku: str
    family: str
    spec: GpuSpec  # the whole card (collectors.aliyun.instance_types)
    gpu_count: int
    vcpus: int | None
    memory_gib: float | None

    def quote_fields(self) -> dict[str, object]:
        return {**self.spec.quote_fields(), "gpu_count": self.gpu_count, **host_fields(self.vcpus, self.memory_gib)}


@dataclass
class Catalogue:
    """What DescribeInstanceTypes described: the whole-card types to price, and the GPU types not
    collected with why (vGPU slices, cards the table does not know)."""

    types: dict[str, InstanceType] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # sku -> why

    def notes(self) -> list[str]:
        """One note per reason, naming its types: "unknown GPU, not collected: … (2 types: a, b)"."""
        by_why: dict[str, list[str]] = {}
        for sku, why in sorted(self.skipped.items()):
            by_why.setdefault(why, []).append(sku)
        return [
            f"{why} ({len(skus)} type{'s' if len(skus) > 1 else ''}: {', '.join(skus)})" for why, skus in by_why.items()
        ]


@dataclass(frozen=True)
class ZoneStock:
    zone: str
    status: str  # StatusCategory when given, else Status

    @property
    def in_stock(self) -> bool:
        return self.status in IN_STOCK


@dataclass(frozen=True)
class Price:
    price: float  # TradePrice of the instance (after discounts)
    list_price: float | None  # OriginalPrice of the instance
    currency: str
    total: float  # TradePrice of the whole order (instance + default system disk)
    instance_only: bool  # False when the answer had no InstanceType detail and `price` is the total
    rules: tuple[str, ...]


def _get(mapping: Any, *path: str, url: str, required: bool = True) -> Any:
    value = mapping
    for key in path:
        if not isinstance(value, dict) or key not in value:
            if required:
                raise ParseError(f"{url}: no {'.'.join(path)} in the answer")
            return None
        value = value[key]
    return value


def _list(value: Any, what: str, url: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ParseError(f"{url}: {what} is {type(value).__name__}, not a list")
    return value


def _number(value: Any, what: str, url: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ParseError(f"{url}: {what} is {value!r}, not a number")
    try:
        return float(value)
    except ValueError as exc:
        raise ParseError(f"{url}: {what} is {value!r}, not a number") from exc


# ----- DescribeInstanceTypes -------------------------------------------------------------------
def instance_types(pages: list[RawResponse]) -> Catalogue:
    """The GPU instance types described in every page (GPUAmount ≥ 1), by InstanceTypeId."""
    found = Catalogue()
    for raw in pages:
        items = _list(_get(json_object(raw), "InstanceTypes", "InstanceType", url=raw.url), "InstanceType", raw.url)
        for item in items:
            if not isinstance(item, dict) or item.get("GPUAmount") == 0:
                continue  # a CPU type (the request asks for GPU types; a mirror may answer more)
            _instance_type(item, raw.url, found)
    return found


def _instance_type(item: dict[str, Any], url: str, found: Catalogue) -> None:
    sku, family = item.get("InstanceTypeId"), item.get("InstanceTypeFamily")
    if not isinstance(sku, str) or not sku or not isinstance(family, str):
        raise ParseError(f"{url}: a GPU instance type without InstanceTypeId or InstanceTypeFamily")
    count = _number(item.get("GPUAmount"), f"{sku} GPUAmount", url)
    reported = _number(item.get("GPUMemorySize"), f"{sku} GPUMemorySize", url)
    gpu_spec = item.get("GPUSpec")
    if count < 1 or count != int(count):
        raise ParseError(f"{url}: {sku} has GPUAmount {count:g}")
    if not isinstance(gpu_spec, str) or not gpu_spec.strip():
        raise ParseError(f"{url}: {sku} has no GPUSpec")
    card = card_of(sku, family, gpu_spec, reported)
    if isinstance(card, Skipped):
        found.skipped[sku] = card.why
        return
    vcpus, memory_gib = item.get("CpuCoreCount"), item.get("MemorySize")
    found.types[sku] = InstanceType(
        sku=sku,
        family=family,
        spec=card.spec,
        gpu_count=int(count),
        vcpus=vcpus if isinstance(vcpus, int) else None,
        memory_gib=float(memory_gib) if isinstance(memory_gib, int | float) else None,
    )


# ----- DescribeAvailableResource -----------------------------------------------------------------
def stock(raw: RawResponse) -> dict[str, list[ZoneStock]]:
    """Instance type -> its status in each zone that lists it. A type no zone lists is not sold there."""
    document = json_object(raw)
    if "AvailableZones" not in document:
        raise ParseError(f"{raw.url}: no AvailableZones in the answer")
    zones = _get(document, "AvailableZones", "AvailableZone", url=raw.url, required=False)
    found: dict[str, list[ZoneStock]] = {}
    for zone in _list(zones, "AvailableZone", raw.url):
        zone_id = zone.get("ZoneId") if isinstance(zone, dict) else None
        if not isinstance(zone_id, str):
            raise ParseError(f"{raw.url}: an AvailableZone without ZoneId")
        zone_status = zone.get("StatusCategory") or zone.get("Status") or ""
        resources = _get(zone, "AvailableResources", "AvailableResource", url=raw.url, required=False)
        for resource in _list(resources, "AvailableResource", raw.url):
            if not isinstance(resource, dict) or resource.get("Type") != "InstanceType":
                continue
            supported = _get(resource, "SupportedResources", "SupportedResource", url=raw.url, required=False)
            for entry in _list(supported, "SupportedResource", raw.url):
                value = entry.get("Value") if isinstance(entry, dict) else None
                if not isinstance(value, str):
                    raise ParseError(f"{raw.url}: a SupportedResource without Value in {zone_id}")
                status = entry.get("StatusCategory") or entry.get("Status") or ""
                if status not in IN_STOCK | OUT_OF_STOCK:
                    raise ParseError(f"{raw.url}: {value} in {zone_id} has an unknown status {status!r}")
                if zone_status in OUT_OF_STOCK:
                    status = zone_status  # the whole zone is sold out
                found.setdefault(value, []).append(ZoneStock(zone_id, status))
    return found


# ----- DescribePrice -----------------------------------------------------------------------------
def price(raw: RawResponse) -> Price:
    document = json_object(raw)
    order = _get(document, "PriceInfo", "Price", url=raw.url)
    currency = order.get("Currency") if isinstance(order, dict) else None
    if not isinstance(currency, str) or len(currency) != 3:
        raise ParseError(f"{raw.url}: PriceInfo.Price has no Currency")
    total = _number(order.get("TradePrice"), "PriceInfo.Price.TradePrice", raw.url)
    original = order.get("OriginalPrice")
    list_total = _number(original, "PriceInfo.Price.OriginalPrice", raw.url) if original is not None else None
    details = _get(order, "DetailInfos", "DetailInfo", url=raw.url, required=False)
    instance = next(
        (
            detail
            for detail in _list(details, "DetailInfo", raw.url)
            if isinstance(detail, dict) and str(detail.get("Resource", "")).lower() == "instancetype"
        ),
        None,
    )
    rules = _get(document, "PriceInfo", "Rules", "Rule", url=raw.url, required=False)
    descriptions = tuple(
        str(rule["Description"])
        for rule in _list(rules, "Rules.Rule", raw.url)
        if isinstance(rule, dict) and rule.get("Description")
    )
    if instance is None:
        return Price(total, list_total, currency.upper(), total, False, descriptions)
    trade = _number(instance.get("TradePrice"), "InstanceType TradePrice", raw.url)
    listed = instance.get("OriginalPrice")
    return Price(
        price=trade,
        list_price=_number(listed, "InstanceType OriginalPrice", raw.url) if listed is not None else None,
        currency=currency.upper(),
        total=total,
        instance_only=True,
        rules=descriptions,
    )
