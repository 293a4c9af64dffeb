"""`LambdaCollector`: one instance-types call, its GPU types (collectors.lambda_.instance_types)
reported in every watched region, available where Lambda lists capacity now.

Source: https://cloud.lambda.ai/api/v1/instance-types (an API key; the package docstring has the
details)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import MissingCredentials, ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from collectors.lambda_.instance_types import capacity_regions, gpu_count_of, gpu_types, host_shape, instance_types
from collectors.skipped import counted_notes
from pricedb.card_names import GpuSpec
from pricedb.models import Availability, Pricing, Quote, Unit

INSTANCE_TYPES_URL = "https://cloud.lambda.ai/api/v1/instance-types"
API_KEYS_PAGE = "https://cloud.lambda.ai/api-keys"
OFFLINE_API_KEY = "offline-replay-placeholder-key"  # offline replay answers without checking keys


class LambdaCollector(Collector):
    name: ClassVar[str] = "lambda"
    title: ClassVar[str] = "Lambda"
    source_urls: ClassVar[tuple[str, ...]] = (INSTANCE_TYPES_URL,)
    pricings: ClassVar[frozenset[Pricing]] = frozenset({Pricing.ON_DEMAND})
    # Capacity moves within the hour; prices rarely do. One request per run.
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 60),)
    billing_increment_s: ClassVar[int] = 60
    billing_minimum_s: ClassVar[int] = 0

    def api_key(self) -> str:
        if self.settings.offline:
            return OFFLINE_API_KEY
        key = self.settings.lambda_api_key
        if key is None or not key.get_secret_value().strip():
            raise MissingCredentials(
                "Lambda's instance-types API needs an API key: set GPUPRICE_LAMBDA_API_KEY "
                f"(create one at {API_KEYS_PAGE})"
            )
        return key.get_secret_value().strip()

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        raw = await fetch_explained(
            http,
            "GET",
            INSTANCE_TYPES_URL,
            source="Lambda Cloud API",
            auth_hint=f"check GPUPRICE_LAMBDA_API_KEY ({API_KEYS_PAGE})",
            keys=("code", "message", "suggestion"),
            label="instance-types",
            headers={"Authorization": f"Bearer {self.api_key()}"},
        )
        notes: list[str] = []
        with contextlib.suppress(ParseError):  # parse() reports it
            notes = counted_notes(gpu_types(raw, instance_types(raw))[1])
        return Fetched([raw], notes=notes)

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        for raw in fetched.responses:
            quotes.extend(self._parse_answer(raw))
        return quotes

    def _parse_answer(self, raw: RawResponse) -> list[Quote]:
        types = instance_types(raw)
        capacity = {name: capacity_regions(raw, name, item) for name, item in types.items()}
        configured = self.settings.regions_for(self.name, [])
        watched = set(configured) or set().union(*capacity.values())
        cards, _ = gpu_types(raw, types)  # what is left out is in the run's notes (fetch)
        if not cards:
            raise ParseError(
                f"{raw.url}: none of the {len(types)} instance types holds a priced GPU the card table knows "
                f"({', '.join(sorted(types))})"
            )
        if not watched:
            raise ParseError(
                f"{raw.url}: Lambda lists no region with capacity for any instance type, so there is no region to "
                "report the GPU types in; set GPUPRICE_LAMBDA_REGIONS to record them as sold out there"
            )
        quotes = []
        for name, item, spec in cards:
            for region in sorted(watched):
                quotes.append(self._quote(raw, name, item, spec, region, region in capacity[name]))
        return quotes

    def _quote(
        self, raw: RawResponse, name: str, item: Mapping[str, Any], spec: GpuSpec, region: str, has_capacity: bool
    ) -> Quote:
        instance = item["instance_type"]
        cents = instance["price_cents_per_hour"]
        gpus = gpu_count_of(raw, name, instance)
        notes = [f"price_cents_per_hour {cents} = {cents / 100:.2f} USD per instance-hour"]
        if has_capacity:
            notes.append("Lambda lists capacity in this region now")
        else:
            notes.append(
                "no capacity listed in this region now (the API names only regions with capacity; it cannot "
                "tell 'sold out' from 'not offered here')"
            )
        return self.quote(
            raw,
            f"{name} in {region}",
            region=region,
            sku=name,
            **spec.quote_fields(),
            gpu_count=gpus,
            pricing=Pricing.ON_DEMAND,
            price=cents / 100,
            currency="USD",
            unit=Unit.HOUR,
            availability=Availability.AVAILABLE if has_capacity else Availability.SOLD_OUT,
            tax_included=False,
            notes="; ".join(notes),
            **host_shape(instance),
        )
