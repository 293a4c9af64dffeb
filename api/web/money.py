"""Prices in the currency a reader picks, from the FX rates gpuprice stores.

Every CNY figure of an answer was converted from the native price with the ECB rate of one day
(`fx_date`; none for prices already in CNY). Shown in USD, EUR or INR, a figure is divided by that
same day's rate for the chosen currency (the latest stored one where no conversion was needed), so
a USD offer shown in USD is its own price again; "native" divides by the offer's own rate
(`fx_rate`), giving its figure in the currency it is sold in. The rates travel with the page, so
switching currency in the browser divides by exactly the numbers the server would."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from pricedb.fx import FxTable

CNY = "CNY"
NATIVE = "native"
CURRENCIES = (CNY, "USD", "EUR", "INR", NATIVE)
SYMBOLS = {CNY: "¥", "USD": "$", "EUR": "€", "INR": "₹"}
LATEST = ""  # the rates' key for figures that needed no conversion


def parse_currency(text: str | None) -> str | None:
    """The currency named (any case), or None when it is not one of CURRENCIES."""
    if not text or not text.strip():
        return CNY
    wanted = text.strip().lower()
    return next((c for c in CURRENCIES if c.lower() == wanted), None)


def rates_for(fx: FxTable, days: Iterable[str | None], today: date) -> dict[str, dict[str, float]]:
    """CNY per unit of each currency on each conversion day of the rows (LATEST: as of today)."""
    table: dict[str, dict[str, float]] = {}
    for day in {d or LATEST for d in days} | {LATEST}:
        on = date.fromisoformat(day) if day else today
        rates = {}
        for currency in CURRENCIES:
            if currency in SYMBOLS:
                conversion = fx.to_cny(currency, on)
                if conversion is not None:
                    rates[currency] = conversion.rate
        table[day] = rates
    return table


def convert(cny: float | None, row: dict[str, Any], currency: str, rates: dict[str, dict[str, float]]) -> float | None:
    """A CNY figure of `row` in `currency` (None: not known, or no rate)."""
    if cny is None or currency == CNY:
        return cny
    rate = row.get("fx_rate") if currency == NATIVE else rates.get(row.get("fx_date") or LATEST, {}).get(currency)
    return cny / rate if rate else None


def amount(value: float) -> str:
    """How the pages write an amount: cents from 1 up, four decimals below (¥/GB·h is often 0.03)."""
    return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4f}"


def symbol(currency: str) -> str:
    return SYMBOLS.get(currency, "")
