"""What the writers of other tools' catalog formats share (pricedb.formats.skypilot, pricedb.formats.gpuhunt):
the sheet they return, and USD per instance-hour for any offer.

Both formats are hourly rentals in USD: only on-demand and spot offers are written; a price in
another currency is converted with the ECB reference rate of its FX date (the notes say so). Host
shapes (vCPUs, RAM) come from the offer itself, else from pricedb.shapes' table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pricedb.fx import FxTable
from pricedb.queries import Offer

HOURLY = ("on_demand", "spot")


@dataclass
class ForeignSheet:
    text: str
    rows: int
    notes: list[str] = field(default_factory=list)


class UsdPricer:
    """USD per instance-hour for an offer, converting other currencies through the ECB rates."""

    def __init__(self, fx: FxTable) -> None:
        self.fx = fx
        self.converted: set[str] = set()
        self.unconvertible = 0

    def __call__(self, offer: Offer) -> float | None:
        if offer.currency == "USD" and offer.unit == "hour":
            return offer.price
        if offer.cny_per_hour is not None:
            rate = self.fx.to_cny("USD", offer.fx_date or offer.observed_at.date())
            if rate is not None:
                self.converted.add(f"{offer.currency}/{offer.unit}")
                return round(offer.cny_per_hour / rate.rate, 6)
        self.unconvertible += 1
        return None

    def notes(self) -> list[str]:
        notes = []
        if self.converted:
            notes.append(
                f"converted to USD per hour via CNY with ECB reference rates: {', '.join(sorted(self.converted))}"
            )
        if self.unconvertible:
            notes.append(f"{self.unconvertible} offers left out: no USD rate known for their currency")
        return notes
