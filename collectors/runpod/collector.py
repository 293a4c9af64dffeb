"""`RunpodCollector`: the GPU type list, then one price query per GPU type the card table knows
(collectors.runpod.graphql), each answer read into quotes (collectors.runpod.offers).

Source: https://api.runpod.io/graphql (the package docstring has the details)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from collectors.runpod.graphql import (
    GRAPHQL_URL,
    LIST_QUERY,
    gpu_types_of,
    max_counts,
    prices_query,
    request_body,
)
from collectors.runpod.offers import PROVIDER, card_of, not_offered, quotes_of
from collectors.skipped import UNKNOWN_GPU, counted_notes
from pricedb.card_names import UnknownGpu
from pricedb.models import Pricing, Quote


class RunpodCollector(Collector):
    name: ClassVar[str] = PROVIDER
    title: ClassVar[str] = "RunPod"
    source_urls: ClassVar[tuple[str, ...]] = (GRAPHQL_URL,)
    pricings: ClassVar[frozenset[Pricing]] = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 60),)  # stock moves by the hour
    billing_increment_s: ClassVar[int] = 1  # docs.runpod.io, "Billing overview": compute is billed per second
    billing_minimum_s: ClassVar[int] = 0

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = self.settings.runpod_api_key
        if key is not None and key.get_secret_value().strip() and not self.settings.offline:
            headers["Authorization"] = f"Bearer {key.get_secret_value().strip()}"
        return headers

    async def _post(self, http: Http, query: str, label: str) -> RawResponse:
        return await fetch_explained(
            http,
            "POST",
            GRAPHQL_URL,
            source="RunPod GraphQL API",
            auth_hint="check GPUPRICE_RUNPOD_API_KEY / RUNPOD_API_KEY (the price queries also work with no key)",
            keys=("message",),
            label=label,
            content=request_body(query),
            headers=self.headers(),
        )

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        listing = await self._post(http, LIST_QUERY, "GPU type list")
        types = gpu_types_of(listing)
        known, skipped = known_types(types)
        if not known:
            ids = ", ".join(sorted(str(gpu.get("id")) for gpu in types))
            raise ParseError(f"{GRAPHQL_URL}: none of the {len(types)} GPU types is a card the table knows ({ids})")
        fetched = Fetched([], notes=counted_notes(skipped))
        for gpu in known:
            counts, notes = max_counts(gpu)
            fetched.notes.extend(notes)
            if not any(counts.values()):
                continue
            raw = await self._post(http, prices_query(str(gpu["id"]), counts), f"prices of {gpu['id']}")
            fetched.responses.append(raw)
            fetched.notes.extend(not_offered(raw))  # also raises on a GraphQL error answer
        if not fetched.responses:
            raise ParseError(f"{GRAPHQL_URL}: no GPU type is offered in either cloud ({'; '.join(fetched.notes)})")
        return fetched

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        for raw in fetched.responses:
            quotes.extend(quotes_of(raw, self.quote))
        return quotes


def known_types(types: list[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], Counter[str]]:
    """The GPU types whose card the table knows, and the others counted by id (never guessed)."""
    known: list[Mapping[str, Any]] = []
    skipped: Counter[str] = Counter()
    for gpu in types:
        try:
            card_of(gpu)
        except UnknownGpu:
            skipped[f"{UNKNOWN_GPU}: {gpu.get('id')} ({gpu.get('memoryInGb')} GB)"] += 1
            continue
        known.append(gpu)
    return known, skipped
