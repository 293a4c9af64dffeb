"""From `InstanceTypeQuotaSet` items (one per zone × instance type × charge type) to quotes.

Item fields (CVM API data structure `InstanceTypeQuotaItem`; SDK `tencentcloud/cvm/v20170312/models.py`):
`Zone`, `InstanceType`, `InstanceChargeType`, `InstanceFamily`, `TypeName`, `Gpu` (GPU count),
`GpuCount` (physical cards; below 1 for a vGPU slice), `Remark`, `Status` (`SELL` / `SOLD_OUT`),
`SoldOutReason`, `StatusCategory` (`EnoughStock`, `NormalStock`, `UnderStock`, `WithoutStock`) and
`Price` (`ItemPrice`):

- hourly charge types (`ChargeUnit` `HOUR`): `UnitPriceDiscount` is the price paid, `UnitPrice` the
  list price. When `UnitPriceDiscountSecondStep` / `…ThirdStep` are returned, the first applies to
  hours (0, 96), the second to (96, 360), the third from 360 h on (ItemPrice field descriptions; the
  CVM "价格总览" page: "部分实例类型的按量计费实行三级阶梯价", second step 50 %, third 34 % of the
  first, and equal to the first for types without steps). Kept as `price_steps`, only when cheaper;
- `PREPAID`: `DiscountPrice` / `OriginalPrice` are one month's subscription (the tccli example has
  `OriginalPriceOneYear` = 12 × `OriginalPrice`); `DiscountPriceOneYear` / `…ThreeYear` are whole-term
  prices of one- and three-year subscriptions (包年), taken as `reserved_1y` / `reserved_3y`;
  five-year prices are not collected. Numbers may come as strings ("100.000000") or be 0 or null
  for "not applicable"; 0 and null mean no price.

GPUs: the card comes from the item's family (collectors.tencent.instance_types, Tencent's pages), the
count from the item (`GpuCount`, else `Gpu`), never from the name; a `GpuCount` below 1 is a vGPU slice
(GN7.LARGE20 = 1/4 of a T4, 4 GB), stored as one slice with `gpu_fraction` and `gpu_partition`, never
as a whole card. What is not taken is counted in the run's notes, never guessed: a family whose card
or memory is not published (HCCPNV4h) and a family the table does not know.

Zones: an offer is provider + region + sku + pricing, so the zones of a region are folded into one
quote: the cheapest zone that sells (`Status` SELL), else the cheapest sold-out one, marked
`sold_out` — never dropped. The notes name the zone taken and the state of the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

from collectors.base import QuoteMaker, RawResponse
from collectors.errors import ParseError
from collectors.tencent.api import CHARGE_TYPES, parse_label, source_url
from collectors.tencent.instance_types import FAMILY_CARDS, UNSTATED, family_of
from pricedb.card_names import GpuSpec, UnknownGpu
from pricedb.models import Availability, PriceStep, Pricing, Quote, Unit
from pricedb.shapes import host_fields

SECOND_STEP_AFTER_HOURS = 96.0
THIRD_STEP_AFTER_HOURS = 360.0
_AVAILABILITY = {"SELL": Availability.AVAILABLE, "SOLD_OUT": Availability.SOLD_OUT}


@dataclass(frozen=True)
class Priced:
    """One zone's price for one pricing of one instance type."""

    region: str
    zone: str
    sku: str
    pricing: Pricing
    price: float
    unit: Unit
    term_hours: float | None
    list_price: float | None
    steps: tuple[PriceStep, ...]
    status: str
    item: dict[str, Any]
    raw: RawResponse
    gpu: GpuSpec
    gpu_count: int


def number(value: Any) -> float | None:
    """A price field: a positive number (or numeric string), else None (0 and null mean none)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        amount = float(value)
    except (TypeError, ValueError):
        return None
    return amount if amount > 0 else None


def items_of(raw: RawResponse) -> list[dict[str, Any]]:
    payload = raw.json()
    response = payload.get("Response") if isinstance(payload, dict) else None
    if not isinstance(response, dict):
        raise ParseError(f"{raw.url} ({raw.label}): no 'Response' object in the answer")
    if isinstance(response.get("Error"), dict):
        error = response["Error"]
        raise ParseError(
            f"{raw.url} ({raw.label}): an API error, not prices: {error.get('Code')}: {error.get('Message')}"
        )
    items = response.get("InstanceTypeQuotaSet")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ParseError(f"{raw.url} ({raw.label}): no 'InstanceTypeQuotaSet' list in the answer")
    return items


def gpu_of(item: dict[str, Any]) -> GpuSpec | str:
    """The item's card, from its family, or why it is not taken."""
    sku = str(item.get("InstanceType", ""))
    family = family_of(item.get("InstanceFamily"), sku)
    if family in FAMILY_CARDS:
        return FAMILY_CARDS[family]
    if family in UNSTATED:
        return f"unknown GPU, not collected: {sku} ({UNSTATED[family]})"
    return f"unknown GPU, not collected: {sku} (family {family}, {item.get('TypeName') or 'no TypeName'})"


def gpu_count_of(item: dict[str, Any], where: str, gpu: GpuSpec) -> tuple[int, GpuSpec] | str:
    """Cards per instance (`GpuCount`, else `Gpu`) and the card; a `GpuCount` below 1 is one vGPU slice
    of that share (GN7.LARGE20: 1/4 of a T4, 4 GB). A string says why the item is not taken."""
    cards, gpus = item.get("GpuCount"), item.get("Gpu")
    count = cards if isinstance(cards, int | float) and not isinstance(cards, bool) and cards > 0 else gpus
    if not isinstance(count, int | float) or isinstance(count, bool) or count <= 0:
        raise ParseError(f"{where}: {item.get('InstanceType')} has no GPU count (GpuCount {cards!r}, Gpu {gpus!r})")
    if count < 1:
        share = Fraction(count).limit_denominator(64)
        try:
            return 1, gpu.slice(float(share), f"{share} GPU (vGPU)", gpu.memory_gb * float(share))
        except UnknownGpu as exc:
            return f"unknown GPU, not collected: {item.get('InstanceType')} ({exc})"
    if count != int(count):
        raise ParseError(f"{where}: {item.get('InstanceType')} has a fractional GPU count {count!r}")
    return int(count), gpu


class _Price(NamedTuple):
    pricing: Pricing
    price: float
    unit: Unit
    term_hours: float | None
    list_price: float | None
    steps: tuple[PriceStep, ...] = ()


def _hourly(item: dict[str, Any], pricing: Pricing, where: str) -> Iterator[_Price]:
    price_block = item["Price"]
    unit = price_block.get("ChargeUnit")
    if unit != "HOUR":
        raise ParseError(f"{where}: {item.get('InstanceType')} is charged per {unit!r}, expected HOUR")
    price = number(price_block.get("UnitPriceDiscount")) or number(price_block.get("UnitPrice"))
    if price is None:
        return
    steps: list[PriceStep] = []
    floor = price
    for after, field in (
        (SECOND_STEP_AFTER_HOURS, "UnitPriceDiscountSecondStep"),
        (THIRD_STEP_AFTER_HOURS, "UnitPriceDiscountThirdStep"),
    ):
        step = number(price_block.get(field))
        if step is not None and step < floor:
            steps.append(PriceStep(after_hours=after, price=step))
            floor = step
    yield _Price(pricing, price, Unit.HOUR, None, number(price_block.get("UnitPrice")), tuple(steps))


def _prepaid(item: dict[str, Any], hours_per_year: float) -> Iterator[_Price]:
    price_block = item["Price"]
    terms = (
        (Pricing.MONTHLY, "", Unit.MONTH, None),
        (Pricing.RESERVED_1Y, "OneYear", Unit.TERM, hours_per_year),
        (Pricing.RESERVED_3Y, "ThreeYear", Unit.TERM, 3 * hours_per_year),
    )
    for pricing, suffix, unit, term in terms:
        original = number(price_block.get(f"OriginalPrice{suffix}"))
        price = number(price_block.get(f"DiscountPrice{suffix}")) or original
        if price is not None:
            yield _Price(pricing, price, unit, term, original)


def priced(raw: RawResponse, hours_per_year: float, skipped: Counter[str] | None = None) -> list[Priced]:
    """Every zone price of every GPU item in one answer; what is left out is counted in `skipped`."""
    region, charge_type = parse_label(raw)
    if charge_type not in CHARGE_TYPES or not region:
        raise ParseError(f"{raw.url}: answer labelled {raw.label!r}, expected '<region>:<charge type>'")
    found: list[Priced] = []
    for number_, item in enumerate(items_of(raw), 1):
        where = f"{raw.url} ({raw.label}) item {number_}"
        zone, sku = str(item.get("Zone", "")), str(item.get("InstanceType", ""))
        if not sku or not zone:
            raise ParseError(f"{where}: an item without InstanceType or Zone")
        if not zone.startswith(f"{region}-"):
            raise ParseError(f"{where}: zone {zone} answered for region {region}")
        if item.get("InstanceChargeType") != charge_type:
            raise ParseError(f"{where}: {sku} is {item.get('InstanceChargeType')!r}, asked for {charge_type}")
        card = gpu_of(item)
        counted = card if isinstance(card, str) else gpu_count_of(item, where, card)
        if isinstance(counted, str):
            if skipped is not None:
                skipped[counted] += 1
            continue
        count, gpu = counted
        if not isinstance(item.get("Price"), dict):
            raise ParseError(f"{where}: {sku} has no Price block")
        if charge_type == "PREPAID":
            prices = list(_prepaid(item, hours_per_year))
        else:
            (pricing,) = CHARGE_TYPES[charge_type]
            prices = list(_hourly(item, pricing, where))
        if not prices and skipped is not None:
            skipped[f"{sku} in {zone} ({charge_type}): no price in the answer"] += 1
        status = str(item.get("Status", ""))
        for pricing, price, unit, term, original, steps in prices:
            found.append(
                Priced(region, zone, sku, pricing, price, unit, term, original, steps, status, item, raw, gpu, count)
            )
    return found


def _zone_state(entry: Priced) -> str:
    item = entry.item
    extra = [str(v) for v in (item.get("SoldOutReason"), item.get("StatusCategory")) if v]
    return f"{entry.zone} {entry.status or '?'}" + (f" ({', '.join(extra)})" if extra else "")


def offer_quote(entries: list[Priced], quote: QuoteMaker) -> Quote:
    """One offer from its zones: the cheapest selling zone, else the cheapest of all (sold out)."""
    selling = [e for e in entries if e.status == "SELL"]
    best = min(selling or entries, key=lambda e: (e.price, e.zone))
    availability = Availability.AVAILABLE if selling else _AVAILABILITY.get(best.status, Availability.UNKNOWN)
    if not selling and any(e.status != best.status for e in entries):
        availability = Availability.UNKNOWN
    notes = [
        f"zone {_zone_state(best)}"
        if len(entries) == 1
        else f"cheapest {'selling ' if selling else ''}zone of {len(entries)}: {_zone_state(best)}"
    ]
    others = [_zone_state(e) for e in sorted(entries, key=lambda e: e.zone) if e is not best]
    if others:
        notes.append("other zones: " + "; ".join(others))
    if best.pricing is Pricing.MONTHLY:
        notes.append("one month's subscription (包月), paid upfront")
    elif best.pricing.is_reserved:
        years = 1 if best.pricing is Pricing.RESERVED_1Y else 3
        notes.append(f"price for the whole {years}-year subscription (包年), paid upfront")
    if best.steps:
        notes.append(
            "stepped hourly price: " + ", ".join(f"{s.price:g} from hour {s.after_hours:g}" for s in best.steps)
        )
    remark = str(best.item.get("Remark") or "").strip()
    if remark:
        notes.append(f"Remark: {remark}")
    region, charge_type = parse_label(best.raw)
    return quote(
        best.raw,
        f"{best.sku} {region} {best.pricing.value}",
        region=region,
        sku=best.sku,
        **best.gpu.quote_fields(),
        gpu_count=best.gpu_count,
        pricing=best.pricing,
        price=best.price,
        currency="CNY",
        unit=best.unit,
        term_hours=best.term_hours,
        availability=availability,
        source_url=source_url(region, charge_type),
        list_price=best.list_price,
        price_steps=best.steps,
        notes="; ".join(notes),
        **host_fields(best.item.get("Cpu"), best.item.get("Memory")),
    )
