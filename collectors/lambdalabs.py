"""Lambda (Lambda Labs, lambda.ai): A100 instance types from the Lambda Cloud API.

Source: `GET https://cloud.lambda.ai/api/v1/instance-types` with `Authorization: Bearer <key>`
(`GPUPRICE_LAMBDA_API_KEY`; without it the run is skipped). Lambda's OpenAPI document lists
`https://cloud.lambda.ai/` as the production server and `https://cloud.lambdalabs.com/` as a
deprecated secondary one, so the current host is used; `GPUPRICE_LAMBDA_BASE_URL` replaces it.
One answer, no paging: `{"data": {"<name>": {"instance_type": {...}, "regions_with_capacity_available":
[{"name", "description"}]}}}`. Errors come as `{"error": {"code", "message", "suggestion"}}` (401
`global/invalid-api-key`, 403 `global/account-inactive`) and end the run with Lambda's own words.

What is taken, per instance type whose `gpu_description` names an A100 ("A100 (40 GB SXM4)",
"A100 (80 GB SXM4)", "A100 (40 GB PCIe)"): `price_cents_per_hour` (US cents per instance-hour,
stored as USD: 1592 → 15.92), the GPU count from `specs.gpus` (checked against the "8x" of
`description`), memory and form factor from `gpu_description`, the host shape from `specs.vcpus`
and `specs.memory_gib`. On-demand only: reserved capacity
and 1-Click Clusters are sold outside this API.

Regions and availability. The price is the same in every region, and the API names only the
regions that have capacity *now*; a region without capacity is simply absent. Each A100 type is
therefore reported in the regions watched: `GPUPRICE_LAMBDA_REGIONS` when set (and only those),
else every region the answer lists for *any* instance type (the regions Lambda is serving at this
moment). A watched region listed for the type is `available`; the others are `sold_out`, with a
note that the API cannot tell "no capacity now" from "never offered here". Keeping the sold-out
offers (rather than dropping them) keeps an offer's history when capacity comes and goes, and
`/cheapest` leaves sold-out offers out unless asked.

Billing (docs.lambda.ai, "Billing"): on-demand instances are billed in one-minute increments;
prices exclude sales tax, which is added by billing address.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import ValidationError

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import MissingCredentials, ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.models import Availability, Pricing, Quote, Unit
from pricedb.shapes import host_fields

INSTANCE_TYPES_URL = "https://cloud.lambda.ai/api/v1/instance-types"
API_KEYS_PAGE = "https://cloud.lambda.ai/api-keys"
OFFLINE_API_KEY = "offline-replay-placeholder-key"  # offline replay answers without checking keys
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x\s", re.IGNORECASE)


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
        return Fetched([raw])

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        for raw in fetched.responses:
            quotes.extend(self._parse_answer(raw))
        return quotes

    def _parse_answer(self, raw: RawResponse) -> list[Quote]:
        types = _instance_types(raw)
        capacity = {name: _capacity_regions(raw, name, item) for name, item in types.items()}
        configured = self.settings.regions_for(self.name, [])
        watched = set(configured) or set().union(*capacity.values())
        a100: list[tuple[str, Mapping[str, Any], GpuSpec]] = []
        for name, item in types.items():
            spec = _a100_spec(raw, name, item)
            if spec is not None:
                a100.append((name, item, spec))
        if not a100:
            raise ParseError(
                f"{raw.url}: none of the {len(types)} instance types is an A100 ({', '.join(sorted(types))})"
            )
        if not watched:
            raise ParseError(
                f"{raw.url}: Lambda lists no region with capacity for any instance type, so there is no region to "
                "report the A100 types in; set GPUPRICE_LAMBDA_REGIONS to record them as sold out there"
            )
        quotes = []
        for name, item, spec in sorted(a100, key=lambda entry: entry[0]):
            for region in sorted(watched):
                quotes.append(self._quote(raw, name, item, spec, region, region in capacity[name]))
        return quotes

    def _quote(
        self, raw: RawResponse, name: str, item: Mapping[str, Any], spec: GpuSpec, region: str, has_capacity: bool
    ) -> Quote:
        instance = item["instance_type"]
        cents = instance["price_cents_per_hour"]
        gpus = _gpu_count(raw, name, instance)
        notes = [f"price_cents_per_hour {cents} = {cents / 100:.2f} USD per instance-hour"]
        if has_capacity:
            notes.append("Lambda lists capacity in this region now")
        else:
            notes.append(
                "no capacity listed in this region now (the API names only regions with capacity; it cannot "
                "tell 'sold out' from 'not offered here')"
            )
        try:
            return Quote(
                provider=self.name,
                region=region,
                sku=name,
                **spec.quote_fields(),
                gpu_count=gpus,
                pricing=Pricing.ON_DEMAND,
                price=cents / 100,
                currency="USD",
                unit=Unit.HOUR,
                billing_increment_s=self.billing_increment_s,
                billing_minimum_s=self.billing_minimum_s,
                availability=Availability.AVAILABLE if has_capacity else Availability.SOLD_OUT,
                source_url=raw.url,
                observed_at=raw.fetched_at,
                tax_included=False,
                notes="; ".join(notes),
                **_host(instance),
            )
        except ValidationError as exc:
            raise ParseError(f"{raw.url}: {name} in {region} is not a valid quote: {exc}") from exc


def _instance_types(raw: RawResponse) -> dict[str, Mapping[str, Any]]:
    body = raw.json()
    if not isinstance(body, Mapping) or not isinstance(body.get("data"), Mapping):
        found = ", ".join(map(str, body)) if isinstance(body, Mapping) else type(body).__name__
        raise ParseError(f"{raw.url}: no 'data' object of instance types in the answer (found: {found})")
    types = dict(body["data"])
    if not types:
        raise ParseError(f"{raw.url}: 'data' lists no instance types")
    for name, item in types.items():
        if not isinstance(item, Mapping) or not isinstance(item.get("instance_type"), Mapping):
            raise ParseError(f"{raw.url}: {name} has no 'instance_type' object (has the API changed?)")
    return types


def _a100_spec(raw: RawResponse, name: str, item: Mapping[str, Any]) -> GpuSpec | None:
    instance = item["instance_type"]
    for field in ("gpu_description", "price_cents_per_hour", "specs"):
        if field not in instance:
            raise ParseError(f"{raw.url}: {name} has no '{field}' (has the API changed?)")
    try:
        spec = identify(str(instance["gpu_description"]))
    except UnknownGpu:
        return None
    cents = instance["price_cents_per_hour"]
    if isinstance(cents, bool) or not isinstance(cents, int | float):
        raise ParseError(f"{raw.url}: {name} price_cents_per_hour {cents!r} is not a number")
    return spec


def _gpu_count(raw: RawResponse, name: str, instance: Mapping[str, Any]) -> int:
    specs = instance["specs"]
    gpus = specs.get("gpus") if isinstance(specs, Mapping) else None
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ParseError(f"{raw.url}: {name} specs.gpus is {gpus!r}, not a GPU count")
    prefix = _COUNT_PREFIX.match(str(instance.get("description", "")))
    if prefix and int(prefix.group(1)) != gpus:
        raise ParseError(
            f"{raw.url}: {name} says {instance.get('description')!r} but specs.gpus is {gpus}; "
            "cannot tell which is right"
        )
    return gpus


def _host(instance: Mapping[str, Any]) -> dict[str, Any]:
    specs = instance.get("specs")
    return host_fields(specs.get("vcpus"), specs.get("memory_gib")) if isinstance(specs, Mapping) else {}


def _capacity_regions(raw: RawResponse, name: str, item: Mapping[str, Any]) -> set[str]:
    listed = item.get("regions_with_capacity_available")
    if not isinstance(listed, list):
        raise ParseError(f"{raw.url}: {name} has no 'regions_with_capacity_available' list")
    regions = set()
    for region in listed:
        if not isinstance(region, Mapping) or not str(region.get("name", "")).strip():
            raise ParseError(f"{raw.url}: {name} lists a region without a name: {region!r}")
        regions.add(str(region["name"]).strip())
    return regions
