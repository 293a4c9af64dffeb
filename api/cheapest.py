"""`/cheapest`: which current offers can hold the job, what the job would cost on each, ranked.

CONTRACT §3–4. An option is viable when `gpu_count × gpu_memory_gb ≥ mem` (or, with `single_gpu`,
when one GPU holds it all). With the estimator's inputs instead of `mem`, a `Judge`
(api/cheapest_estimate.py) decides viability per GPU count, adds its figures to each option and may
rank by ¥ per million tokens. Its cost for `hours` of wall-clock time follows its pricing model:

- on_demand, spot: the provider's billing rule (increment and minimum charge) gives the billed
  hours; stepped prices (cheaper after N hours) are applied segment by segment;
- monthly: ceil(hours / 730) months (a package priced per fixed term, e.g. 30 days: whole terms);
- reserved_*: the whole term is paid, however short the job.

Each option shows `billed_hours` and `total_cny`, so the arithmetic can be checked by hand, and which
card it is (`gpu_model`, `gpu_memory_gb`, `form_factor`) with the card's `bandwidth_gb_s` from the
card table (null when unknown). With an amount of work instead of hours (`tokens=`, only with the
estimator's inputs), the Judge gives each option its own hours; an option it cannot time or rank
(no TFLOPS or bandwidth for its card) is listed under `unranked` with the reason, never guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, field_serializer

from pricedb.cards import Card, card
from pricedb.models import Pricing, Unit
from pricedb.normalize import hours_per_unit, term_hours_of
from pricedb.offer_filter import OfferFilter, mismatch
from pricedb.queries import Offer
from pricedb.settings import Settings


class JobWork(BaseModel):
    """The amount of work a job is (instead of wall-clock hours): training tokens or tokens to generate."""

    tokens: int
    epochs: float | None = None  # tokens = epochs × dataset_tokens, when given so
    dataset_tokens: int | None = None


class CheapestQuery(BaseModel):
    """The question, as understood (echoed back in the answer)."""

    mem_gb: float | None  # None: the estimator's inputs were given instead (a Judge decides viability)
    hours: float | None = 1.0  # None: the amount of work was given instead (each option's own hours)
    pricing: list[Pricing] = []
    provider: list[str] = []
    region: list[str] = []
    gpu: list[str] = []  # GPU models; empty: every card
    single_gpu: bool = False
    interruptible: bool = True
    include_unavailable: bool = False
    include_stale: bool = False
    rank_by: str = "total"
    limit: int = 10
    work: JobWork | None = None

    @field_serializer("gpu")
    def _gpu_text(self, gpu: list[str]) -> str | None:
        """Echoed as the parameter is written (`A100`, `A100,H100`); null for every card."""
        return ",".join(gpu) or None

    @property
    def offer_filter(self) -> OfferFilter:
        return OfferFilter(
            gpus=tuple(self.gpu),
            pricings=tuple(p.value for p in self.pricing),
            providers=tuple(self.provider),
            regions=tuple(self.region),
            include_interruptible=self.interruptible,
            include_stale=self.include_stale,
            include_unavailable=self.include_unavailable,
        )


@dataclass(frozen=True, slots=True)
class JobCost:
    billed_hours: float
    total_cny: float
    basis: str  # how the total was reached, in words


def billed_hours(increment_s: int, minimum_s: int, hours: float) -> float:
    """Hours billed for `hours` of use under a billing rule (increment and minimum charge, seconds)."""
    increment = max(1, increment_s)
    seconds = math.ceil(round(hours * 3600, 6) / increment) * increment
    return max(seconds, minimum_s) / 3600


def billed_hours_for(offer: Offer, hours: float) -> float:
    return billed_hours(offer.billing_increment_s, offer.billing_minimum_s, hours)


def monthly_period(offer: Offer, settings: Settings) -> float:
    """A package sold per fixed term (E2E's 30-day plan: unit "term", 720 h) is bought in whole
    terms of its own length; a price per month in whole months of 730 h (CONTRACT §3)."""
    return offer.term_hours if Unit(offer.unit) is Unit.TERM and offer.term_hours else settings.hours_per_month


def whole_periods(hours: float, period: float) -> int:
    return math.ceil(round(hours / period, 9))


def price_segments(offer: Offer, settings: Settings) -> list[tuple[float, float]]:
    """Stepped hourly prices as (from hour, CNY per hour), in order: the first segment at the base
    price, later ones at their step price."""
    assert offer.cny_per_hour is not None and offer.fx_rate is not None
    per_hour = hours_per_unit(Unit(offer.unit), offer.term_hours, settings)
    segments = [(0.0, offer.cny_per_hour)] + [
        (step.after_hours, step.price * offer.fx_rate / per_hour) for step in offer.price_steps
    ]
    segments.sort()
    return segments


# A cost's `basis` is the words of its billing rule for the job's hours, then (but for a term) its
# price's: api.cheapest_rules writes the first once per rule and question, the second per offer.
def period_words(months: int, period: float, settings: Settings) -> str:
    name = "month(s)" if period == settings.hours_per_month else f"term(s) of {period:g} h"
    return f"{months} {name} × "


def period_price_words(cny_per_hour: float, period: float) -> str:
    return f"¥{cny_per_hour * period:.2f}"


def term_words(term: float) -> str:
    return f"whole term of {term:g} h, paid however short the job"


def hourly_words(billed: float) -> str:
    return f"{billed:g} h × "


def hourly_price_words(cny_per_hour: float) -> str:
    return f"¥{cny_per_hour:.4f}/h"


def period_cost(cny_per_hour: float, period: float, hours: float, settings: Settings) -> JobCost:
    """Bought in whole periods of `period` hours (a month, or a package's own term)."""
    months = whole_periods(hours, period)
    billed = months * period
    words = period_words(months, period, settings) + period_price_words(cny_per_hour, period)
    return JobCost(billed, cny_per_hour * billed, words)


def term_cost(cny_per_hour: float, term: float) -> JobCost:
    """A reserved term, paid whole."""
    return JobCost(term, cny_per_hour * term, term_words(term))


def hourly_cost(cny_per_hour: float, billed: float) -> JobCost:
    """`billed` hours (after the billing rule) at one hourly price."""
    return JobCost(billed, cny_per_hour * billed, hourly_words(billed) + hourly_price_words(cny_per_hour))


def job_cost(offer: Offer, hours: float, settings: Settings) -> JobCost | None:
    """What `hours` of wall-clock time costs on `offer`, in CNY; None without a CNY price."""
    if offer.cny_per_hour is None or offer.fx_rate is None:
        return None
    pricing = Pricing(offer.pricing)
    if pricing is Pricing.MONTHLY:
        return period_cost(offer.cny_per_hour, monthly_period(offer, settings), hours, settings)
    if pricing.is_reserved:
        term = term_hours_of(pricing, offer.term_hours, settings)
        assert term is not None
        return term_cost(offer.cny_per_hour, term)
    billed = billed_hours_for(offer, hours)
    if not offer.price_steps:
        return hourly_cost(offer.cny_per_hour, billed)
    used = stepped_use(price_segments(offer, settings), billed)
    parts = [f"{hours_used:g} h × ¥{rate:.4f}/h" for hours_used, rate in used]
    return JobCost(billed, stepped_total(used), " + ".join(parts) + " (stepped price)")


def stepped_use(segments: list[tuple[float, float]], billed: float) -> list[tuple[float, float]]:
    """(hours, CNY per hour) of each segment of a stepped price (`price_segments`) that `billed` hours reach."""
    found = []
    for index, (start, rate) in enumerate(segments):
        end = segments[index + 1][0] if index + 1 < len(segments) else math.inf
        used = max(0.0, min(billed, end) - start)
        if used > 0:
            found.append((used, rate))
    return found


def stepped_total(used: list[tuple[float, float]]) -> float:
    """The total of a stepped price's `stepped_use`, summed in order (what SteppedPrices sums too)."""
    total = 0.0
    for hours, rate in used:
        total += hours * rate
    return total


def pcie_note(how: str) -> str:
    """The note on options whose GPUs only talk over PCIe; `how` says how the job is split."""
    return f"PCIe-only machine: {how} crosses PCIe, not NVLink, so multi-GPU scaling is weaker than over NVLink."


class Judge(Protocol):
    """Viability and extra figures for a job described by the estimator rather than by `mem`."""

    def fits(self, offer: Offer) -> bool: ...

    def fits_each(self, configurations: list[tuple[int, float]]) -> list[bool]:
        """`fits` for an offer of each of `configurations` (gpu_count, gpu_memory_gb: all a verdict depends on)."""
        ...

    @property
    def needs_card_figures(self) -> bool:
        """Whether the ranking or the hours need figures a card may lack (then `unranked` is answered)."""
        ...

    def unranked(self, offer: Offer) -> str | None:
        """Why a viable, priced offer cannot be timed or ranked as asked (no figures for its card); None: it can."""
        ...

    def hours(self, offer: Offer, wall_clock: float | None) -> float:
        """The hours the job takes on `offer`: `wall_clock` as asked, or its own from the amount of work."""
        ...

    def option_fields(self, offer: Offer) -> dict[str, Any]: ...

    def rank_key(self, offer: Offer, cost: JobCost) -> tuple[Any, ...]: ...

    def summary(self) -> dict[str, Any]: ...


def viable(offer: Offer, query: CheapestQuery) -> bool:
    assert query.mem_gb is not None
    if query.single_gpu:
        return offer.gpu_memory_gb >= query.mem_gb
    return offer.gpu_count * offer.gpu_memory_gb >= query.mem_gb


def split_over_pcie(offer: Offer, gpus_used: int) -> bool:
    """A job spread over several GPUs of a machine whose GPUs only talk over PCIe."""
    return gpus_used > 1 and (offer.interconnect or "").lower() == "pcie"


def mem_job_notes(offer: Offer, query: CheapestQuery) -> list[str]:
    assert query.mem_gb is not None
    spans = not query.single_gpu and query.mem_gb > offer.gpu_memory_gb
    if spans and split_over_pcie(offer, offer.gpu_count):
        return [pcie_note(f"a job spread over its {offer.gpu_count} GPUs")]
    return []


def by_total(offer: Offer, cost: JobCost) -> tuple[Any, ...]:
    """The ranking by `mem`: the job's total, then ¥/GB·h, then the offer's key (a total order)."""
    return (cost.total_cny, offer.cny_per_gb_hour or 0.0, offer.key)


@dataclass(frozen=True)
class Selection:
    ranked: list[tuple[Offer, JobCost]]  # best first: all of them here, at least the first `limit` (api.cheapest_fast)
    unpriced: list[Offer]  # viable, but no CNY price (no FX rate): shown, never ranked as zero
    excluded: dict[str, int]  # how many viable offers each filter took out
    unranked: list[tuple[Offer, str]]  # viable and priced, but the ranking asked for has no figure for it
    viable_count: int  # priced viable offers the filters keep and the ranking can rank (ranked or not)


def select(offers: list[Offer], query: CheapestQuery, settings: Settings, judge: Judge | None = None) -> Selection:
    """The viable offers the filters keep, priced and ranked. A viable offer left out only by a flag
    (`interruptible`, `include_stale`, `include_unavailable`) is counted in `excluded`."""
    chosen = query.offer_filter
    excluded = {"stale": 0, "unavailable": 0, "interruptible": 0}
    ranked: list[tuple[Offer, JobCost]] = []
    unpriced: list[Offer] = []
    unranked: list[tuple[Offer, str]] = []
    for offer in offers:
        reason = mismatch(offer, chosen)
        if reason is not None and reason not in excluded:
            continue
        if not (judge.fits(offer) if judge is not None else viable(offer, query)):
            continue
        if reason is not None:
            excluded[reason] += 1
            continue
        if offer.cny_per_hour is None or offer.fx_rate is None:
            unpriced.append(offer)
            continue
        why = judge.unranked(offer) if judge is not None else None
        if why is not None:
            unranked.append((offer, why))
            continue
        hours = judge.hours(offer, query.hours) if judge is not None else query.hours
        assert hours is not None  # without a judge, the question is about wall-clock hours
        cost = job_cost(offer, hours, settings)
        assert cost is not None  # priced: checked above
        ranked.append((offer, cost))
    if judge is not None:
        ranked.sort(key=lambda pair: judge.rank_key(*pair))
    else:
        ranked.sort(key=lambda pair: by_total(*pair))
    return Selection(ranked, unpriced, excluded, unranked, len(ranked))


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.replace(microsecond=0).isoformat() + "Z"


def option_json(rank: int, offer: Offer, cost: JobCost) -> dict[str, object]:
    return {
        "rank": rank,
        "provider": offer.provider,
        "region": offer.region,
        "sku": offer.sku,
        "gpu_model": offer.gpu_model,
        "gpu_memory_gb": offer.gpu_memory_gb,
        "gpu_count": offer.gpu_count,
        "pricing": offer.pricing,
        "price": offer.price,
        "currency": offer.currency,
        "unit": offer.unit,
        "cny_per_hour": offer.cny_per_hour,
        "cny_per_gb_hour": offer.cny_per_gb_hour,
        "billed_hours": round(cost.billed_hours, 6),
        "total_cny": round(cost.total_cny, 2),
        "observed_at": iso(offer.observed_at),
        "stale": offer.stale,
        "availability": offer.availability,
        "source_url": offer.source_url,
        "notes": offer.notes,
        # Extensions beyond CONTRACT §4 (new fields only):
        "interruptible": offer.pricing == Pricing.SPOT.value,
        "form_factor": offer.form_factor,
        "interconnect": offer.interconnect,
        "gpu_fraction": offer.gpu_fraction,
        "gpu_partition": offer.gpu_partition,
        "term_hours": offer.term_hours,
        "fx_rate": offer.fx_rate,
        "fx_date": offer.fx_date.isoformat() if offer.fx_date else None,
        "cost_basis": cost.basis,
        "billing_increment_s": offer.billing_increment_s,  # the billing rule the billed hours follow
        "billing_minimum_s": offer.billing_minimum_s,
        "offline": offer.offline,
        "held_reason": offer.held_reason,
        "bandwidth_gb_s": bandwidth_of(offer),
    }


def card_of(offer: Offer) -> Card | None:
    """The card an offer rents, from the card table (its form factor picks the variant; unknown: PCIe,
    the slower); None for a model or size the table does not know, and for a slice of a GPU (MIG,
    vGPU): the table's figures are a whole card's, and a slice's share of them is not a figure anyone
    published (a MIG 4g.40gb of an A100 80GB is not an A100 40GB)."""
    if offer.gpu_fraction is not None:
        return None
    return card(offer.gpu_model, offer.gpu_memory_gb, offer.form_factor)


def card_words(offer: Offer) -> str:
    """`H100 80GB SXM5`, `A100 MIG 1g.10gb SXM4`: the card or slice, as the messages name it."""
    size = offer.gpu_partition or f"{offer.gpu_memory_gb:g}GB"
    return " ".join(w for w in (offer.gpu_model, size, offer.form_factor) if w)


def no_card_figure(offer: Offer, figure: str) -> str:
    """Why `figure` ("memory bandwidth", "dense BF16 TFLOPS") is unknown for `offer`'s card."""
    if offer.gpu_fraction is not None:
        return (
            f"{card_words(offer)} is a slice of one GPU ({offer.gpu_fraction:.3g} of it): the card table's "
            f"{figure} is a whole card's"
        )
    return f"no {figure} for {card_words(offer)} in the card table"


def bandwidth_of(offer: Offer) -> float | None:
    """The card's peak memory bandwidth (GB/s) from the card table; None when unknown (never guessed)."""
    found = card_of(offer)
    return None if found is None else found.bandwidth_gb_s


def unpriced_json(offer: Offer) -> dict[str, object]:
    return {
        "provider": offer.provider,
        "region": offer.region,
        "sku": offer.sku,
        "pricing": offer.pricing,
        "price": offer.price,
        "currency": offer.currency,
        "unit": offer.unit,
        "reason": offer.fx_note or "no CNY price",
    }


def unranked_json(offer: Offer, reason: str) -> dict[str, object]:
    return {
        "provider": offer.provider,
        "region": offer.region,
        "sku": offer.sku,
        "gpu_model": offer.gpu_model,
        "gpu_memory_gb": offer.gpu_memory_gb,
        "form_factor": offer.form_factor,
        "gpu_count": offer.gpu_count,
        "gpu_partition": offer.gpu_partition,
        "gpu_fraction": offer.gpu_fraction,
        "pricing": offer.pricing,
        "cny_per_hour": offer.cny_per_hour,
        "reason": reason,
    }


def answer(
    offers: list[Offer],
    query: CheapestQuery,
    settings: Settings,
    as_of: datetime | None,
    query_echo: dict[str, object],
    judge: Judge | None = None,
    selection: Selection | None = None,
) -> dict[str, object]:
    """The answer's JSON; `selection` when it was already made (api.cheapest_fast), else `select`'s."""
    if selection is None:
        selection = select(offers, query, settings, judge)
    options = []
    for index, (offer, cost) in enumerate(selection.ranked[: query.limit]):
        row = option_json(index + 1, offer, cost)
        row.update(option_extra(offer, query, judge))
        options.append(row)
    unpriced = [unpriced_json(o) for o in selection.unpriced]
    return answer_fields(query_echo, as_of, selection, judge, options, unpriced)


def option_extra(offer: Offer, query: CheapestQuery, judge: Judge | None) -> dict[str, Any]:
    """An option's members after option_json's: the estimator's figures, or the notes on a `mem` job."""
    return judge.option_fields(offer) if judge is not None else {"job_notes": mem_job_notes(offer, query)}


def answer_fields(
    query_echo: dict[str, object],
    as_of: datetime | None,
    selection: Selection,
    judge: Judge | None,
    options: list[Any],
    unpriced: list[Any],
) -> dict[str, object]:
    """The answer's members in order, around its `options` and `unpriced` entries (as dicts, or
    already written: api.cheapest_write). The judge's summary is read after the options were made."""
    summary = judge.summary() if judge is not None else {}
    if judge is not None and judge.needs_card_figures:  # options it could not time or rank, and why
        summary["unranked"] = [unranked_json(o, why) for o, why in selection.unranked]
    return {
        "query": query_echo,
        "estimate": summary.pop("estimate", None),
        "options": options,
        "as_of": iso(as_of),
        # Extensions: what was viable but left out, and why; offers that could not be priced in CNY;
        # with the estimator, how each configuration was judged and how throughput was estimated.
        "viable_count": selection.viable_count,
        "excluded": selection.excluded,
        "unpriced": unpriced,
        **summary,
    }
