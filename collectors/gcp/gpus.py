"""Which card each Compute Engine GPU SKU prices: Cloud Billing SKU descriptions name the GPU
("Nvidia Tesla T4 GPU running in Americas") but not always its memory or form factor (the V100s
Google attaches are SXM2 16GB cards, its A100 40GB the SXM4 part).

One `Accelerator` per GPU the collector prices: its Compute Engine accelerator type id, the words
the billing SKUs name it with (followed by " GPU"), the card as read by
`pricedb.card_names.identify` (so the card table supplies memory, form factor and interconnect),
and, for the GPUs attached to N1 machines, how many one VM can take.

Bases: Google's GPU pages, https://cloud.google.com/compute/docs/gpus (card, memory and the N1
attach counts: T4, P100 and P4 1/2/4, V100 1/2/4/8) and the accelerator-optimized machine pages
(A2: A100 40GB / 80GB SXM4, A3: H100 80GB SXM5, G2: L4), as also read by gpuhunt
(`providers/gcp.py`: `accelerator_details`, `accelerator_limits`) and SkyPilot (`fetch_gcp.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pricedb.card_names import GpuSpec, identify


@dataclass(frozen=True, slots=True)
class Accelerator:
    id: str  # Compute Engine accelerator type ("nvidia-tesla-t4")
    sku_name: str  # how billing SKUs name it, before " GPU" ("Nvidia Tesla T4")
    card: str  # the card, read by identify()
    label: str  # what offers' notes call one ("T4 GPU")
    attach_counts: tuple[int, ...] = ()  # GPUs one N1 VM can take; () where only machine types carry it
    spec: GpuSpec = field(init=False)
    pattern: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", identify(self.card))
        # "Nvidia Tesla A100 GPU …" must not match "Nvidia Tesla A100 80GB GPU …": the name is followed by " GPU".
        prefix = r"^(?:Spot Preemptible |Preemptible |Commitment v1: )?"
        object.__setattr__(self, "pattern", re.compile(prefix + re.escape(self.sku_name) + r" GPU\b", re.IGNORECASE))


ACCELERATORS: tuple[Accelerator, ...] = (
    Accelerator("nvidia-tesla-a100", "Nvidia Tesla A100", "NVIDIA A100 40GB SXM4", "A100 40GB GPU"),
    Accelerator("nvidia-a100-80gb", "Nvidia Tesla A100 80GB", "NVIDIA A100 80GB SXM4", "A100 80GB GPU"),
    Accelerator("nvidia-h100-80gb", "Nvidia H100 80GB", "NVIDIA H100 80GB SXM", "H100 80GB GPU"),
    Accelerator("nvidia-l4", "Nvidia L4", "NVIDIA L4", "L4 GPU"),
    Accelerator("nvidia-tesla-t4", "Nvidia Tesla T4", "NVIDIA T4", "T4 GPU", (1, 2, 4)),
    Accelerator("nvidia-tesla-v100", "Nvidia Tesla V100", "NVIDIA V100 SXM2 16GB", "V100 GPU", (1, 2, 4, 8)),
    Accelerator("nvidia-tesla-p100", "Nvidia Tesla P100", "NVIDIA Tesla P100 PCIe 16GB", "P100 GPU", (1, 2, 4)),
    Accelerator("nvidia-tesla-p4", "Nvidia Tesla P4", "NVIDIA Tesla P4", "P4 GPU", (1, 2, 4)),
)
BY_ID: dict[str, Accelerator] = {a.id: a for a in ACCELERATORS}


def accelerator_of(description: str) -> Accelerator | None:
    """The accelerator a GPU SKU's description prices, or None."""
    return next((a for a in ACCELERATORS if a.pattern.match(description)), None)
