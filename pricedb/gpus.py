"""One table from the names providers use to what the GPU is.

Providers name the same card many ways (`A100-SXM4-80GB`, `A100 PCIE`, `nvidia-a100-80gb`,
`p4de.24xlarge`, `NC24ads A100 v4`). Rules are tried in order, most specific first, so an 80GB card
is never read as 40GB: instance-type rules come before card-name rules, and every generic A100 rule
that would mean 40GB refuses names that mention 80GB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuSpec:
    model: str
    memory_gb: float
    form_factor: str | None = None  # "SXM4", "SXM5", "PCIe"
    interconnect: str | None = None  # "NVLink", "PCIe"

    def quote_fields(self) -> dict[str, object]:
        """The GPU fields of a Quote: `Quote(**spec.quote_fields(), gpu_count=…, …)`."""
        return {
            "gpu_model": self.model,
            "gpu_memory_gb": self.memory_gb,
            "form_factor": self.form_factor,
            "interconnect": self.interconnect,
        }


@dataclass(frozen=True, slots=True)
class GpuModelFacts:
    """Facts per model: the memory sizes it is sold in and a plausible rental price band."""

    memory_sizes_gb: frozenset[float]
    usd_per_gpu_hour: tuple[float, float]


MODEL_FACTS: dict[str, GpuModelFacts] = {
    "A100": GpuModelFacts(frozenset({40.0, 80.0}), (0.1, 12.0)),
    "A800": GpuModelFacts(frozenset({40.0, 80.0}), (0.1, 12.0)),
    "H100": GpuModelFacts(frozenset({80.0, 94.0}), (0.3, 20.0)),
    "H800": GpuModelFacts(frozenset({80.0}), (0.3, 20.0)),
    "H200": GpuModelFacts(frozenset({141.0}), (0.5, 25.0)),
}

A100_40_SXM = GpuSpec("A100", 40.0, "SXM4", "NVLink")
A100_80_SXM = GpuSpec("A100", 80.0, "SXM4", "NVLink")
A100_40_PCIE = GpuSpec("A100", 40.0, "PCIe", "PCIe")
A100_80_PCIE = GpuSpec("A100", 80.0, "PCIe", "PCIe")
A100_40 = GpuSpec("A100", 40.0)
A100_80 = GpuSpec("A100", 80.0)

_NOT_80 = r"(?!.*80\s*g)"  # refuse names that mention 80GB anywhere after this point

# (pattern, spec), most specific first. Patterns are matched case-insensitively with re.search.
_RULES: list[tuple[str, GpuSpec]] = [
    # Instance types whose names do not say the memory.
    (r"^p4de\.", A100_80_SXM),
    (r"^p4d\.", A100_40_SXM),
    (r"^standard_nd\d+amsr_a100_v4$", A100_80_SXM),
    (r"^standard_nd\d+asr_v4$", A100_40_SXM),
    (r"^standard_nc\d+ads_a100_v4$", A100_80_PCIE),
    (r"^a2-ultragpu-", A100_80_SXM),
    (r"^a2-(high|mega)gpu-", A100_40_SXM),
    (r"^bm\.gpu\.a100-v2\.", A100_80_SXM),
    (r"^bm\.gpu4\.", A100_40_SXM),
    (r"^gt4\.", A100_40_SXM),  # Tencent Cloud GT4: A100 NVLink 40GB
    # Card names that say the memory and the form factor.
    (r"a100[-_ ]?sxm4?[-_ ]?80\s*g", A100_80_SXM),
    (r"a100[-_ ]?80\s*g(b)?[-_ ]?sxm", A100_80_SXM),
    (r"a100[-_ ]?80\s*g(b)?[-_ ]?pcie", A100_80_PCIE),
    (r"a100[-_ ]?pcie[-_ ]?80\s*g", A100_80_PCIE),
    (r"a100[-_ ]?sxm4?[-_ ]?40\s*g", A100_40_SXM),
    (r"a100[-_ ]?pcie[-_ ]?40\s*g", A100_40_PCIE),
    (r"a100[-_ ]?40\s*g(b)?[-_ ]?pcie", A100_40_PCIE),
    (r"a100\s*\(\s*80\s*gb?\s*sxm4?\s*\)", A100_80_SXM),
    (r"a100\s*\(\s*40\s*gb?\s*sxm4?\s*\)", A100_40_SXM),
    (r"a100\s*\(\s*40\s*gb?\s*pcie\s*\)", A100_40_PCIE),
    # Card names that say only the memory.
    (r"a100[^0-9]{0,12}80\s*g", A100_80),
    (r"a100[^0-9]{0,12}40\s*g", A100_40),
    # Bare names: the original A100 is the 40GB card, unless 80GB is mentioned anywhere.
    (r"^" + _NOT_80 + r".*a100[-_ ]?sxm4?\b", A100_40_SXM),
    (r"^" + _NOT_80 + r".*a100[-_ ]?pcie\b", A100_40_PCIE),
    (r"^" + _NOT_80 + r".*(nvidia[-_ ]tesla[-_ ]a100|\ba100\b)", A100_40),
]
_COMPILED = [(re.compile(pattern, re.IGNORECASE), spec) for pattern, spec in _RULES]


class UnknownGpu(ValueError):
    pass


def identify(name: str, memory_gb: float | None = None) -> GpuSpec:
    """The GPU a provider's name means. `memory_gb`, when the provider states it separately
    (Vast's gpu_ram, Aliyun's GPUMemorySize), wins over what the name implies."""
    for pattern, spec in _COMPILED:
        if pattern.search(name):
            if memory_gb is not None and memory_gb != spec.memory_gb:
                return GpuSpec(spec.model, memory_gb, spec.form_factor, spec.interconnect)
            return spec
    raise UnknownGpu(f"no GPU rule matches {name!r}")


def nearest_known_size(model: str, reported_gb: float, tolerance: float = 0.07) -> float | None:
    """Marketing size (40, 80, …) for a reported size in GB or GiB within `tolerance`, else None.
    Providers report 40960 MiB, 39.4 GiB usable or 42.5 GB for the same 40GB card."""
    facts = MODEL_FACTS.get(model)
    if facts is None:
        return None
    for size in sorted(facts.memory_sizes_gb):
        if abs(reported_gb - size) <= size * tolerance:
            return size
    return None
