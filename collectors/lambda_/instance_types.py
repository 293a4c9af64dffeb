"""Reading Lambda's instance-types answer: the `data` object of instance types, the card each GPU
type holds (its `gpu_description` through `pricedb.card_names.identify`), its GPU count (checked
against the description's "8x"), host shape and the regions listed with capacity now."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from collectors.base import RawResponse
from collectors.errors import ParseError
from collectors.skipped import NO_PRICE, UNKNOWN_GPU
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.shapes import host_fields

_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*x\s", re.IGNORECASE)


def instance_types(raw: RawResponse) -> dict[str, Mapping[str, Any]]:
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


def gpu_types(
    raw: RawResponse, types: Mapping[str, Mapping[str, Any]]
) -> tuple[list[tuple[str, Mapping[str, Any], GpuSpec]], Counter[str]]:
    """The priced GPU types (name, item, card), sorted by name, and what was left out, counted: a
    description the card table does not know (never guessed) and a type priced at 0 cents."""
    cards: list[tuple[str, Mapping[str, Any], GpuSpec]] = []
    skipped: Counter[str] = Counter()
    for name, item in sorted(types.items()):
        instance = item["instance_type"]
        try:
            spec = card_of(raw, name, item)
        except UnknownGpu:
            skipped[f"{UNKNOWN_GPU}: {instance['gpu_description']}"] += 1
            continue
        if spec is None:
            continue
        if instance["price_cents_per_hour"] <= 0:
            skipped[f"{NO_PRICE}: {name}"] += 1
            continue
        cards.append((name, item, spec))
    return cards, skipped


def card_of(raw: RawResponse, name: str, item: Mapping[str, Any]) -> GpuSpec | None:
    """The card an instance type holds, read from its `gpu_description` ("H100 (80 GB SXM5)",
    "GH200 (96 GB)", "Tesla V100 (16 GB)"); None for a type without GPUs (`specs.gpus` 0). A
    description the card table does not know raises UnknownGpu: reported, never guessed."""
    instance = item["instance_type"]
    for field in ("gpu_description", "price_cents_per_hour", "specs"):
        if field not in instance:
            raise ParseError(f"{raw.url}: {name} has no '{field}' (has the API changed?)")
    cents = instance["price_cents_per_hour"]
    if isinstance(cents, bool) or not isinstance(cents, int | float):
        raise ParseError(f"{raw.url}: {name} price_cents_per_hour {cents!r} is not a number")
    specs = instance["specs"]
    if isinstance(specs, Mapping) and specs.get("gpus") == 0:
        return None
    return identify(str(instance["gpu_description"]))


def gpu_count_of(raw: RawResponse, name: str, instance: Mapping[str, Any]) -> int:
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


def host_shape(instance: Mapping[str, Any]) -> dict[str, Any]:
    specs = instance.get("specs")
    return host_fields(specs.get("vcpus"), specs.get("memory_gib")) if isinstance(specs, Mapping) else {}


def capacity_regions(raw: RawResponse, name: str, item: Mapping[str, Any]) -> set[str]:
    listed = item.get("regions_with_capacity_available")
    if not isinstance(listed, list):
        raise ParseError(f"{raw.url}: {name} has no 'regions_with_capacity_available' list")
    regions = set()
    for region in listed:
        if not isinstance(region, Mapping) or not str(region.get("name", "")).strip():
            raise ParseError(f"{raw.url}: {name} lists a region without a name: {region!r}")
        regions.add(str(region["name"]).strip())
    return regions
