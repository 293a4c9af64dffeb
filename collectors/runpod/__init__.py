"""RunPod: A100 pods from the RunPod GraphQL API.

Source: `POST https://api.runpod.io/graphql` (JSON `{"query": ...}`), two kinds of request:

1. `query GpuTypeList { gpuTypes { id displayName memoryInGb maxGpuCount maxGpuCountSecureCloud
   maxGpuCountCommunityCloud secureCloud communityCloud } }` — which GPU types exist; the A100 ones
   are picked by id with `pricedb.card_names.identify` ("NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB");
2. per A100 type, `gpuTypes(input: {id: "..."})` with its prices (`securePrice`, `communityPrice`,
   `secureSpotPrice`, `communitySpotPrice`, `oneMonthPrice`, `threeMonthPrice`, `sixMonthPrice`) and,
   per cloud and GPU count up to the type's maximum for that cloud, one aliased
   `secureN: lowestPrice(input: {gpuCount: N, secureCloud: true}) { stockStatus minimumBidPrice minVcpu
   minMemory }`
   (`communityN` likewise with `secureCloud: false`).

The price fields and `lowestPrice` are those gpuhunt (`providers/runpod.py`) and SkyPilot
(`fetch_runpod.py`) read. The API key is optional (gpuhunt queries without one): with
`GPUPRICE_RUNPOD_API_KEY` or RunPod's own `RUNPOD_API_KEY` it is sent as `Authorization: Bearer`
(runpod-python dropped the `?api_key=` query parameter in 2025), so it never appears in a URL.

What is taken, and quirks:
- **Prices are per GPU**: an N-GPU offer is stored per instance, N × the price (CONTRACT §2).
- **Secure and Community Cloud are different offers** (RunPod's data centers vs. hosts renting out
  their machines; different prices and guarantees), told apart in the SKU:
  `NVIDIA A100 80GB PCIe x2 (secure)`. The region is `global`: these prices and the stock signal
  are RunPod-wide, not per data center.
- `stockStatus` High/Medium/Low → `available` (the level is in the notes); null → RunPod does not
  offer that count in that cloud now: no offer, and the run's notes say which were skipped.
- Spot (interruptible, bid) → `spot`, from `secureSpotPrice` / `communitySpotPrice`, else from the
  count's `minimumBidPrice` (the lowest bid per GPU accepted now, `runpodctl start pod --bid` is
  per GPU); neither → no spot offer.
- Savings plans (`oneMonthPrice`…) are per GPU-hour rates for a period paid up front, not a monthly
  subscription price, and a public price catalog found them equal to on-demand for every GPU it
  checked; they are not stored as `monthly` offers, only noted on Secure offers when they differ.
- GraphQL errors arrive with HTTP 200 in `{"errors": [{"message": ...}]}`; they fail the run with
  RunPod's message, as do HTTP errors (401 for a bad key).
- Host shape: the count's `lowestPrice.minVcpu` and `minMemory` (GB), the smallest pod RunPod
  offers at that GPU count and cloud (gpuhunt reads them the same way); null when not offered.
- Billing is per second (docs.runpod.io, "Billing overview").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from collectors.runpod.graphql import (
    CLOUDS,
    GRAPHQL_URL,
    LIST_QUERY,
    MAX_GPU_COUNT,
    gpu_types_of,
    prices_query,
    request_body,
)
from collectors.runpod.offers import BILLING_INCREMENT_S, PROVIDER, a100_spec, not_offered, quotes_of
from pricedb.models import Pricing, Quote

__all__ = ["RunpodCollector"]


class RunpodCollector(Collector):
    name: ClassVar[str] = PROVIDER
    title: ClassVar[str] = "RunPod"
    source_urls: ClassVar[tuple[str, ...]] = (GRAPHQL_URL,)
    pricings: ClassVar[frozenset[Pricing]] = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 60),)  # stock moves by the hour
    billing_increment_s: ClassVar[int] = BILLING_INCREMENT_S
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
        a100 = [gpu for gpu in types if a100_spec(gpu) is not None]
        if not a100:
            ids = ", ".join(sorted(str(gpu.get("id")) for gpu in types))
            raise ParseError(f"{GRAPHQL_URL}: none of the {len(types)} GPU types is an A100 ({ids})")
        fetched = Fetched([])
        for gpu in a100:
            counts, notes = max_counts(gpu)
            fetched.notes.extend(notes)
            if not any(counts.values()):
                continue
            raw = await self._post(http, prices_query(str(gpu["id"]), counts), f"prices of {gpu['id']}")
            fetched.responses.append(raw)
            fetched.notes.extend(not_offered(raw))  # also raises on a GraphQL error answer
        if not fetched.responses:
            raise ParseError(f"{GRAPHQL_URL}: no A100 type is offered in either cloud ({'; '.join(fetched.notes)})")
        return fetched

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        for raw in fetched.responses:
            quotes.extend(quotes_of(raw))
        return quotes


def max_counts(gpu: Mapping[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Per cloud, the largest GPU count to ask about (0 when the type is not in that cloud)."""
    gpu_id = gpu.get("id")
    overall = gpu.get("maxGpuCount")
    counts: dict[str, int] = {}
    notes: list[str] = []
    for cloud in CLOUDS:
        if gpu.get(f"{cloud}Cloud") is False:
            counts[cloud] = 0
            notes.append(f"{gpu_id}: not offered in {cloud} cloud")
            continue
        value = gpu.get(f"maxGpuCount{cloud.capitalize()}Cloud")
        value = overall if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ParseError(f"{GRAPHQL_URL}: {gpu_id} has no usable maxGpuCount for {cloud} cloud ({value!r})")
        if value > MAX_GPU_COUNT:
            notes.append(f"{gpu_id}: {cloud} cloud allows {value} GPUs; only up to {MAX_GPU_COUNT} are asked for")
        counts[cloud] = min(value, MAX_GPU_COUNT)
    return counts, notes
