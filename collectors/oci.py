"""Oracle Cloud Infrastructure: A100 bare-metal shapes from the public Cost Estimator data (no key).

Sources (the JSON behind https://www.oracle.com/cloud/costestimator.html):
- shapes   `GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json`:
  `items[]{name, hidden, status, allowPreemptible, bundleMemoryQty, gpuQty, gpuMemoryQty,
  shapeType{value}, subType{value}, products[{partNumber, qty, type{value}}]}`;
- products `GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/products.json`:
  `items[]{partNumber, displayName, billingModel, pricetype, currencyCodeLocalizations[{currencyCode,
  prices[{model, value}]}]}`, prices in several currencies; the USD PAY_AS_YOU_GO one is taken.

What is taken: every active, listed GPU shape whose name is an A100 in pricedb.card_names —
`BM.GPU4.8` (8 × A100 40GB, part B93544 "OCI - Compute - GPU - E4") and `BM.GPU.A100-v2.8`
(8 × A100 80GB, part B95907 "Compute - GPU - A100 - v2"). The price is the sum of the shape's
billed parts: a GPU shape's "ocpu" part is priced **per GPU-hour** (× `gpuQty`, as gpuhunt and
skypilot read it; the OCPUs and memory are included), a "memory" part (none on today's GPU shapes)
per GB-hour × `qty`. Stored per instance, with the arithmetic in the notes.

Pricings: on-demand; preemptible = 50% of on-demand, as Oracle publishes ("always 50% off"), but
only for shapes the estimator marks `allowPreemptible` — Oracle's preemptible capacity does not
support bare metal, so today's A100 shapes have no preemptible price and their notes say so.

Region: OCI list prices are the same in every commercial region and the estimator does not say
which regions have the shapes, so the offer is stored once, in region `global`;
`GPUPRICE_OCI_REGIONS=us-ashburn-1,eu-frankfurt-1` stores the same price under each
listed region instead, for users who filter by region.

Quirks: fractional quantities (`qty` 81.6 on BM.DenseIO.E5.128); `gpuMemoryQty` is the shape total
for the A100 shapes (320 / 640) but per GPU on some newer ones, so the GPU table decides the memory
and the estimator's figure is only cross-checked; display suffixes like " (NVL72)" on names;
`processorType` "arm" on the A100 shapes (AMD hosts: their OCPUs count as x86, 2 vCPUs each, as
SkyPilot's OCI catalog counts them). Host shape: the "ocpu" part's `qty` × 2 vCPUs and
`bundleMemoryQty` GB of RAM (BM.GPU4.8: 64 OCPUs = 128 vCPUs, 2048 GB). Billing is per second with a one-minute
minimum; list prices exclude tax. Scope: one, `all`, daily.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ValidationError

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.card_names import UnknownGpu, identify
from pricedb.cards import nearest_known_size
from pricedb.models import Pricing, Quote, Unit
from pricedb.shapes import host_fields

__all__ = ["OciCollector"]

DATA_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
SHAPES_URL = f"{DATA_URL}/shapes.json"
PRODUCTS_URL = f"{DATA_URL}/products.json"
CURRENCY = "USD"
PRICE_MODEL = "PAY_AS_YOU_GO"
PREEMPTIBLE_FACTOR = 0.5  # "Preemptible instances are priced at 50% of the price of regular instances"
GLOBAL_REGION = "global"
PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
VCPUS_PER_OCPU = 2  # an x86 OCPU is one core with two hardware threads (Oracle's "OCPU" definition)


class ShapeError(Exception):
    """One shape cannot be priced from the data (the reason is kept; other shapes carry on)."""


def _get(item: Mapping[str, Any], name: str, where: str) -> Any:
    if not isinstance(item, Mapping) or name not in item:
        raise ParseError(f"{where}: no {name!r} field (has the Cost Estimator data changed?)")
    return item[name]


def _value(item: Mapping[str, Any], name: str, where: str) -> str:
    field = _get(item, name, where)
    return str(field.get("value")) if isinstance(field, Mapping) else str(field)


def _count(value: Any, what: str) -> float:
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
            return _count(prices[0].get("value"), f"the USD price of part {part}")
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
            quantity = _count(billed.get("qty"), f"memory qty of part {number}")
            total += price * quantity
            terms.append(f"{quantity:g} GB × {price:g} USD/GB-h ({label})")
        else:
            raise ShapeError(f"part {number} is of type {kind!r}, not ocpu or memory")
    return total, " + ".join(terms)


class OciCollector(Collector):
    name = "oci"
    title = "Oracle Cloud Infrastructure"
    source_urls = (SHAPES_URL, PRODUCTS_URL)
    pricings = PRICINGS
    scopes = (Scope("all", PRICINGS, 24 * 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 60

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        shapes = await http.get(SHAPES_URL, label="shapes")
        products = await http.get(PRODUCTS_URL, label="products")
        return Fetched([shapes, products])

    def parse(self, fetched: Fetched) -> list[Quote]:
        raws = {raw.label: raw for raw in fetched.responses}
        if set(raws) != {"shapes", "products"}:
            raise ParseError(f"expected the shapes and products answers, got {sorted(raws)}")
        products = {str(p.get("partNumber")): p for p in raws["products"].json_list("items", "Cost Estimator data")}
        quotes: list[Quote] = []
        problems: list[str] = []
        for shape in raws["shapes"].json_list("items", "Cost Estimator data"):
            where = f"{raws['shapes'].url} shape {shape.get('name', '?')}"
            name = re.sub(r"\s*\([^)]*\)\s*$", "", str(_get(shape, "name", where)))
            if _value(shape, "subType", where) != "gpu":
                continue
            try:
                spec = identify(name)
            except UnknownGpu:
                continue
            if spec.model != "A100":
                continue
            if _get(shape, "hidden", where) or _get(shape, "status", where) != "ACTIVE":
                problems.append(f"{name}: hidden or not ACTIVE")
                continue
            try:
                quotes.extend(self._quotes(shape, name, products, raws["products"], where))
            except ShapeError as exc:
                problems.append(f"{name}: {exc}")
        if not quotes:
            why = "; ".join(problems) or "no A100 shape in shapes.json"
            raise ParseError(f"{raws['shapes'].url}: no A100 shape could be priced ({why})")
        return quotes

    def _quotes(
        self,
        shape: Mapping[str, Any],
        name: str,
        products: Mapping[str, Mapping[str, Any]],
        raw: RawResponse,
        where: str,
    ) -> list[Quote]:
        spec = identify(name)
        gpus = int(_count(_get(shape, "gpuQty", where), "gpuQty"))
        price, sum_words = shape_price(shape, products, gpus)
        notes = [f"{sum_words} = {price:g} USD/h per instance; same list price in every OCI commercial region"]
        reported = shape.get("gpuMemoryQty")
        if isinstance(reported, int | float) and reported > 0:
            # the shape total on the A100 shapes, the per-GPU figure on some others: either agrees
            sizes = {nearest_known_size(spec.model, reported / gpus), nearest_known_size(spec.model, reported)}
            if spec.memory_gb not in sizes:
                notes.append(f"the estimator lists {reported:g} GB of GPU memory; {spec.memory_gb:g} GB per GPU kept")
        pricings = [(Pricing.ON_DEMAND, price)]
        host = host_of(shape)
        if _get(shape, "allowPreemptible", where) is True:
            pricings.append((Pricing.SPOT, price * PREEMPTIBLE_FACTOR))
        elif _value(shape, "shapeType", where) == "bm":
            notes.append("no preemptible price: Oracle's preemptible capacity does not support bare metal shapes")
        else:
            notes.append("no preemptible price: the estimator marks this shape allowPreemptible false")
        quotes = []
        for region in self.settings.regions_for(self.name, [GLOBAL_REGION]):
            for pricing, amount in pricings:
                text = "; ".join(notes)
                if pricing is Pricing.SPOT:
                    text = f"preemptible price = 50% of on-demand, as Oracle publishes; {text}"
                quotes.append(self._quote(name, region, pricing, amount, gpus, raw, text, host))
        return quotes

    def _quote(
        self,
        name: str,
        region: str,
        pricing: Pricing,
        price: float,
        gpus: int,
        raw: RawResponse,
        notes: str,
        host: Mapping[str, Any],
    ) -> Quote:
        try:
            return Quote(
                provider=self.name,
                region=region,
                sku=name,
                **identify(name).quote_fields(),
                gpu_count=gpus,
                pricing=pricing,
                price=round(price, 9),
                currency=CURRENCY,
                unit=Unit.HOUR,
                billing_increment_s=self.billing_increment_s,
                billing_minimum_s=self.billing_minimum_s,
                source_url=raw.url,
                observed_at=raw.fetched_at,
                tax_included=False,
                notes=notes,
                **host,
            )
        except ValidationError as exc:
            raise ParseError(f"{name} {region} {pricing.value} is not a valid quote: {exc}") from exc
