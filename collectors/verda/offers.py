"""Reading Verda's answers: instance types (prices as strings), availability per location, and
long-term periods (a discount percentage per contract length) — and turning them into quotes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from collectors.base import QuoteMaker, RawResponse
from collectors.errors import ParseError
from collectors.skipped import NO_PRICE, UNKNOWN_GPU
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.models import Availability, Pricing, Quote, Unit
from pricedb.settings import Settings
from pricedb.shapes import host_fields

PROVIDER = "verda"
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x\s+(.+)$", re.IGNORECASE)
# Contract lengths that have a pricing model of their own; other lengths are only noted.
TERM_PRICINGS = {1: Pricing.MONTHLY, 12: Pricing.RESERVED_1Y, 36: Pricing.RESERVED_3Y}
SOLD_OUT_NOTE = (
    "not in Verda's {kind} availability list for {location} now (the list names what can be deployed there; "
    "it does not say whether the type is ever offered there)"
)


@dataclass(frozen=True)
class InstanceType:
    name: str
    spec: GpuSpec
    gpu_count: int
    price: Decimal
    spot_price: Decimal | None
    currency: str
    # vcpus / memory_gib from `cpu.number_of_cores` and `memory.size_in_gigabytes` (empty: not published)
    host: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Period:
    code: str
    name: str
    months: float
    discount_pct: Decimal


def price_of(value: Any, where: str) -> Decimal | None:
    """A price the API sends as a string ("1.16"); None for null or an empty string."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ParseError(f"{where} is {value!r}, not a price")
    try:
        price = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ParseError(f"{where} is {value!r}, not a price") from exc
    if not price.is_finite():
        raise ParseError(f"{where} is {value!r}, not a price")
    return price


def _list_of_objects(raw: RawResponse, what: str) -> list[Mapping[str, Any]]:
    body = raw.json()
    if not isinstance(body, list) or not all(isinstance(item, Mapping) for item in body):
        found = ", ".join(map(str, body)) if isinstance(body, Mapping) else type(body).__name__
        raise ParseError(f"{raw.url}: expected a list of {what}, got {found}")
    return body


def _field(item: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in item:
        raise ParseError(f"{where}: no '{name}' field (has the Verda API changed?)")
    return item[name]


def gpu_types(raw: RawResponse) -> tuple[list[InstanceType], Counter[str]]:
    """The GPU instance types of a `GET /instance-types` answer (CPU types skipped), and what was left
    out, counted for the run's notes: GPU descriptions the card table does not know (never guessed)
    and types whose on-demand price is 0."""
    items = _list_of_objects(raw, "instance types")
    if not items:
        raise ParseError(f"{raw.url}: the API lists no instance types")
    found = []
    skipped: Counter[str] = Counter()
    for item in items:
        name = str(_field(item, "instance_type", f"{raw.url}: an instance type"))
        where = f"{raw.url}: {name}"
        gpu = _field(item, "gpu", where)
        count = gpu.get("number_of_gpus") if isinstance(gpu, Mapping) else None
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ParseError(f"{where}: gpu.number_of_gpus is {count!r}, not a GPU count")
        if count == 0:
            continue  # a CPU instance
        description = str(gpu.get("description", ""))
        prefix = _COUNT_PREFIX.match(description)
        card = prefix.group(2) if prefix else description
        try:
            spec = identify(card)
        except UnknownGpu:
            skipped[f"{UNKNOWN_GPU}: {card}"] += 1
            continue
        if prefix and int(prefix.group(1)) != count:
            raise ParseError(f"{where}: gpu.description {description!r} disagrees with number_of_gpus {count}")
        _check_memory(item, spec, count, where)
        price = price_of(_field(item, "price_per_hour", where), f"{where}: price_per_hour")
        if price is None:
            raise ParseError(f"{where}: price_per_hour is empty")
        if price <= 0:
            skipped[f"{NO_PRICE}: {name}"] += 1
            continue
        currency = str(_field(item, "currency", where)).upper()
        spot = price_of(item.get("spot_price"), f"{where}: spot_price")
        host = host_fields(_size(item, "cpu", "number_of_cores"), _size(item, "memory", "size_in_gigabytes"))
        found.append(InstanceType(name, spec, count, price, spot if spot and spot > 0 else None, currency, host))
    if not found:
        listed = f" ({'; '.join(sorted(skipped))})" if skipped else ""
        raise ParseError(
            f"{raw.url}: none of the {len(items)} instance types is a priced GPU the card table knows{listed}"
        )
    return found, skipped


def _size(item: Mapping[str, Any], block: str, field: str) -> Any:
    value = item.get(block)
    return value.get(field) if isinstance(value, Mapping) else None


def _check_memory(item: Mapping[str, Any], spec: GpuSpec, count: int, where: str) -> None:
    memory = item.get("gpu_memory")
    total = memory.get("size_in_gigabytes") if isinstance(memory, Mapping) else None
    if isinstance(total, int | float) and not isinstance(total, bool) and total > 0:
        per_gpu = total / count
        if abs(per_gpu - spec.memory_gb) > 0.07 * spec.memory_gb:
            raise ParseError(
                f"{where}: gpu_memory {total:g} GB over {count} GPU(s) is {per_gpu:g} GB each, "
                f"but the description says {spec.memory_gb:g} GB"
            )


def availability(raw: RawResponse) -> dict[str, set[str]]:
    """`GET /instance-availability` → location code → instance types deployable there now."""
    by_location: dict[str, set[str]] = {}
    for entry in _list_of_objects(raw, "locations"):
        location = str(entry.get("location_code", "")).strip()
        listed = entry.get("availabilities")
        if not location or not isinstance(listed, list):
            raise ParseError(f"{raw.url}: an entry without location_code or availabilities list: {entry!r}")
        by_location.setdefault(location, set()).update(str(name) for name in listed)
    return by_location


def periods(raw: RawResponse) -> list[Period]:
    """Enabled long-term contract periods, with their length in months."""
    found = []
    for entry in _list_of_objects(raw, "long-term periods"):
        where = f"{raw.url}: period {entry.get('code', '?')}"
        for name in ("code", "unit_name", "unit_value", "discount_percentage"):
            _field(entry, name, where)
        if entry.get("is_enabled") is False:
            continue
        unit = str(entry["unit_name"]).strip().lower().rstrip("s")
        value = entry["unit_value"]
        if isinstance(value, bool) or not isinstance(value, int | float) or unit not in ("month", "year"):
            raise ParseError(f"{where}: length {value!r} {entry['unit_name']!r} is not months or years")
        discount = price_of(entry["discount_percentage"], f"{where}: discount_percentage")
        if discount is None or not 0 <= discount < 100:
            raise ParseError(f"{where}: discount_percentage {entry['discount_percentage']!r} is not 0–100")
        months = float(value) * (12 if unit == "year" else 1)
        found.append(Period(str(entry["code"]), str(entry.get("name") or entry["code"]), months, discount))
    return found


def build_quotes(
    settings: Settings,
    quote: QuoteMaker,
    raw_types: RawResponse,
    types: Sequence[InstanceType],
    on_demand: Mapping[str, set[str]],
    spot: Mapping[str, set[str]],
    terms: Sequence[Period] | None,
) -> list[Quote]:
    configured = settings.regions_for(PROVIDER, [])
    locations = sorted(set(configured) or set(on_demand) | set(spot))
    if not locations:
        raise ParseError("Verda's availability answers name no location; set GPUPRICE_VERDA_REGIONS")
    priced, others = split_periods(terms or ())
    quotes = []
    for kind in sorted(types, key=lambda t: t.name):
        for location in locations:
            listed = kind.name in on_demand.get(location, set())
            notes = [f"price_per_hour {kind.price} {kind.currency} per instance-hour"]
            if others:
                notes.append("other long-term contracts, paid up front: " + ", ".join(_describe(p) for p in others))
            offer = _Builder(settings, quote, raw_types, kind, location)
            quotes.append(offer.make(Pricing.ON_DEMAND, kind.price, listed, "on-demand", notes))
            for period in priced:
                quotes.append(offer.long_term(period, listed))
            if kind.spot_price is not None:
                spot_notes = [f"spot_price {kind.spot_price} {kind.currency} per instance-hour, interruptible"]
                in_spot = kind.name in spot.get(location, set())
                quotes.append(offer.make(Pricing.SPOT, kind.spot_price, in_spot, "spot", spot_notes))
    return quotes


def split_periods(terms: Sequence[Period]) -> tuple[list[Period], list[Period]]:
    """Periods that become offers (one per pricing: the deepest discount when two lengths map to the
    same pricing, e.g. 12 months and 1 year) and the others, which are only noted."""
    priced: dict[Pricing, Period] = {}
    for period in sorted(terms, key=lambda p: p.discount_pct, reverse=True):
        pricing = TERM_PRICINGS.get(int(period.months)) if period.months == int(period.months) else None
        if pricing is not None and pricing not in priced:
            priced[pricing] = period
    chosen = list(priced.values())
    return chosen, [p for p in terms if p not in chosen]


def _describe(period: Period) -> str:
    return f"{period.name} ({period.code}) −{period.discount_pct.normalize():f}%"


@dataclass
class _Builder:
    settings: Settings
    quote: QuoteMaker
    raw: RawResponse
    kind: InstanceType
    location: str

    def long_term(self, period: Period, listed: bool) -> Quote:
        pricing = TERM_PRICINGS[int(period.months)]
        rate = self.kind.price * (Decimal(100) - period.discount_pct) / Decimal(100)
        notes = [
            f"long-term contract {_describe(period)} off price_per_hour {self.kind.price} "
            f"{self.kind.currency}, paid up front for the whole period",
        ]
        term_hours = None
        if pricing.is_reserved:
            term_hours = period.months / 12 * self.settings.hours_per_year
            notes.append(f"the whole {period.months:g}-month term ({term_hours:g} h) is paid")
        return self.make(pricing, rate, listed, "on-demand", notes, term_hours=term_hours, list_price=self.kind.price)

    def make(
        self,
        pricing: Pricing,
        price: Decimal,
        listed: bool,
        kind: str,
        notes: list[str],
        term_hours: float | None = None,
        list_price: Decimal | None = None,
    ) -> Quote:
        if not listed:
            notes = [*notes, SOLD_OUT_NOTE.format(kind=kind, location=self.location)]
        return self.quote(
            self.raw,
            f"{self.kind.name} {self.location} {pricing.value}",
            region=self.location,
            sku=self.kind.name,
            **self.kind.spec.quote_fields(),
            gpu_count=self.kind.gpu_count,
            pricing=pricing,
            price=round(float(price), 6),
            currency=self.kind.currency,
            unit=Unit.HOUR,
            term_hours=term_hours,
            availability=Availability.AVAILABLE if listed else Availability.SOLD_OUT,
            list_price=None if list_price is None else float(list_price),
            notes="; ".join(notes),
            **self.kind.host,
        )
