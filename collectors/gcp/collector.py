"""`GcpCollector`: the Cloud Billing Catalog walk (collectors.gcp.catalog), the A2 parts it prices
(collectors.gcp.skus) and the machine types composed from them (collectors.gcp.machines) as quotes.

Source: https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus (an API key; the package
docstring has the details)."""

from __future__ import annotations

from typing import ClassVar

from collectors.base import Collector, Fetched, Scope
from collectors.errors import MissingCredentials, ParseError
from collectors.gcp.catalog import KEY_SETTING, SKUS_URL, walk
from collectors.gcp.machines import MACHINE_TYPES, Composition, build_table, compose
from collectors.gcp.skus import Component, Part, classify, fetched_at, skus_of
from collectors.http import Http
from pricedb.card_names import identify
from pricedb.models import Pricing, Quote, Unit
from pricedb.redact import get_logger

log = get_logger("gpuprice.collectors.gcp")

PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.SPOT, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
TERM_YEARS = {Pricing.RESERVED_1Y: 1, Pricing.RESERVED_3Y: 3}


class GcpCollector(Collector):
    name = "gcp"
    title = "Google Cloud (Compute Engine)"
    source_urls = (SKUS_URL,)
    pricings = PRICINGS
    scopes = (Scope("all", PRICINGS, 24 * 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 60
    deadline_s: ClassVar[float] = 600.0  # about ten pages of 5000 SKUs

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        key = self.settings.gcp_api_key
        if self.settings.offline:
            key = None  # recorded answers need no key, and none is sent to them
        elif key is None or not key.get_secret_value():
            raise MissingCredentials(
                f"the Cloud Billing Catalog API needs an API key: set {KEY_SETTING} to a key of a Google Cloud "
                "project with the Cloud Billing API enabled"
            )
        return Fetched(await walk(http, key))

    def parse(self, fetched: Fetched) -> list[Quote]:
        components: list[Component] = []
        skipped: dict[str, int] = {}
        total = 0
        for raw in fetched.responses:
            for sku in skus_of(raw):
                total += 1
                verdict = classify(sku, raw)
                if isinstance(verdict, Component):
                    components.append(verdict)
                else:
                    skipped[verdict] = skipped.get(verdict, 0) + 1
        if not any(c.part in (Part.GPU40, Part.GPU80) for c in components):
            reasons = "; ".join(f"{n} × {why}" for why, n in sorted(skipped.items()))
            raise ParseError(f"no A100 GPU SKU among the {total} SKUs read ({reasons or 'no SKUs at all'})")
        wanted = set(self.settings.regions_for(self.name, [])) or None
        table, conflicts = build_table(components, wanted)
        if conflicts:
            log.info("gcp: more specific SKUs chosen: %s", "; ".join(conflicts))
        regions = sorted({region for region, _, _ in table})
        quotes: list[Quote] = []
        missing: dict[str, int] = {}
        for machine in MACHINE_TYPES:
            for region in regions:
                for pricing in sorted(PRICINGS):
                    result = compose(machine, region, pricing, table, self.settings.hours_per_month)
                    if isinstance(result, Composition):
                        quotes.append(self._quote(result))
                    else:
                        label = f"{pricing.value} {', '.join(map(str, result)) or 'currency mismatch'}"
                        missing[label] = missing.get(label, 0) + 1
        if not quotes:
            gaps = "; ".join(f"{why} ({n}×)" for why, n in sorted(missing.items()))
            raise ParseError(f"A100 SKUs found, but no A2 machine type has all its parts priced anywhere: {gaps}")
        log.debug("gcp: %d SKUs, %d components, %d offers; skipped %s", total, len(components), len(quotes), skipped)
        return quotes

    def _quote(self, c: Composition) -> Quote:
        gpu = next(component for component, _ in c.components if component.part in (Part.GPU40, Part.GPU80))
        years = TERM_YEARS.get(c.pricing)
        return self.quote(
            gpu.raw,
            f"{c.machine.name} {c.region} {c.pricing.value}",
            region=c.region,
            sku=c.machine.name,
            **identify(c.machine.name).quote_fields(),
            gpu_count=c.machine.gpus,
            pricing=c.pricing,
            price=round(c.price, 9),
            currency=c.currency,
            unit=Unit.HOUR,
            term_hours=years * self.settings.hours_per_year if years else None,
            observed_at=fetched_at([component for component, _ in c.components]),
            tax_included=False,
            notes=c.notes,
        )
