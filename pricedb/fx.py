"""Currency conversion to CNY from EUR-based reference rates (ECB convention: units per 1 EUR).

A quote uses the rates of its observation date, else of the latest earlier date on which both its
currency and CNY were quoted. Cross rates go through EUR: USD→CNY = (CNY per EUR) / (USD per EUR).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

from pricedb.models import FxRate

TARGET = "CNY"
BASE = "EUR"


@dataclass(frozen=True, slots=True)
class Conversion:
    rate: float  # multiply a native amount by this to get CNY
    on: date | None  # the reference date used; None when no conversion was needed


@dataclass
class FxTable:
    """In-memory view of `fx_rates`, small (30 currencies × a few thousand days at most)."""

    _by_currency: dict[str, dict[date, float]] = field(default_factory=dict)
    _common_days: dict[str, list[date]] = field(default_factory=dict)  # cache, cleared by add()

    @classmethod
    def from_rates(cls, rates: Iterable[FxRate]) -> FxTable:
        table = cls()
        for rate in rates:
            table.add(rate)
        return table

    def add(self, rate: FxRate) -> None:
        self._by_currency.setdefault(rate.currency.upper(), {})[rate.date] = rate.rate
        self._common_days.clear()

    def _per_eur(self, currency: str) -> dict[date, float] | None:
        if currency == BASE:
            return None  # 1.0 on every day
        return self._by_currency.get(currency)

    def to_cny(self, currency: str, on: date) -> Conversion | None:
        """Rate to convert `currency` to CNY on day `on`, or None when no rate is known."""
        currency = currency.upper()
        if currency == TARGET:
            return Conversion(1.0, None)
        cny = self._by_currency.get(TARGET)
        if not cny:
            return None
        native = self._per_eur(currency)
        if currency != BASE and not native:
            return None
        days = self._common_days.get(currency)
        if days is None:
            days = sorted(d for d in cny if native is None or d in native)
            self._common_days[currency] = days
        position = bisect.bisect_right(days, on)
        if position == 0:
            return None
        day = days[position - 1]
        native_per_eur = 1.0 if native is None else native[day]
        return Conversion(cny[day] / native_per_eur, day)

    def __bool__(self) -> bool:
        return bool(self._by_currency)
