"""`OciCollector`: the shapes and products files, each active A100 shape priced from its billed parts
(collectors.oci.estimator_data), on-demand and, where Oracle allows it, preemptible.

Source: Oracle's Cost Estimator data, https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json
and .../products.json (the package docstring has the details)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from collectors.oci.estimator_data import (
    CURRENCY,
    ShapeError,
    field_of,
    host_of,
    positive_number,
    shape_price,
    value_of,
)
from pricedb.card_names import UnknownGpu, identify
from pricedb.cards import nearest_known_size
from pricedb.models import Pricing, Quote, Unit

DATA_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
SHAPES_URL = f"{DATA_URL}/shapes.json"
PRODUCTS_URL = f"{DATA_URL}/products.json"
PREEMPTIBLE_FACTOR = 0.5  # "Preemptible instances are priced at 50% of the price of regular instances"
GLOBAL_REGION = "global"
PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})


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
            name = re.sub(r"\s*\([^)]*\)\s*$", "", str(field_of(shape, "name", where)))
            if value_of(shape, "subType", where) != "gpu":
                continue
            try:
                spec = identify(name)
            except UnknownGpu:
                continue
            if spec.model != "A100":
                continue
            if field_of(shape, "hidden", where) or field_of(shape, "status", where) != "ACTIVE":
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
        gpus = int(positive_number(field_of(shape, "gpuQty", where), "gpuQty"))
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
        if field_of(shape, "allowPreemptible", where) is True:
            pricings.append((Pricing.SPOT, price * PREEMPTIBLE_FACTOR))
        elif value_of(shape, "shapeType", where) == "bm":
            notes.append("no preemptible price: Oracle's preemptible capacity does not support bare metal shapes")
        else:
            notes.append("no preemptible price: the estimator marks this shape allowPreemptible false")
        quotes = []
        for region in self.settings.regions_for(self.name, [GLOBAL_REGION]):
            for pricing, amount in pricings:
                text = "; ".join(notes)
                if pricing is Pricing.SPOT:
                    text = f"preemptible price = 50% of on-demand, as Oracle publishes; {text}"
                quotes.append(
                    self.quote(
                        raw,
                        f"{name} {region} {pricing.value}",
                        region=region,
                        sku=name,
                        **spec.quote_fields(),
                        gpu_count=gpus,
                        pricing=pricing,
                        price=round(amount, 9),
                        currency=CURRENCY,
                        unit=Unit.HOUR,
                        tax_included=False,
                        notes=text,
                        **host,
                    )
                )
        return quotes
