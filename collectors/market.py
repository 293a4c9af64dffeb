"""Marketplaces (Vast.ai hosts, AutoDL machines) list the same rentable thing many times, once per
host, each at its own price. Storing every listing would flood the store with near-duplicates and
let one odd host stand for the market; storing only an average would hide the price one can
actually rent at. So collectors group the listings (by GPU, GPU count, region, pricing) and store
one offer per group: the **cheapest** listing's price, with the **median** and the **number of
listings** in the offer's notes ("cheapest of 14 offers; median 1.23 USD/h"). Listings name their
card and report its usable memory; `sized_card` reads both the same way for every marketplace.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from pricedb.card_names import GpuSpec, identify
from pricedb.cards import nearest_known_size

T = TypeVar("T")


def amount(value: float) -> str:
    """A price for notes: up to four decimals, no trailing zeros (1.2, 0.0208, 9.328)."""
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


@dataclass(frozen=True)
class Summary(Generic[T]):
    cheapest: T
    cheapest_price: float
    median: float
    count: int

    def note(self, noun: str, unit: str, qualifier: str = "") -> str:
        """ "cheapest of 14 offers; median 1.23 USD/h" (`qualifier` follows the noun)."""
        plural = noun if self.count == 1 else f"{noun}s"
        return f"cheapest of {self.count} {plural}{qualifier}; median {amount(self.median)} {unit}"


def summarize(listings: Sequence[T], price: Callable[[T], float]) -> Summary[T]:
    """The cheapest listing (the first one read, on a tie), the median price and the count."""
    if not listings:
        raise ValueError("no listings to summarize")
    ordered = sorted(listings, key=price)  # stable: ties keep their reading order
    prices = [price(listing) for listing in ordered]
    return Summary(ordered[0], prices[0], statistics.median(prices), len(prices))


def sized_card(name: str, reported_gb: float) -> GpuSpec | None:
    """The card a marketplace listing names ("RTX 4090", "A100-SXM4-80GB"), in the size its reported
    memory (GB or GiB, usable: 79.6 for an 80GB card) is within 7% of; None when the card is not sold
    in a size that close (a modified 48GB RTX 4090). UnknownGpu for a name the card table does not know."""
    model = identify(name, reported_gb).model
    memory = nearest_known_size(model, reported_gb)
    return None if memory is None else identify(name, memory)
