"""The RunPod GraphQL requests: the GPU type list, the per-type price query with one aliased
`lowestPrice` per (cloud, GPU count) up to the counts each cloud allows, and reading GraphQL error
envelopes."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError

GRAPHQL_URL = "https://api.runpod.io/graphql"
CLOUDS = ("secure", "community")
MAX_GPU_COUNT = 16  # RunPod pods hold at most 8–10 GPUs today; more aliases than this means bad data

LIST_QUERY = """query GpuTypeList {
  gpuTypes {
    id
    displayName
    memoryInGb
    maxGpuCount
    maxGpuCountSecureCloud
    maxGpuCountCommunityCloud
    secureCloud
    communityCloud
  }
}"""

_PRICE_FIELDS = """    id
    displayName
    memoryInGb
    securePrice
    communityPrice
    secureSpotPrice
    communitySpotPrice
    oneMonthPrice
    threeMonthPrice
    sixMonthPrice"""

_ALIAS = re.compile(r"^(secure|community)(\d+)$")


def alias(cloud: str, count: int) -> str:
    return f"{cloud}{count}"


def parse_alias(key: str) -> tuple[str, int] | None:
    match = _ALIAS.match(key)
    return (match.group(1), int(match.group(2))) if match else None


def prices_query(gpu_id: str, counts: Mapping[str, int]) -> str:
    """One type's prices and, per cloud and GPU count, its stock (`counts`: cloud → max count)."""
    lines = [f"query GpuTypePrices {{\n  gpuTypes(input: {{id: {json.dumps(gpu_id)}}}) {{", _PRICE_FIELDS]
    for cloud in CLOUDS:
        secure = "true" if cloud == "secure" else "false"
        for count in range(1, counts.get(cloud, 0) + 1):
            lines.append(
                f"    {alias(cloud, count)}: lowestPrice(input: {{gpuCount: {count}, secureCloud: {secure}}}) "
                "{ stockStatus minimumBidPrice minVcpu minMemory }"
            )
    lines.append("  }\n}")
    return "\n".join(lines)


def request_body(query: str) -> bytes:
    """Compact JSON, so the body (and what a replay matches in it) does not depend on the client."""
    return json.dumps({"query": query}, separators=(",", ":")).encode()


def graphql_errors(body: Any) -> str | None:
    """The messages of a GraphQL `errors` array, or None when there is none."""
    if not isinstance(body, Mapping) or not body.get("errors"):
        return None
    errors = body["errors"]
    if not isinstance(errors, list):
        return str(errors)
    messages = [str(e.get("message", e)) if isinstance(e, Mapping) else str(e) for e in errors]
    return "; ".join(messages)


def gpu_types_of(raw: RawResponse) -> list[Mapping[str, Any]]:
    """`data.gpuTypes` of an answer; GraphQL errors (sent with HTTP 200) become a FetchError."""
    body = raw.json()
    errors = graphql_errors(body)
    if errors:
        raise FetchError(f"RunPod GraphQL API answered {raw.label or raw.url} with errors: {errors}")
    data = body.get("data") if isinstance(body, Mapping) else None
    types = data.get("gpuTypes") if isinstance(data, Mapping) else None
    if not isinstance(types, list) or not all(isinstance(t, Mapping) for t in types):
        found = ", ".join(map(str, body)) if isinstance(body, Mapping) else type(body).__name__
        raise ParseError(f"{raw.url}: no data.gpuTypes list in the {raw.label or 'answer'} (found: {found})")
    return types


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
