"""`OciCollector`: the shapes and products files, each active GPU shape priced from its billed parts
(collectors.oci.estimator_data), on-demand and, where Oracle allows it, preemptible.

Source: Oracle's Cost Estimator data, https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json
and .../products.json (the package docstring has the details)."""

from __future__ import annotations

import contextlib
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
from collectors.oci.shapes import shape_gpu
from pricedb.card_names import UnknownGpu
from pricedb.models import Pricing, Quote, Unit

DATA_URL = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data"
SHAPES_URL = f"{DATA_URL}/shapes.json"
PRODUCTS_URL = f"{DATA_URL}/products.json"
PREEMPTIBLE_FACTOR = 0.5  # "Preemptible instances are priced at 50% of the price of regular instances"
GLOBAL_REGION = "global"
PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
HIDDEN = "hidden or not ACTIVE"


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
        fetched = Fetched([shapes, products])
        with contextlib.suppress(ParseError):  # parse() reports a broken answer
            fetched.notes.extend(self.left_out(fetched))
        return fetched

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes, unknown, unpriced = self._read(fetched)
        if not quotes:
            why = "; ".join(unpriced + unknown) or "no GPU shape in shapes.json"
            raise ParseError(f"{fetched.responses[0].url}: no GPU shape could be priced ({why})")
        return quotes

    def left_out(self, fetched: Fetched) -> list[str]:
        """What `parse` leaves out and why, for the run's notes: GPU shapes the card table does not
        know (named, never guessed) and listed shapes that cannot be priced."""
        _, unknown, unpriced = self._read(fetched)
        notes = [f"unknown GPU, not collected (the card table lacks it): {u}" for u in unknown]
        return notes + [f"not priced: {u}" for u in unpriced if not u.endswith(HIDDEN)]

    def _read(self, fetched: Fetched) -> tuple[list[Quote], list[str], list[str]]:
        """(quotes, unknown GPU shapes, shapes left unpriced with why) of the active GPU shapes."""
        raws = {raw.label: raw for raw in fetched.responses}
        if set(raws) != {"shapes", "products"}:
            raise ParseError(f"expected the shapes and products answers, got {sorted(raws)}")
        products = {str(p.get("partNumber")): p for p in raws["products"].json_list("items", "Cost Estimator data")}
        quotes: list[Quote] = []
        unknown: list[str] = []
        unpriced: list[str] = []
        for shape in raws["shapes"].json_list("items", "Cost Estimator data"):
            where = f"{raws['shapes'].url} shape {shape.get('name', '?')}"
            name = re.sub(r"\s*\([^)]*\)\s*$", "", str(field_of(shape, "name", where)))
            if value_of(shape, "subType", where) != "gpu":
                continue
            if field_of(shape, "hidden", where) or field_of(shape, "status", where) != "ACTIVE":
                unpriced.append(f"{name}: {HIDDEN}")
                continue
            try:
                quotes.extend(self._quotes(shape, name, products, raws["products"], where))
            except UnknownGpu as exc:
                unknown.append(f"{name} ({exc})" if name not in str(exc) else str(exc))
            except ShapeError as exc:
                unpriced.append(f"{name}: {exc}")
        return quotes, unknown, unpriced

    def _quotes(
        self,
        shape: Mapping[str, Any],
        name: str,
        products: Mapping[str, Mapping[str, Any]],
        raw: RawResponse,
        where: str,
    ) -> list[Quote]:
        gpus = int(positive_number(field_of(shape, "gpuQty", where), "gpuQty"))
        gpu = shape_gpu(name, shape, gpus)
        spec = gpu.spec
        price, sum_words = shape_price(shape, products, gpus)
        notes = [f"{sum_words} = {price:g} USD/h per instance; same list price in every OCI commercial region"]
        notes += gpu.notes
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
