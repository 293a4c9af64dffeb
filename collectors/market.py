"""Marketplaces (Vast.ai hosts, AutoDL machines) list the same rentable thing many times, once per
host, each at its own price. Storing every listing would flood the store with near-duplicates and
let one odd host stand for the market; storing only an average would hide the price one can
actually rent at. So collectors group the listings (by GPU, GPU count, region, pricing) and store
one offer per group: the **cheapest** listing's price, with the **median** and the **number of
listings** in the offer's notes ("cheapest of 14 offers; median 1.23 USD/h").
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

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
