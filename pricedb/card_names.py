"""From the names providers use to the card they mean (the cards' figures are in pricedb/cards.py).

Providers name the same card many ways (`A100-SXM4-80GB`, `A100 PCIE`, `nvidia-a100-80gb`,
`p4de.24xlarge`, `NC24ads A100 v4`). Rules are tried in order, most specific first, so an 80GB card
is never read as 40GB: instance-type rules come before card-name rules, and every generic A100 rule
that would mean 40GB refuses names that mention 80GB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pricedb.cards import card, memory_sizes


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


def _named(model: str, memory_gb: float, form_factor: str | None = None) -> GpuSpec:
    """A rule's answer, taken from the card table (a rule naming a card the table lacks fails at import).
    Without `form_factor` the name says only the model and memory: form factor and interconnect unknown."""
    if form_factor is None:
        if memory_gb not in memory_sizes(model):
            raise LookupError(f"the card table has no {model} with {memory_gb:g} GB")
        return GpuSpec(model, memory_gb)
    found = card(model, memory_gb, form_factor)
    if found is None or found.form_factor != form_factor:
        raise LookupError(f"the card table has no {model} {form_factor} with {memory_gb:g} GB")
    return GpuSpec(found.model, found.memory_gb, found.form_factor, found.interconnect)


A100_40_SXM = _named("A100", 40.0, "SXM4")
A100_80_SXM = _named("A100", 80.0, "SXM4")
A100_40_PCIE = _named("A100", 40.0, "PCIe")
A100_80_PCIE = _named("A100", 80.0, "PCIe")
A100_40 = _named("A100", 40.0)
A100_80 = _named("A100", 80.0)

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
