"""Invariants every provider's quotes must pass before anything is stored.

The same checks run in tests (on fixtures) and at run time (on live data). A quote that fails is
rejected with its reason, which the run records; the others are stored.

- the price is positive;
- the GPU is known: model in the GPU table, memory one of the sizes that model is sold in — or, for
  a quote marked as a slice of one GPU (`gpu_fraction`, `gpu_partition`: a MIG instance, a vGPU
  share), at most the model's largest size; an unmarked odd size is never taken for a slice;
- the per-GPU hourly price, in USD, lies in the model's plausible band (skipped when no FX rate is
  known yet, since it cannot be judged); a slice's price is judged per whole GPU (price ÷ fraction);
- spot is not dearer than on-demand for the same provider, region and SKU (in this run, or against
  the stored on-demand offer when this run covers spot only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pricedb.cards import MODEL_FACTS, GpuModelFacts
from pricedb.fx import FxTable
from pricedb.models import Pricing, Quote
from pricedb.normalize import normalize
from pricedb.settings import Settings


@dataclass(frozen=True)
class Rejection:
    quote: Quote
    reason: str

    def as_record(self) -> dict[str, str]:
        provider, region, sku, pricing = self.quote.key
        return {"offer": f"{provider}/{region}/{sku}/{pricing}", "reason": self.reason}


def _usd_per_gpu_hour(quote: Quote, fx: FxTable, settings: Settings) -> float | None:
    figures = normalize(quote, fx, settings)
    usd = fx.to_cny("USD", quote.observed_at.date())
    if figures.cny_per_gpu_hour is None or usd is None:
        return None
    return figures.cny_per_gpu_hour / usd.rate


def _memory_problem(quote: Quote, facts: GpuModelFacts) -> str | None:
    sizes = sorted(facts.memory_sizes_gb)
    if quote.gpu_fraction is not None:
        if quote.gpu_memory_gb > sizes[-1]:
            return f"{quote.gpu_model} slice of {quote.gpu_memory_gb:g} GB is larger than the card ({sizes[-1]:g} GB)"
        return None
    if quote.gpu_memory_gb not in facts.memory_sizes_gb:
        listed = ", ".join(f"{s:g}" for s in sizes)
        return f"{quote.gpu_model} with {quote.gpu_memory_gb:g} GB is not a known size ({listed} GB)"
    return None


def _price_problem(quote: Quote, facts: GpuModelFacts, fx: FxTable, settings: Settings) -> str | None:
    usd = _usd_per_gpu_hour(quote, fx, settings)
    low, high = facts.usd_per_gpu_hour
    if usd is None:
        return None
    if quote.gpu_fraction is None:
        if low <= usd <= high:
            return None
        return f"{usd:.3f} USD per GPU-hour is outside the plausible {low:g}–{high:g} for {quote.gpu_model}"
    whole = usd / quote.gpu_fraction
    if low <= whole <= high:
        return None
    return (
        f"{usd:.3f} USD per slice-hour ({whole:.3f} per whole GPU, {quote.gpu_partition}) is outside "
        f"the plausible {low:g}–{high:g} for {quote.gpu_model}"
    )


def check_quote(quote: Quote, fx: FxTable, settings: Settings) -> str | None:
    """The reason `quote` cannot be true, or None."""
    if quote.price <= 0:
        return f"price {quote.price} is not positive"
    facts = MODEL_FACTS.get(quote.gpu_model)
    if facts is None:
        return f"unknown GPU model {quote.gpu_model!r}"
    return _memory_problem(quote, facts) or _price_problem(quote, facts, fx, settings)


def check_quotes(
    quotes: Sequence[Quote],
    fx: FxTable,
    settings: Settings,
    stored_on_demand_cny: Mapping[tuple[str, str, str], float] | None = None,
) -> tuple[list[Quote], list[Rejection]]:
    """Split quotes into accepted and rejected. `stored_on_demand_cny` maps (provider, region, sku)
    to the stored on-demand CNY/hour, for runs that bring spot prices without on-demand ones."""
    accepted: list[Quote] = []
    rejected: list[Rejection] = []
    on_demand: dict[tuple[str, str, str], float] = dict(stored_on_demand_cny or {})
    for quote in quotes:
        if quote.pricing is Pricing.ON_DEMAND:
            figures = normalize(quote, fx, settings)
            if figures.cny_per_hour is not None:
                on_demand[(quote.provider, quote.region, quote.sku)] = figures.cny_per_hour
    for quote in quotes:
        reason = check_quote(quote, fx, settings)
        if reason is None and quote.pricing is Pricing.SPOT:
            reference = on_demand.get((quote.provider, quote.region, quote.sku))
            spot = normalize(quote, fx, settings).cny_per_hour
            if reference is not None and spot is not None and spot > reference * 1.0001:
                reason = f"spot ¥{spot:.4f}/h is dearer than on-demand ¥{reference:.4f}/h"
        if reason is None:
            accepted.append(quote)
        else:
            rejected.append(Rejection(quote, reason))
    return accepted, rejected
