"""Which offers a question is about: one description read by both sides that filter.

`OfferFilter` says what a question keeps; `mismatch`/`matches` apply it to offers in memory
(/offers, /cheapest, /export and the catalogs), `sql_where` to the observations table (history).
A rule is written once per side, next to the other, so the two cannot drift apart:

- gpus, pricings, providers, skus: exact values, any of them (empty: all); a GPU model is named as
  pricedb.cards spells it (`A100`), the only spelling collectors/sanity.py stores;
- regions: any of them, in any case (empty: all);
- interruptible (spot), stale, sold-out offers: kept unless the `include_*` flag is off.
  Observations have no staleness (each is shown as it was seen), so `sql_where` refuses a filter
  that leaves stale offers out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pricedb.models import Availability, Pricing
from pricedb.queries import Offer

Mismatch = Literal["gpu", "pricing", "provider", "region", "sku", "interruptible", "stale", "unavailable"]


@dataclass(frozen=True, slots=True)
class OfferFilter:
    gpus: tuple[str, ...] = ()  # empty: every card
    pricings: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    skus: tuple[str, ...] = ()
    include_interruptible: bool = True
    include_stale: bool = True
    include_unavailable: bool = True
    lower_regions: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # regions compare in lower case on both sides
        object.__setattr__(self, "lower_regions", frozenset(r.lower() for r in self.regions))


SPOT = Pricing.SPOT.value
SOLD_OUT = Availability.SOLD_OUT.value


def mismatch(offer: Offer, chosen: OfferFilter) -> Mismatch | None:
    """The first rule `offer` fails, in the order above (the selecting rules before the flags, which
    /cheapest counts as exclusions); None when it matches."""
    if chosen.gpus and offer.gpu_model not in chosen.gpus:
        return "gpu"
    if chosen.pricings and offer.pricing not in chosen.pricings:
        return "pricing"
    if chosen.providers and offer.provider not in chosen.providers:
        return "provider"
    if chosen.lower_regions and offer.region.lower() not in chosen.lower_regions:
        return "region"
    if chosen.skus and offer.sku not in chosen.skus:
        return "sku"
    if not chosen.include_interruptible and offer.pricing == SPOT:
        return "interruptible"
    if not chosen.include_stale and offer.stale:
        return "stale"
    if not chosen.include_unavailable and offer.availability == SOLD_OUT:
        return "unavailable"
    return None


def matches(offer: Offer, chosen: OfferFilter) -> bool:
    return mismatch(offer, chosen) is None


def sql_where(chosen: OfferFilter) -> tuple[list[str], list[Any]]:
    """The same rules as `mismatch`, as clauses over the observations table and their values (at least
    one clause: TRUE when nothing narrows the question)."""
    if not chosen.include_stale:
        raise ValueError("observations have no staleness: a filter on observations keeps stale offers")
    clauses: list[str] = ["TRUE"]
    values: list[Any] = []
    for column, any_of in (
        ("gpu_model", chosen.gpus),
        ("pricing", chosen.pricings),
        ("provider", chosen.providers),
        ("lower(region)", sorted(chosen.lower_regions)),
        ("sku", chosen.skus),
    ):
        if any_of:
            clauses.append(f"{column} IN ({', '.join('?' for _ in any_of)})")
            values.extend(any_of)
    if not chosen.include_interruptible:
        clauses.append("pricing <> ?")
        values.append(SPOT)
    if not chosen.include_unavailable:
        clauses.append("availability <> ?")
        values.append(SOLD_OUT)
    return clauses, values
