"""The GPU an E2E plan name says: `GDC3.A10080-16.115GB` is 1 × A100 80 GB (16 vCPU, 115 GB RAM),
`GDC.2xA30-32.180GB` 2 × A30, `GDC-A.H100-1.120GB` 1 × H100.

E2E's plan API has no typed GPU field (e2ectl's `NodeCatalogPlan`), so the card is read from the name:
`<series>.[<count>x]<card>[<memory>]-<vCPUs>.<RAM>GB`. The card token is the longest leading part of
the token the card table reads (`A10080` → `A100` + 80 GB; `A10` is never read inside `A100`). A
name that leaves the memory open for a card sold in several sizes (`A100`, `V100`) does not say its
card: UnknownGpu, reported, never the smaller size guessed. An untyped `gpu_card_details` object
(`CARD_TYPE`, `UNIT_COUNT`, `UNIT_MEMORY`), which some answers carry, is read first when present.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.cards import cards_of

_PLAN = re.compile(r"^[^.]+\.(?:(?P<count>\d+)x)?(?P<card>[A-Za-z][A-Za-z0-9]*)-\d+\.\d+(?:\.\d+)?GB$", re.IGNORECASE)


def plan_gpu(name: str, details: Any = None) -> tuple[GpuSpec, int]:
    """(card, GPUs per node) of a GPU plan; UnknownGpu when neither the details nor the name say it."""
    if isinstance(details, Mapping):
        from_details = _from_details(details)
        if from_details is not None:
            return from_details
    match = _PLAN.match(name.strip())
    if match is None:
        raise UnknownGpu(f"{name!r} is not a plan name of the form <series>.[<n>x]<card>-<vCPUs>.<RAM>GB")
    token = match.group("card")
    for end in range(len(token), 0, -1):
        head, size = token[:end], token[end:]
        if size and not size.isdigit():
            continue
        try:
            spec = identify(f"{head} {size}GB" if size else head)
        except UnknownGpu:
            continue
        if not size and len(_sizes(spec.model)) > 1:
            raise UnknownGpu(f"{name!r} does not say the memory of its {spec.model} ({_listed(spec.model)} GB)")
        return spec, int(match.group("count") or 1)
    raise UnknownGpu(f"{name!r}: the card table knows no card {token!r}")


def _from_details(details: Mapping[str, Any]) -> tuple[GpuSpec, int] | None:
    card, count, memory = details.get("CARD_TYPE"), details.get("UNIT_COUNT"), details.get("UNIT_MEMORY")
    if not isinstance(card, str) or not isinstance(count, int) or count < 1:
        return None
    stated = float(memory) if isinstance(memory, int | float) and not isinstance(memory, bool) else None
    return identify(card.replace("-", " "), stated), count


def _sizes(model: str) -> set[float]:
    return {c.memory_gb for c in cards_of(model) if c.variant is None}


def _listed(model: str) -> str:
    return " or ".join(f"{s:g}" for s in sorted(_sizes(model)))
