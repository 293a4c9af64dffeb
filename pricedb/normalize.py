"""CONTRACT §2, in one place: native price → CNY per instance-hour, per GPU-hour, per GB-hour."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from pricedb.fx import FxTable
from pricedb.models import Pricing, Quote, Unit
from pricedb.settings import Settings


@dataclass(frozen=True, slots=True)
class Normalized:
    fx_rate: float | None
    fx_date: date | None
    cny_per_hour: float | None
    cny_per_gpu_hour: float | None
    cny_per_gb_hour: float | None
    fx_note: str | None = None  # why the CNY figures are missing, when they are


def hours_per_unit(unit: Unit, term_hours: float | None, settings: Settings) -> float:
    if unit is Unit.HOUR:
        return 1.0
    if unit is Unit.MONTH:
        return settings.hours_per_month
    if unit is Unit.YEAR:
        return settings.hours_per_year
    if term_hours is None:
        raise ValueError("a price per term needs term_hours")
    return term_hours


def term_hours_of(pricing: Pricing, term_hours: float | None, settings: Settings) -> float | None:
    """Length of the commitment a reserved price buys (the whole term is paid, CONTRACT §3)."""
    if term_hours is not None:
        return term_hours
    if pricing is Pricing.RESERVED_1Y:
        return settings.hours_per_year
    if pricing is Pricing.RESERVED_3Y:
        return 3 * settings.hours_per_year
    return None


def per_hour_figures(cny_per_hour: float, gpu_count: int, gpu_memory_gb: float) -> tuple[float, float]:
    return cny_per_hour / gpu_count, cny_per_hour / (gpu_count * gpu_memory_gb)


def normalize(quote: Quote, fx: FxTable, settings: Settings) -> Normalized:
    on = quote.observed_at.date()
    conversion = fx.to_cny(quote.currency, on)
    if conversion is None:
        note = f"no {quote.currency}→CNY reference rate on or before {on.isoformat()}"
        return Normalized(None, None, None, None, None, note)
    hours = hours_per_unit(quote.unit, quote.term_hours, settings)
    cny_per_hour = quote.price * conversion.rate / hours
    per_gpu, per_gb = per_hour_figures(cny_per_hour, quote.gpu_count, quote.gpu_memory_gb)
    return Normalized(conversion.rate, conversion.on, cny_per_hour, per_gpu, per_gb)
