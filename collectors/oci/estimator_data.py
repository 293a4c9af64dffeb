"""Reading Oracle's Cost Estimator data: a shape's fields, its billed parts and their USD
pay-as-you-go prices, summed into the price of one instance-hour, and its host shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.errors import ParseError
from pricedb.shapes import host_fields

CURRENCY = "USD"
PRICE_MODEL = "PAY_AS_YOU_GO"
VCPUS_PER_OCPU = 2  # an x86 OCPU is one core with two hardware threads (Oracle's "OCPU" definition)


class ShapeError(Exception):
    """One shape cannot be priced from the data (the reason is kept; other shapes carry on)."""


def field_of(item: Mapping[str, Any], name: str, where: str) -> Any:
    if not isinstance(item, Mapping) or name not in item:
        raise ParseError(f"{where}: no {name!r} field (has the Cost Estimator data changed?)")
    return item[name]


def value_of(item: Mapping[str, Any], name: str, where: str) -> str:
    field = field_of(item, name, where)
    return str(field.get("value")) if isinstance(field, Mapping) else str(field)


def positive_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ShapeError(f"{what} is {value!r}, not a positive number")
    return float(value)


def usd_hourly(product: Mapping[str, Any]) -> float:
    """The product's USD pay-as-you-go price per hour (per unit of its metric)."""
    part = product.get("partNumber")
    if product.get("pricetype") != "HOUR":
        raise ShapeError(f"part {part} is priced per {product.get('pricetype')!r}, not per HOUR")
    if product.get("billingModel", "UCM") != "UCM":
        raise ShapeError(f"part {part} has billing model {product.get('billingModel')!r}, not UCM")
    for localization in product.get("currencyCodeLocalizations") or []:
        if isinstance(localization, Mapping) and localization.get("currencyCode") == CURRENCY:
            prices = [p for p in localization.get("prices") or [] if p.get("model") == PRICE_MODEL]
            if len(prices) != 1:
                raise ShapeError(f"part {part} has {len(prices)} USD {PRICE_MODEL} prices, expected one")
            return positive_number(prices[0].get("value"), f"the USD price of part {part}")
    raise ShapeError(f"part {part} has no USD price")


def host_of(shape: Mapping[str, Any]) -> dict[str, Any]:
    """vCPUs (the "ocpu" part's `qty` OCPUs × 2) and RAM (`bundleMemoryQty` GB, GiB in Oracle's shape
    tables) of a GPU shape; empty when the estimator does not say."""
    ocpus = [p.get("qty") for p in shape.get("products") or [] if (p.get("type") or {}).get("value") == "ocpu"]
    if len(ocpus) != 1 or isinstance(ocpus[0], bool) or not isinstance(ocpus[0], int | float):
        return {}
    return host_fields(ocpus[0] * VCPUS_PER_OCPU, shape.get("bundleMemoryQty"))


def shape_price(shape: Mapping[str, Any], products: Mapping[str, Mapping[str, Any]], gpus: int) -> tuple[float, str]:
    """(USD per instance-hour, the sum in words) from the shape's billed parts."""
    total, terms = 0.0, []
    parts = shape.get("products")
    if not isinstance(parts, list) or not parts:
        raise ShapeError("no billed parts ('products')")
    for billed in parts:
        number = str(billed.get("partNumber"))
        kind = (billed.get("type") or {}).get("value")
        product = products.get(number)
        if product is None:
            raise ShapeError(f"part {number} is not in products.json")
        price = usd_hourly(product)
        label = f"part {number} {product.get('displayName', '')!r}".replace(" ''", "")
        if kind == "ocpu":  # on a GPU shape, the "ocpu" part is the per-GPU price (host included)
            total += price * gpus
            terms.append(f"{gpus} GPU × {price:g} USD/GPU-h ({label}; {billed.get('qty')} OCPUs included)")
        elif kind == "memory":
            quantity = positive_number(billed.get("qty"), f"memory qty of part {number}")
            total += price * quantity
            terms.append(f"{quantity:g} GB × {price:g} USD/GB-h ({label})")
        else:
            raise ShapeError(f"part {number} is of type {kind!r}, not ocpu or memory")
    return total, " + ".join(terms)
