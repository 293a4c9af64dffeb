"""Google Cloud: A100 machine types (A2) priced from the Cloud Billing Catalog API.

Source: `GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus` (Compute Engine),
with the API key from `GPUPRICE_GCP_API_KEY` as the `key` query parameter, `pageSize=5000`, and
`pageToken` from each page's `nextPageToken` until it is empty (collectors.gcp.catalog). Without a
key the run is skipped. The key never appears in a stored `source_url`, a note, a log line or an
error (the recorded URLs leave it out and errors are rewritten).

What is taken: SKUs pricing a part of an A2 machine, each with its usage type, service regions and
the price of the tier that applies from zero usage (`units + nanos / 1e9`, in `usageUnit` h,
GiBy.h or GiBy.mo), collectors.gcp.skus:
- GPUs: "Nvidia Tesla A100 GPU …" (40GB) and "Nvidia Tesla A100 80GB GPU …" (per GPU-hour);
- host: "A2 Instance Core …" (per vCPU-hour) and "A2 Instance Ram …" (per GiB-hour);
- local SSD: "SSD backed Local Storage …" (per GB-month), bundled with a2-ultragpu;
- pricings: usageType OnDemand → on_demand, Preemptible ("Spot Preemptible …", "… attached to Spot
  Preemptible VMs") → spot, Commit1Yr / Commit3Yr ("Commitment v1: …") → reserved_1y /
  reserved_3y, stored at the hourly commitment rate (unit hour, `term_hours` 8760 / 26280: the
  whole term is paid, CONTRACT §3).

A VM's price is composed (collectors.gcp.machines): a2-highgpu-1g/2g/4g/8g and a2-megagpu-16g =
1–16 × A100 40GB, a2-ultragpu-1g/2g/4g/8g = 1–8 × A100 80GB, each with its vCPUs, GiB and local
SSD from Google's machine-type table. Every offer's notes spell the sum out, SKU ids included.

Regions: a SKU lists the regions it prices (`serviceRegions`; "… running in Americas" covers
several). A machine type is offered in a region and pricing only where **every** one of its parts
is priced, in that same pricing; `GPUPRICE_GCP_REGIONS` narrows the regions kept.

Quirks:
- SKUs that look like A2 parts but price something else are dropped by description: DWS
  (flex-start, "attached to DWS Defined Duration VMs"), calendar mode, "Reserved", sole tenancy,
  custom shapes, premium surcharges. The DWS A100 80GB GPU SKU is cheaper than the Spot one:
  taking it for on-demand is how skypilot's catalog got on-demand < spot for A100 80GB.
- Local SSD for Spot VMs is described "attached to Spot Preemptible VMs" but may be filed with
  usageType OnDemand: the description decides.
- A relevant SKU billed in an unexpected unit is a ParseError, never a guess.
- Billing is per second after a one-minute minimum; list prices exclude tax. Sustained-use
  discounts do not apply to A2.

Scope: one, `all` (on_demand, spot, reserved_1y, reserved_3y), daily: Google changes Spot prices at
most once every 30 days and list prices rarely.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError

from collectors.base import Collector, Fetched, Scope
from collectors.errors import MissingCredentials, ParseError
from collectors.gcp.catalog import KEY_SETTING, SKUS_URL, walk
from collectors.gcp.machines import MACHINE_TYPES, Composition, build_table, compose
from collectors.gcp.skus import Component, Part, classify, fetched_at, skus_of
from collectors.http import Http
from pricedb.card_names import identify
from pricedb.models import Pricing, Quote, Unit
from pricedb.redact import get_logger

__all__ = ["GcpCollector"]

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
        try:
            return Quote(
                provider=self.name,
                region=c.region,
                sku=c.machine.name,
                **identify(c.machine.name).quote_fields(),
                gpu_count=c.machine.gpus,
                pricing=c.pricing,
                price=round(c.price, 9),
                currency=c.currency,
                unit=Unit.HOUR,
                term_hours=years * self.settings.hours_per_year if years else None,
                billing_increment_s=self.billing_increment_s,
                billing_minimum_s=self.billing_minimum_s,
                source_url=gpu.raw.url,
                observed_at=fetched_at([component for component, _ in c.components]),
                tax_included=False,
                notes=c.notes,
            )
        except ValidationError as exc:
            raise ParseError(f"{c.machine.name} {c.region} {c.pricing.value} is not a valid quote: {exc}") from exc
