"""`GcpCollector`: the Cloud Billing Catalog walk (collectors.gcp.catalog), the GPU-machine parts it
prices (collectors.gcp.skus, the GPUs of collectors.gcp.gpus) and the machine types composed from
them (collectors.gcp.machines) as quotes.

Source: https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus (an API key; the package
docstring has the details)."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from collectors.base import Collector, Fetched, Scope, unknown_gpus
from collectors.errors import MissingCredentials, ParseError
from collectors.gcp.catalog import KEY_SETTING, SKUS_URL, walk
from collectors.gcp.gpus import BY_ID
from collectors.gcp.machines import MACHINE_TYPES, Composition, build_table, compose
from collectors.gcp.skus import GPU, SKIP_UNKNOWN_GPU, Component, classify, fetched_at, skus_of
from collectors.http import Http
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
        return self.parse_report(fetched)[0]

    def parse_report(self, fetched: Fetched) -> tuple[list[Quote], list[dict[str, str]]]:
        """The quotes, and each GPU SKU naming a card the table does not know, with its count (run notes)."""
        components: list[Component] = []
        skipped: Counter[str] = Counter()
        unknown: Counter[str] = Counter()
        total = 0
        for raw in fetched.responses:
            for sku in skus_of(raw):
                total += 1
                verdict = classify(sku, raw)
                if isinstance(verdict, Component):
                    components.append(verdict)
                    continue
                skipped[verdict] += 1
                if verdict == SKIP_UNKNOWN_GPU:
                    unknown[f"{sku.get('description')}: {SKIP_UNKNOWN_GPU}"] += 1
        if not any(c.part.kind == GPU for c in components):
            reasons = "; ".join(f"{n} × {why}" for why, n in sorted(skipped.items()))
            raise ParseError(f"no GPU SKU of a known accelerator among the {total} SKUs read ({reasons or 'no SKUs'})")
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
            raise ParseError(f"GPU SKUs found, but no machine type has all its parts priced anywhere: {gaps}")
        log.debug("gcp: %d SKUs, %d components, %d offers; skipped %s", total, len(components), len(quotes), skipped)
        return quotes, unknown_gpus(unknown)

    def _quote(self, c: Composition) -> Quote:
        gpu = next(component for component, _ in c.components if component.part.kind == GPU)
        years = TERM_YEARS.get(c.pricing)
        return self.quote(
            gpu.raw,
            f"{c.machine.name} {c.region} {c.pricing.value}",
            region=c.region,
            sku=c.machine.name,
            **BY_ID[c.machine.accelerator].spec.quote_fields(),
            gpu_count=c.machine.gpus,
            vcpus=c.machine.vcpus,
            memory_gib=c.machine.ram_gib,
            pricing=c.pricing,
            price=round(c.price, 9),
            currency=c.currency,
            unit=Unit.HOUR,
            term_hours=years * self.settings.hours_per_year if years else None,
            observed_at=fetched_at([component for component, _ in c.components]),
            tax_included=False,
            notes=c.notes,
        )
