"""Microsoft Azure: A100 virtual machines from the Azure Retail Prices API.

Source: `GET https://prices.azure.com/api/retail/prices` (public, no key), default API version,
with one OData `$filter`:

    serviceName eq 'Virtual Machines' and (armSkuName eq 'Standard_NC24ads_A100_v4' or
      armSkuName eq 'Standard_NC48ads_A100_v4' or armSkuName eq 'Standard_NC96ads_A100_v4' or
      armSkuName eq 'Standard_ND96asr_v4' or armSkuName eq 'Standard_ND96amsr_A100_v4')

The exact SKU names are listed because no substring catches them all (`Standard_ND96asr_v4` has no
"A100" in it). The service rejects `armSkuName in (...)` and filters of more than about 20
comparisons with HTTP 400 "Invalid OData parameters supplied", so this is a chain of `eq`/`or`
with six comparisons (seven with a region). Values are written in their exact case: the default
version compares them case-insensitively, `2023-01-01-preview` and later case-sensitively.

**One walk over all regions**, not one per region: the SKU filter already narrows the catalogue to
roughly a thousand rows (about ten pages of 100), and every region that sells these SKUs is in the
answer, including regions added later. `$skip` paging is only consistent while the data does not
change mid-walk (which is why gpuhunt walks per region); a walk this short takes seconds, and the
duplicates such a shift could cause are resolved like any other duplicate (below). With
`GPUPRICE_AZURE_REGIONS` set, the collector walks each listed region on its own instead (the same
filter plus `armRegionName eq '<region>'`).

Paging: each page's `NextPageLink` (absolute, `https://prices.azure.com:443/...&$skip=100`) is
followed through `Http.get`, so `GPUPRICE_AZURE_BASE_URL` applies to it as to the first URL. A link
already read, or more than `query.MAX_PAGES` pages, is a pagination loop: `FetchError`. A full last page
without a link (the API has dropped `NextPageLink` before, 2023-03) is noted as a possibly
truncated walk. An error body (`{"Error": {"Code": "BadRequest", "Message": ...}}`, HTTP 400 for a
bad filter) becomes a `FetchError` carrying the API's message.

What is taken, per row (`armRegionName` is the region, `currencyCode` the currency, USD):
- `type` Consumption → `on_demand`, or `spot` when `skuName`/`meterName` ends in " Spot";
- `type` Reservation → `reserved_1y` / `reserved_3y` by `reservationTerm`.

Quirks:
- **Reservation prices are for the whole term** although `unitOfMeasure` says "1 Hour": stored as
  published with `unit=term` and `term_hours` 8760 or 26280. "5 Years" reservations are skipped
  (the contract has no `reserved_5y`) and mentioned in the 3-year quote's notes.
- Windows and Linux rows share `armSkuName`; only `productName` tells them apart ("... Windows"):
  Windows rows (licence included) are dropped, as are "Cloud Services" products.
- "Low Priority" meters (Batch, being retired) and `DevTestConsumption` rows (Dev/Test
  subscriptions only; they carry the Linux price on the Windows product) are dropped.
- Zero prices occur and are dropped; so are rows whose `effectiveEndDate` has passed.
- The same offer can appear twice (several meters, legacy and current product names): the row
  with the latest `effectiveStartDate` is kept and the quote notes the others.
- The API does not say how many GPUs a VM has: `rows.GPU_COUNT` is the one table of the SKUs taken
  (memory, form factor and interconnect come from `pricedb.card_names.identify`); any other SKU is dropped.
- NC A100 v4 rows use new-style names (`skuName` "Standard_NC24ads_A100_v4", `meterName`
  "NC24ads_A100_v4", product "NCads A100 v4 Series Linux"); the others use the classic style
  ("ND96amsr A100 v4 Spot"). Nothing here depends on either.
- Billing is per second (Linux VMs); list prices exclude tax.

Scope: one, `all` (on_demand, spot, reserved_1y, reserved_3y), daily. Spot has no scope of its own:
the Retail Prices API publishes spot as list prices that Azure revises from time to time (recorded
spot meters carry `effectiveStartDate`s on the first of a month), not a live market, so reading them
every few hours would mostly re-read the same numbers. `GPUPRICE_AZURE_INTERVAL_MINUTES` changes
the cadence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from pydantic import ValidationError

from collectors.azure.query import PRICES_URL, first_page_url, odata_filter, walk
from collectors.azure.rows import GPU_COUNT, SKIP_FIVE_YEAR, classify, items_of, num, parse_when, region_of, sku_of
from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.card_names import identify
from pricedb.models import Pricing, Quote, Unit
from pricedb.redact import get_logger

__all__ = ["AzureCollector"]

log = get_logger("gpuprice.collectors.azure")


@dataclass
class _Row:
    item: Mapping[str, Any]
    raw: RawResponse
    start: datetime


class AzureCollector(Collector):
    name = "azure"
    title = "Microsoft Azure"
    source_urls = (PRICES_URL,)
    pricings = frozenset({Pricing.ON_DEMAND, Pricing.SPOT, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
    scopes = (Scope("all", pricings, 24 * 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0
    deadline_s: ClassVar[float] = 600.0  # every region's A100 meters, page by page

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        regions = self.settings.regions_for(self.name, [])  # none: one walk over every region
        walks = [(region, odata_filter(region)) for region in regions] or [("all-regions", odata_filter())]
        responses: list[RawResponse] = []
        notes: list[str] = []
        for label, odata in walks:
            responses.extend(await walk(http, first_page_url(odata), label, notes))
        return Fetched(responses, notes=notes)

    def parse(self, fetched: Fetched) -> list[Quote]:
        pages = [(raw, items_of(raw)) for raw in fetched.responses]
        total = sum(len(items) for _, items in pages)
        if total == 0:
            raise ParseError(f"no price rows on any of the {len(pages)} page(s) read: the filter matched nothing")
        chosen: dict[tuple[str, str, Pricing], list[_Row]] = {}
        skipped: dict[str, int] = {}
        five_year: dict[tuple[str, str], float] = {}
        for raw, items in pages:
            for number, item in enumerate(items, 1):
                where = f"{raw.url} item {number}"
                verdict = classify(item, raw.fetched_at, where)
                if not isinstance(verdict, Pricing):  # Pricing is a StrEnum: test for it, not for str
                    skipped[verdict] = skipped.get(verdict, 0) + 1
                    if verdict == SKIP_FIVE_YEAR:
                        five_year[(sku_of(item), region_of(item))] = float(item["retailPrice"])
                    continue
                start = parse_when(item["effectiveStartDate"], "effectiveStartDate", where)
                chosen.setdefault((sku_of(item), region_of(item), verdict), []).append(_Row(item, raw, start))
        if not chosen:
            reasons = "; ".join(f"{count} × {reason}" for reason, count in sorted(skipped.items()))
            raise ParseError(f"{total} rows read but none is a Linux A100 offer ({reasons})")
        log.debug("azure: %d rows, %d offers, skipped %s", total, len(chosen), skipped)
        quotes = [
            self._quote(sku, region, pricing, rows, five_year.get((sku, region)))
            for (sku, region, pricing), rows in sorted(chosen.items())
        ]
        return quotes

    def _quote(self, sku: str, region: str, pricing: Pricing, rows: list[_Row], five_year: float | None) -> Quote:
        rows = sorted(rows, key=lambda r: r.start, reverse=True)
        kept, item = rows[0], rows[0].item
        notes: list[str] = []
        if len(rows) > 1:
            others = ", ".join(
                f"{num(r.item['retailPrice'])} from {r.start.date().isoformat()} (meter {r.item.get('meterId', '?')})"
                for r in rows[1:]
            )
            tie = " (same start date: the first read was kept)" if rows[1].start == kept.start else ""
            notes.append(
                f"{len(rows)} rows for this offer; kept the latest, from {kept.start.date()}{tie}; ignored {others}"
            )
        unit, term_hours = Unit.HOUR, None
        if pricing.is_reserved:
            years = 1 if pricing is Pricing.RESERVED_1Y else 3
            unit, term_hours = Unit.TERM, years * self.settings.hours_per_year
            notes.append(f"price for the whole {years}-year term (the API labels it '1 Hour')")
            if pricing is Pricing.RESERVED_3Y and five_year is not None:
                notes.append(f"a 5-year reservation is also published ({num(five_year)} per term), not collected")
        spec = identify(sku)
        try:
            return Quote(
                provider=self.name,
                region=region,
                sku=sku,
                **spec.quote_fields(),
                gpu_count=GPU_COUNT[sku],
                pricing=pricing,
                price=float(item["retailPrice"]),
                currency=str(item["currencyCode"]),
                unit=unit,
                term_hours=term_hours,
                billing_increment_s=self.billing_increment_s,
                billing_minimum_s=self.billing_minimum_s,
                source_url=kept.raw.url,
                observed_at=kept.raw.fetched_at,
                tax_included=False,
                notes="; ".join(notes) or None,
            )
        except ValidationError as exc:
            raise ParseError(f"{kept.raw.url}: {sku} {region} {pricing.value} is not a valid quote: {exc}") from exc
