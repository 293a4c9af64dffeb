"""`AzureCollector`: the Retail Prices API walked once over every region (or once per listed
region), its rows classified (collectors.azure.rows) and kept one per offer: the latest.

Source: https://prices.azure.com/api/retail/prices with an N-series `$filter` (collectors.azure.query;
the package docstring has the details); the GPUs of each size from collectors.azure.sizes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from collectors.azure.query import PRICES_URL, first_page_url, odata_filter, walk
from collectors.azure.rows import (
    SKIP_FIVE_YEAR,
    SKIP_UNKNOWN_SKU,
    classify,
    items_of,
    num,
    parse_when,
    region_of,
    sku_of,
)
from collectors.azure.sizes import SIZES
from collectors.base import Collector, Fetched, RawResponse, Scope, unknown_gpus
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.models import Pricing, Quote, Unit
from pricedb.redact import get_logger

log = get_logger("gpuprice.collectors.azure")


@dataclass
class _Row:
    item: Mapping[str, Any]
    raw: RawResponse
    start: datetime


@dataclass
class _Read:
    chosen: dict[tuple[str, str, Pricing], list[_Row]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)  # row-level reasons (SKIP_*)
    not_stored: Counter[str] = field(default_factory=Counter)  # "size: why" for sizes of unknown GPUs
    five_year: dict[tuple[str, str], float] = field(default_factory=dict)

    def skip(self, verdict: str, item: Mapping[str, Any]) -> None:
        self.skipped[verdict] += 1
        sku = sku_of(item)
        if verdict == SKIP_FIVE_YEAR:
            self.five_year[(sku, region_of(item))] = float(item["retailPrice"])
        elif verdict == SKIP_UNKNOWN_SKU:
            self.not_stored[f"{sku}: {SKIP_UNKNOWN_SKU}"] += 1


class AzureCollector(Collector):
    name = "azure"
    title = "Microsoft Azure"
    source_urls = (PRICES_URL,)
    pricings = frozenset({Pricing.ON_DEMAND, Pricing.SPOT, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
    scopes = (Scope("all", pricings, 24 * 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0
    deadline_s: ClassVar[float] = 600.0  # every region's N-series meters, page by page

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        regions = self.settings.regions_for(self.name, [])  # none: one walk over every region
        walks = [(region, odata_filter(region)) for region in regions] or [("all-regions", odata_filter())]
        responses: list[RawResponse] = []
        notes: list[str] = []
        for label, odata in walks:
            responses.extend(await walk(http, first_page_url(odata), label, notes))
        return Fetched(responses, notes=notes)

    def parse(self, fetched: Fetched) -> list[Quote]:
        return self.parse_report(fetched)[0]

    def parse_report(self, fetched: Fetched) -> tuple[list[Quote], list[dict[str, str]]]:
        """The quotes, and each N-series size whose GPUs are unknown with its row count (run notes)."""
        read = self.read_rows(fetched)
        quotes = [
            self._quote(sku, region, pricing, rows, read.five_year.get((sku, region)))
            for (sku, region, pricing), rows in sorted(read.chosen.items())
        ]
        return quotes, unknown_gpus(read.not_stored)

    def read_rows(self, fetched: Fetched) -> _Read:
        """Every row classified: the rows of each offer, the reasons others were left out, and the
        sizes whose GPUs are unknown with their row counts."""
        pages = [(raw, items_of(raw)) for raw in fetched.responses]
        total = sum(len(items) for _, items in pages)
        if total == 0:
            raise ParseError(f"no price rows on any of the {len(pages)} page(s) read: the filter matched nothing")
        read = _Read()
        for raw, items in pages:
            for number, item in enumerate(items, 1):
                where = f"{raw.url} item {number}"
                verdict = classify(item, raw.fetched_at, where)
                if not isinstance(verdict, Pricing):  # Pricing is a StrEnum: test for it, not for str
                    read.skip(verdict, item)
                    continue
                start = parse_when(item["effectiveStartDate"], "effectiveStartDate", where)
                read.chosen.setdefault((sku_of(item), region_of(item), verdict), []).append(_Row(item, raw, start))
        if not read.chosen:
            reasons = "; ".join(f"{count} × {reason}" for reason, count in sorted(read.skipped.items()))
            raise ParseError(f"{total} rows read but none is a Linux GPU offer ({reasons})")
        log.debug("azure: %d rows, %d offers, skipped %s", total, len(read.chosen), dict(read.skipped))
        return read

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
        size = SIZES[sku]
        return self.quote(
            kept.raw,
            f"{sku} {region} {pricing.value}",
            region=region,
            sku=sku,
            **size.spec.quote_fields(),
            gpu_count=size.gpus,
            vcpus=size.vcpus,
            memory_gib=size.memory_gib,
            pricing=pricing,
            price=float(item["retailPrice"]),
            currency=str(item["currencyCode"]),
            unit=unit,
            term_hours=term_hours,
            tax_included=False,
            notes="; ".join(notes) or None,
        )
