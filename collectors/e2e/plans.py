"""One E2E node plan, whichever source it was read from, and the quotes it makes.

Both sources (the public pricing page and the MyAccount plan API) publish per plan an hourly price and
committed plans of so many days at a price for the whole term. What becomes of them:

- the hourly price → `on_demand`, billed per minute;
- a 30-day committed plan → `monthly`, a 365-day one → `reserved_1y`, a 1095-day one → `reserved_3y`, each
  stored as published: the price of the whole term (`unit=term`, `term_hours` = days × 24), paid upfront
  (a committed price the page shows "/hr" or "/mo" is stored per hour or per month instead);
- any other term (90 days) is not collected — the contract has no pricing for it, and calling it
  monthly or yearly would misstate the commitment — but its price is kept in the notes of the plan's
  30-day quote (else its 365-day or hourly one), so nothing published is lost.

Prices are INR excluding 18% GST, which E2E charges on top (`tax_included=False`, said in every note).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from collectors.base import QuoteMaker, RawResponse
from pricedb.card_names import GpuSpec
from pricedb.models import Availability, Pricing, Quote, Unit

GST_NOTE = "price excludes 18% GST, which E2E charges on top"
PLACEHOLDER_NOTE = "fixture price (placeholder in a reconstructed page, not a published E2E figure)"
PRICING_OF_DAYS = {30: Pricing.MONTHLY, 365: Pricing.RESERVED_1Y, 1095: Pricing.RESERVED_3Y}


@dataclass(frozen=True)
class Price:
    amount: float
    currency: str
    per: str  # "hour", "month" or "term" (the whole committed period)
    text: str  # the price as published
    placeholder: bool = False  # a placeholder in a reconstructed fixture (its notes say so)


@dataclass
class Plan:
    sku: str
    gpu: GpuSpec
    gpu_count: int
    hourly: Price | None = None
    committed: dict[int, Price] = field(default_factory=dict)  # days -> price of the whole term
    availability: Availability = Availability.UNKNOWN
    host: str = ""  # vCPU / RAM / storage as published, for the notes
    shape: dict[str, object] = field(default_factory=dict)  # vcpus / memory_gib, where both are read
    notes: list[str] = field(default_factory=list)  # what else the source says of the plan


def plan_quotes(quote: QuoteMaker, raw: RawResponse, plan: Plan, region: str, extra: Sequence[str] = ()) -> list[Quote]:
    """The plan's quotes: on-demand and each committed term the contract has a pricing for; `extra`
    notes go on every quote."""
    terms: list[tuple[Pricing, Price, int | None]] = []
    if plan.hourly is not None:
        terms.append((Pricing.ON_DEMAND, plan.hourly, None))
    terms += [(PRICING_OF_DAYS[d], price, d) for d, price in sorted(plan.committed.items()) if d in PRICING_OF_DAYS]
    carrier = next((days for days in (30, 365) if days in plan.committed), None)  # None: the hourly quote
    quotes = []
    for pricing, price, days in terms:
        notes = [GST_NOTE]
        if days is None:
            notes.append("billed per minute")
        else:
            whole = " for the whole term" if price.per == "term" else ""
            notes.append(f"{days}-day committed plan, charged upfront{whole} ({price.text})")
        if days == carrier:
            notes += _uncollected(plan)
        notes += plan.notes if days is None else []
        if plan.host:
            notes.append(plan.host)
        notes += extra
        if price.placeholder:
            notes.append(PLACEHOLDER_NOTE)
        unit, term_hours = _unit(price, days)
        quotes.append(
            quote(
                raw,
                f"plan {plan.sku!r} {pricing.value}",
                region=region,
                sku=plan.sku,
                **plan.gpu.quote_fields(),
                gpu_count=plan.gpu_count,
                pricing=pricing,
                price=price.amount,
                currency=price.currency,
                unit=unit,
                term_hours=term_hours,
                tax_included=False,
                availability=plan.availability,
                notes="; ".join(notes),
                **plan.shape,
            )
        )
    return quotes


def _uncollected(plan: Plan) -> list[str]:
    return [
        f"a {days}-day committed plan is also published ({price.text}), not collected: "
        f"the contract has no {days}-day pricing"
        for days, price in sorted(plan.committed.items())
        if days not in PRICING_OF_DAYS
    ]


def _unit(price: Price, days: int | None) -> tuple[Unit, float | None]:
    if price.per == "hour":
        return Unit.HOUR, None
    if price.per == "month":
        return Unit.MONTH, None
    assert days is not None, "a whole-term price needs its term"
    return Unit.TERM, days * 24.0
