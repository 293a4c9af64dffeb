"""The card table: the only place gpuprice states what a GPU card is.

One `Card` per model, memory variant and form factor, with the figures its data sheet gives:
memory as sold (GB), peak memory bandwidth (GB/s), form factor and interconnect, dense BF16 and FP16
tensor TFLOPS (vendors print the sparse figure with an asterisk; dense is half of it), and a plausible
rental band in USD per GPU-hour for the sanity checks. A figure no vendor document confirms is None
(unknown is not zero, and never guessed). Every layer reads these: the collectors' sanity checks and
size rounding (`MODEL_FACTS`, `nearest_known_size`), the SkyPilot names, the estimator's borderline
sizes and bandwidths. Which provider names mean which card is in `pricedb/card_names.py`.

Data sheets (each card names its own in `datasheet`):
- A100: NVIDIA A100 Tensor Core GPU data sheet r4 — 40GB PCIe/SXM4 1,555 GB/s, 80GB PCIe 1,935 GB/s,
  80GB SXM4 2,039 GB/s; BF16 and FP16 tensor 312 | 624* TFLOPS.
- H100: NVIDIA H100 Tensor Core GPU Architecture whitepaper (dense BF16/FP16 989.4 SXM5, 756 PCIe);
  H100 SXM5 3,350 GB/s (H100 data sheet); H100 PCIe product brief PB-11133-001 (2,000 GB/s);
  H100 NVL product brief PB-11773-001 (94 GB, 3,938 GB/s, 1,671* TFLOPS).
- H200: NVIDIA H200 product page (141 GB, 4,800 GB/s; SXM 1,979*, NVL 1,671* TFLOPS).
- A800, H800: China-market cards without a global NVIDIA data sheet; only memory, form factor and
  interconnect are stated (press reports say "A100/H100 figures, NVLink cut to 400 GB/s"), the rest None.

Only the cards gpuprice collects today are filled in; the record holds what every card needs.
Price bands are per model today (every variant of a model carries its model's band).
"""

from __future__ import annotations

from dataclasses import dataclass

A100_DATASHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
H100_WHITEPAPER = "https://nvdam.widen.net/s/95bdhpsgrs/nvidia_h100_tensor_core_gpu_architecture_whitepaper_v1.03"
H100_NVL_BRIEF = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/h100/PB-11773-001_v01.pdf"
H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"
NO_DATASHEET = "none published (China-market card)"


@dataclass(frozen=True, slots=True)
class Card:
    """One card model in one memory variant and form factor, as its data sheet describes it."""

    model: str  # "A100": the name offers carry (`Quote.gpu_model`)
    memory_gb: float  # as sold (40, 80, 141), not as reported in MiB or GiB
    form_factor: str  # "SXM4", "SXM5", "PCIe" — `Quote.form_factor`'s words
    interconnect: str  # "NVLink", "PCIe" — `Quote.interconnect`'s words
    bandwidth_gb_s: float | None  # peak memory bandwidth, 10^9 bytes/s
    bf16_dense_tflops: float | None  # tensor, dense
    fp16_dense_tflops: float | None  # tensor, dense
    usd_per_gpu_hour: tuple[float, float]  # plausible rental band for the sanity checks (a judgement)
    datasheet: str  # where the figures come from

    @property
    def form_factor_class(self) -> str:
        return _form_factor_class(self.form_factor)


def _form_factor_class(form_factor: str) -> str:
    """SXM (any generation) or PCIe: what a name that says only "SXM" or "PCIe" is matched against."""
    return "SXM" if form_factor.upper().startswith("SXM") else "PCIe"


_A100_BAND = (0.1, 12.0)
_H100_BAND = (0.3, 20.0)
_H200_BAND = (0.5, 25.0)

# Ordered by model as the answers list the models (manual sheet errors, `gpu=`'s choices).
CARDS: tuple[Card, ...] = (
    Card("A100", 40.0, "SXM4", "NVLink", 1555.0, 312.0, 312.0, _A100_BAND, A100_DATASHEET),
    Card("A100", 40.0, "PCIe", "PCIe", 1555.0, 312.0, 312.0, _A100_BAND, A100_DATASHEET),
    Card("A100", 80.0, "SXM4", "NVLink", 2039.0, 312.0, 312.0, _A100_BAND, A100_DATASHEET),
    Card("A100", 80.0, "PCIe", "PCIe", 1935.0, 312.0, 312.0, _A100_BAND, A100_DATASHEET),
    Card("A800", 40.0, "PCIe", "PCIe", None, None, None, _A100_BAND, NO_DATASHEET),
    Card("A800", 80.0, "SXM4", "NVLink", None, None, None, _A100_BAND, NO_DATASHEET),
    Card("A800", 80.0, "PCIe", "PCIe", None, None, None, _A100_BAND, NO_DATASHEET),
    Card("H100", 80.0, "SXM5", "NVLink", 3350.0, 989.4, 989.4, _H100_BAND, H100_WHITEPAPER),
    Card("H100", 80.0, "PCIe", "PCIe", 2000.0, 756.0, 756.0, _H100_BAND, H100_WHITEPAPER),
    Card("H100", 94.0, "PCIe", "NVLink", 3938.0, 835.5, 835.5, _H100_BAND, H100_NVL_BRIEF),  # H100 NVL
    Card("H800", 80.0, "SXM5", "NVLink", None, None, None, _H100_BAND, NO_DATASHEET),
    Card("H800", 80.0, "PCIe", "PCIe", None, None, None, _H100_BAND, NO_DATASHEET),
    Card("H200", 141.0, "SXM5", "NVLink", 4800.0, 989.5, 989.5, _H200_BAND, H200_PAGE),
    Card("H200", 141.0, "PCIe", "NVLink", 4800.0, 835.5, 835.5, _H200_BAND, H200_PAGE),  # H200 NVL
)


@dataclass(frozen=True, slots=True)
class GpuModelFacts:
    """What the cards of one model share: the memory sizes it is sold in and its plausible price band."""

    memory_sizes_gb: frozenset[float]
    usd_per_gpu_hour: tuple[float, float]


def _model_facts() -> dict[str, GpuModelFacts]:
    by_model: dict[str, list[Card]] = {}
    for card in CARDS:
        by_model.setdefault(card.model, []).append(card)
    return {
        model: GpuModelFacts(
            frozenset(card.memory_gb for card in cards),
            (min(c.usd_per_gpu_hour[0] for c in cards), max(c.usd_per_gpu_hour[1] for c in cards)),
        )
        for model, cards in by_model.items()
    }


MODEL_FACTS: dict[str, GpuModelFacts] = _model_facts()


def memory_sizes(model: str) -> tuple[float, ...]:
    """The sizes `model` is sold in, smallest first (empty for a model the table does not know)."""
    facts = MODEL_FACTS.get(model)
    return tuple(sorted(facts.memory_sizes_gb)) if facts else ()


def card(model: str, memory_gb: float, form_factor: str | None = None) -> Card | None:
    """The card of `model` sold with `memory_gb`; `form_factor` ("SXM4", "SXM", "PCIe") picks among its
    variants. Without one, or with one the model is not sold in, the PCIe variant: the slower, so an
    estimate never promises the faster card. None for a model or size the table does not know."""
    variants = [c for c in CARDS if c.model == model and c.memory_gb == memory_gb]
    if form_factor:
        wanted = _form_factor_class(form_factor)
        variants = [c for c in variants if c.form_factor_class == wanted] or variants
    pcie = [c for c in variants if c.form_factor_class == "PCIe"]
    return next(iter(pcie or variants), None)


def nearest_known_size(model: str, reported_gb: float, tolerance: float = 0.07) -> float | None:
    """Marketing size (40, 80, …) for a reported size in GB or GiB within `tolerance`, else None.
    Providers report 40960 MiB, 39.4 GiB usable or 42.5 GB for the same 40GB card."""
    for size in memory_sizes(model):
        if abs(reported_gb - size) <= size * tolerance:
            return size
    return None
