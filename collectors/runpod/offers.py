"""From one RunPod GPU type's answer to quotes: per cloud (Secure, Community) and GPU count, an
on-demand and a spot offer, priced per instance (RunPod's per-GPU price × the count)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.base import QuoteMaker, RawResponse
from collectors.errors import ParseError
from collectors.runpod.graphql import gpu_types_of, parse_alias
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.models import Availability, Pricing, Quote, Unit
from pricedb.shapes import host_fields

PROVIDER = "runpod"
REGION = "global"  # list prices and lowestPrice without a data center: RunPod-wide, not per location
_SAVINGS_FIELDS = (("oneMonthPrice", "1 month"), ("threeMonthPrice", "3 months"), ("sixMonthPrice", "6 months"))


def card_of(gpu: Mapping[str, Any]) -> GpuSpec:
    """The card an entry of `gpuTypes` is, by its id ("NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX
    4090") with `memoryInGb`; UnknownGpu for a card the table does not know (reported, never guessed)."""
    memory = gpu.get("memoryInGb")
    memory_gb = float(memory) if isinstance(memory, int | float) and not isinstance(memory, bool) else None
    return identify(str(gpu.get("id", "")), memory_gb)


def sku(gpu_id: str, count: int, cloud: str) -> str:
    return f"{gpu_id} x{count} ({cloud})"


def per_gpu_price(value: Any, where: str) -> float | None:
    """A per-GPU price field: a positive number, or None when RunPod gives none (null or 0)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(f"{where} is {value!r}, not a number")
    return float(value) if value > 0 else None


def stock_rows(gpu: Mapping[str, Any], where: str) -> list[tuple[str, int, Mapping[str, Any] | None]]:
    """(cloud, count, lowestPrice answer) for every aliased `lowestPrice` in a type's answer."""
    rows = []
    for key, value in gpu.items():
        parsed = parse_alias(key)
        if parsed is None:
            continue
        if value is not None and not isinstance(value, Mapping):
            raise ParseError(f"{where}: {key} is {value!r}, not a lowestPrice object")
        rows.append((parsed[0], parsed[1], value))
    return sorted(rows, key=lambda row: (row[0] != "secure", row[1]))


def not_offered(raw: RawResponse) -> list[str]:
    """Notes for the (cloud, count) pairs whose `stockStatus` is null: RunPod does not offer them."""
    notes = []
    for gpu in gpu_types_of(raw):
        missing: dict[str, list[int]] = {}
        for cloud, count, lowest in stock_rows(gpu, raw.url):
            if lowest is None or lowest.get("stockStatus") is None:
                missing.setdefault(cloud, []).append(count)
        for cloud, counts in missing.items():
            listed = ", ".join(f"x{n}" for n in counts)
            notes.append(f"{gpu.get('id')} {cloud} cloud: {listed} not offered now (stockStatus null), skipped")
    return notes


def quotes_of(raw: RawResponse, quote: QuoteMaker) -> list[Quote]:
    quotes: list[Quote] = []
    for gpu in gpu_types_of(raw):
        gpu_id = str(gpu.get("id", ""))
        where = f"{raw.url} ({gpu_id or 'a GPU type without id'})"
        try:
            spec = card_of(gpu)
        except UnknownGpu as exc:
            raise ParseError(f"{where}: a card the table does not know, yet its prices were asked for") from exc
        rows = stock_rows(gpu, where)
        if not rows:
            raise ParseError(f"{where}: no lowestPrice answers (secure1, community1, …) in the type's answer")
        for cloud, count, lowest in rows:
            if lowest is None or lowest.get("stockStatus") is None:
                continue  # not offered at this count in this cloud (see the run's notes)
            quotes.extend(_quotes_for(quote, raw, gpu, spec, cloud, count, lowest, where))
    return quotes


def _quotes_for(
    quote: QuoteMaker,
    raw: RawResponse,
    gpu: Mapping[str, Any],
    spec: GpuSpec,
    cloud: str,
    count: int,
    lowest: Mapping[str, Any],
    where: str,
) -> list[Quote]:
    stock = str(lowest["stockStatus"])
    label = f"{cloud.capitalize()} Cloud"
    host = host_fields(lowest.get("minVcpu"), lowest.get("minMemory"))
    quotes = []
    on_demand = per_gpu_price(gpu.get(f"{cloud}Price"), f"{where}: {cloud}Price")
    if on_demand is not None:
        notes = [f"{label}", f"{cloud}Price {on_demand:g} USD per GPU-hour × {count} GPU(s)", f"stock {stock}"]
        if cloud == "secure":
            notes.extend(_savings_plan_note(gpu, on_demand, where))
        quotes.append(_quote(quote, raw, gpu, spec, cloud, count, Pricing.ON_DEMAND, on_demand, notes, host))
    spot = per_gpu_price(gpu.get(f"{cloud}SpotPrice"), f"{where}: {cloud}SpotPrice")
    source = f"{cloud}SpotPrice"
    if spot is None:
        spot = per_gpu_price(lowest.get("minimumBidPrice"), f"{where}: {cloud}{count}.minimumBidPrice")
        source = "minimumBidPrice (the lowest bid per GPU accepted now)"
    if spot is not None:
        notes = [f"{label}, interruptible", f"{source} {spot:g} USD per GPU-hour × {count} GPU(s)", f"stock {stock}"]
        quotes.append(_quote(quote, raw, gpu, spec, cloud, count, Pricing.SPOT, spot, notes, host))
    return quotes


def _savings_plan_note(gpu: Mapping[str, Any], on_demand: float, where: str) -> list[str]:
    """Savings-plan rates (paid up front for the period) are noted when they differ from on-demand;
    they are per GPU-hour for a prepaid period, not a monthly subscription, so not `monthly` offers."""
    rates = []
    for field, period in _SAVINGS_FIELDS:
        rate = per_gpu_price(gpu.get(field), f"{where}: {field}")
        if rate is not None and abs(rate - on_demand) > 1e-9:
            rates.append(f"{period} {rate:g}")
    return [f"savings plans (prepaid, USD per GPU-hour): {', '.join(rates)}"] if rates else []


def _quote(
    quote: QuoteMaker,
    raw: RawResponse,
    gpu: Mapping[str, Any],
    spec: GpuSpec,
    cloud: str,
    count: int,
    pricing: Pricing,
    per_gpu: float,
    notes: list[str],
    host: Mapping[str, Any],
) -> Quote:
    return quote(
        raw,
        f"{gpu.get('id')} x{count} {cloud} {pricing.value}",
        region=REGION,
        sku=sku(str(gpu["id"]), count, cloud),
        **spec.quote_fields(),
        gpu_count=count,
        pricing=pricing,
        price=round(per_gpu * count, 6),
        currency="USD",
        unit=Unit.HOUR,
        availability=Availability.AVAILABLE,
        notes="; ".join(notes),
        **host,
    )
