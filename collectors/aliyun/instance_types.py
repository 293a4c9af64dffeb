"""Alibaba Cloud GPU instance types: the card each carries, and what the answer leaves to rules.

`DescribeInstanceTypes` states every GPU type's card (`GPUSpec`, "NVIDIA A100", "NVIDIA T4", "NVIDIA L20"),
count (`GPUAmount`) and memory per GPU (`GPUMemorySize`, GiB): the card is read from those through
`identify()`, never from a family table (third-party family tables contradict each other). The rules
here cover only what the answer does not say:

- **vGPU slices.** Alibaba Cloud's instance naming conventions (https://help.aliyun.com/en/egs/instance-naming-conventions):
  `vgn` = NVIDIA GRID vGPU (a slice of a card per instance), `sgn` = shared vGPU. Their `GPUMemorySize`
  is the slice's, so `ecs.vgn*` / `ecs.sgn*` types are slices of the card `GPUSpec` names, never whole
  cards: stored as slices (`gpu_fraction` = the slice's memory over the card's, as the family tables
  write them, "NVIDIA A10 * 1/12"; `gpu_partition` says vGPU, shared for sgn). A slice of a card sold
  in several sizes cannot say its share, and is reported as unknown.
- **Form factor** where `GPUSpec` leaves it open: the A100 families ecs.gn7 (40 GB) and ecs.gn7e (80 GB)
  are 8-GPU HGX boards, SXM4 with NVLink/NVSwitch (Alibaba Cloud's gn7/gn7e family tables, "NVLink").
  Other families keep what `identify()` reads (a PCIe-only card such as the T4 or A10 is complete).

A `GPUSpec` the card table does not know (or a memory size its model is not sold in) makes the type
unknown: named in the run's notes with its `GPUSpec` and memory, not priced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.cards import memory_sizes, nearest_known_size

SLICE_FAMILY = re.compile(r"^ecs\.[vs]gn\d", re.IGNORECASE)
# Instance families whose name says they carry GPUs (gn, vgn, sgn, ebmgn, sccgn): a type of one that
# DescribeInstanceTypes did not describe is worth a note; CPU types are not.
GPU_FAMILY = re.compile(r"^ecs\.(ebm|scc)?[vs]?gn\d", re.IGNORECASE)
# family -> (the card model its boards carry, the form factor a name for it says)
FAMILY_FORMS: dict[str, tuple[str, str]] = {"ecs.gn7": ("A100", "SXM4"), "ecs.gn7e": ("A100", "SXM4")}


@dataclass(frozen=True)
class Card:
    """A whole card: the spec a quote carries."""

    spec: GpuSpec


@dataclass(frozen=True)
class Skipped:
    """Not collected, and why (for the run's notes)."""

    why: str


def card_of(sku: str, family: str, gpu_spec: str, reported_gb: float) -> Card | Skipped:
    """The card of one GPU type from its GPUSpec and GPUMemorySize, or why it is not collected."""
    unknown = Skipped(f"unknown GPU, not collected: GPUSpec {gpu_spec!r} with {reported_gb:g} GB")
    try:
        model = identify(gpu_spec, reported_gb).model
    except UnknownGpu:
        return unknown
    if SLICE_FAMILY.match(family):
        return _slice(model, family, reported_gb) or unknown
    memory = nearest_known_size(model, reported_gb)
    if memory is None:
        return Skipped(f"unknown GPU, not collected: GPUSpec {gpu_spec!r} with {reported_gb:g} GB")
    board = FAMILY_FORMS.get(family)
    if board is not None and board[0] == model:
        return Card(identify(f"{model} {board[1]}", memory))
    return Card(identify(gpu_spec, memory))


def _slice(model: str, family: str, slice_gb: float) -> Card | None:
    """A vGPU slice of `model` with `slice_gb` of its memory; None when its share cannot be told."""
    sizes = memory_sizes(model)
    if len(sizes) != 1:
        return None
    share = Fraction(slice_gb / sizes[0]).limit_denominator(64)
    kind = "vGPU, shared" if family.lower().startswith("ecs.sgn") else "vGPU"
    try:
        return Card(identify(model, sizes[0]).slice(float(share), f"{share} GPU ({kind})", slice_gb))
    except UnknownGpu:
        return None
