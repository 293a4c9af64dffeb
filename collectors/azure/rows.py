"""Reading Azure Retail Prices rows: which A100 SKUs are taken, and what each row means.

`classify` decides, for one row, the pricing it stands for or the reason it is left out; the
collector (collectors.azure) applies it to every row and builds the quotes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from collectors.base import RawResponse
from collectors.errors import ParseError
from pricedb.models import Pricing

# GPUs per VM: not in the price API (only in the authenticated Resource SKUs API).
GPU_COUNT: dict[str, int] = {
    "Standard_NC24ads_A100_v4": 1,  # A100 80GB PCIe
    "Standard_NC48ads_A100_v4": 2,
    "Standard_NC96ads_A100_v4": 4,
    "Standard_ND96asr_v4": 8,  # A100 40GB SXM4
    "Standard_ND96amsr_A100_v4": 8,  # A100 80GB SXM4
}
_CANONICAL_SKU = {sku.lower(): sku for sku in GPU_COUNT}
RESERVATION_YEARS = {"1 Year": 1, "3 Years": 3}
RESERVED = {1: Pricing.RESERVED_1Y, 3: Pricing.RESERVED_3Y}

# Why a row is not collected (classify() returns one of these).
SKIP_UNKNOWN_SKU = "not an A100 SKU in the GPU_COUNT table"
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


def classify(item: Mapping[str, Any], now: datetime | None = None, where: str = "row") -> Pricing | str:
    """The pricing a row stands for, or the reason (a SKIP_* string) it is not collected.
    Raises ParseError when a row of a known SKU lacks what is needed to read it."""
    sku = require(item, "armSkuName", where)
    if str(sku).lower() not in _CANONICAL_SKU:
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
    if "windows" in product.lower():
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
    return _CANONICAL_SKU[str(item["armSkuName"]).lower()]


def region_of(item: Mapping[str, Any]) -> str:
    return str(item["armRegionName"]).strip().lower()
