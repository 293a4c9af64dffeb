"""Reading Azure Retail Prices rows: which GPU sizes are taken, and what each row means.

`classify` decides, for one row, the pricing it stands for or the reason it is left out; the
collector (collectors.azure) applies it to every row and builds the quotes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from collectors.azure.sizes import NOT_GPUS, size_named
from collectors.base import RawResponse
from collectors.errors import ParseError
from pricedb.models import Pricing

RESERVATION_YEARS = {"1 Year": 1, "3 Years": 3}
RESERVED = {1: Pricing.RESERVED_1Y, 3: Pricing.RESERVED_3Y}

# Why a row is not collected (classify() returns one of these).
SKIP_UNKNOWN_SKU = "an N-series size not in the size table (card unknown)"
SKIP_NOT_GPU = "not a GPU size (NP series: FPGAs)"
SKIP_PROMO = "a _Promo size (a discounted older series)"
SKIP_WINDOWS = "Windows (licence included)"
SKIP_CLOUD_SERVICES = "Cloud Services"
SKIP_DEVTEST = "DevTestConsumption (Dev/Test subscriptions only)"
SKIP_LOW_PRIORITY = "Low Priority (Batch, being retired)"
SKIP_ZERO_PRICE = "price is not positive"
SKIP_FIVE_YEAR = "5-year reservation (no reserved_5y pricing)"
SKIP_OTHER_TERM = "reservation term not 1 or 3 years"
SKIP_OTHER_TYPE = "price type not Consumption or Reservation"
SKIP_UNIT = "unit of measure not '1 Hour'"
SKIP_ENDED = "effectiveEndDate has passed"
SKIP_NO_REGION = "no armRegionName"

_REQUIRED_FIELDS = (
    "armRegionName",
    "type",
    "retailPrice",
    "currencyCode",
    "productName",
    "skuName",
    "meterName",
    "unitOfMeasure",
    "effectiveStartDate",
)


def require(item: Mapping[str, Any], name: str, where: str) -> Any:
    if name not in item:
        raise ParseError(f"{where}: a row has no {name!r} field (has the Retail Prices API changed?)")
    return item[name]


def parse_when(value: Any, name: str, where: str) -> datetime:
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError as exc:
        raise ParseError(f"{where}: {name} {value!r} is not an ISO date") from exc
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _ends_with(item: Mapping[str, Any], suffix: str) -> bool:
    return any(str(item.get(f, "")).strip().lower().endswith(suffix) for f in ("skuName", "meterName"))


_WINDOWS = re.compile(r"\bwin(dows)?\b", re.IGNORECASE)  # "… Series Windows", and "… Srs Win" too


def classify(item: Mapping[str, Any], now: datetime | None = None, where: str = "row") -> Pricing | str:
    """The pricing a row stands for, or the reason (a SKIP_* string) it is not collected.
    Raises ParseError when a row of a known SKU lacks what is needed to read it."""
    sku = str(require(item, "armSkuName", where)).strip().lower()
    if sku.endswith("_promo"):
        return SKIP_PROMO
    if sku.startswith(NOT_GPUS):
        return SKIP_NOT_GPU
    known = size_named(sku)
    if known is None:
        return SKIP_UNKNOWN_SKU
    for name in _REQUIRED_FIELDS:
        require(item, name, where)
    price = item["retailPrice"]
    if isinstance(price, bool) or not isinstance(price, int | float):
        raise ParseError(f"{where}: retailPrice {price!r} of {sku} is not a number")
    kind = item["type"]
    product = str(item["productName"])
    if kind == "DevTestConsumption":
        return SKIP_DEVTEST
    if kind not in ("Consumption", "Reservation"):
        return SKIP_OTHER_TYPE
    if _WINDOWS.search(product):
        return SKIP_WINDOWS
    if "cloud services" in product.lower():
        return SKIP_CLOUD_SERVICES
    if not item["armRegionName"]:
        return SKIP_NO_REGION
    if price <= 0:
        return SKIP_ZERO_PRICE
    if str(item["unitOfMeasure"]).strip() != "1 Hour":
        return SKIP_UNIT
    ended = item.get("effectiveEndDate")
    if ended and now is not None and parse_when(ended, "effectiveEndDate", where) <= now:
        return SKIP_ENDED
    if kind == "Reservation":
        term = require(item, "reservationTerm", where)
        if term == "5 Years":
            return SKIP_FIVE_YEAR
        years = RESERVATION_YEARS.get(term)
        return RESERVED[years] if years else SKIP_OTHER_TERM
    if _ends_with(item, " low priority"):
        return SKIP_LOW_PRIORITY
    return Pricing.SPOT if _ends_with(item, " spot") else Pricing.ON_DEMAND


def items_of(raw: RawResponse) -> list[Mapping[str, Any]]:
    return raw.json_list("Items", "Retail Prices API")


def num(value: Any) -> str:
    return f"{float(value):.10g}"


def sku_of(item: Mapping[str, Any]) -> str:
    """The table's spelling of a row's `armSkuName` (the row's own where the table lacks it)."""
    return size_named(str(item["armSkuName"])) or str(item["armSkuName"]).strip()


def region_of(item: Mapping[str, Any]) -> str:
    return str(item["armRegionName"]).strip().lower()
