"""From the names providers use to the card they mean (the cards' figures are in pricedb/cards.py).

Providers name the same card many ways (`A100-SXM4-80GB`, `A100 PCIE`, `nvidia-a100-80gb`,
`NVIDIA H100 80GB HBM3`, `RTX 6000Ada`, `p4de.24xlarge`). `identify` reads a name in three steps:

1. **Instance types** whose names do not say the card (`p4de.24xlarge`, `a2-ultragpu-1g`): the rules
   in `_RULES`, tried first. (Each provider's other instance-type rules live in its collector.)
2. **The model**: `_MODELS`, most specific first, each matched as a whole word, so look-alikes never
   meet — `RTX 6000 Ada` before the Quadro `RTX 6000`, neither inside `RTX A6000` or `RTX PRO 6000`;
   `A10G` before `A10`, which never matches inside `A100`; `L40S` before `L40`, `GB200`/`GH200`
   never read as `B200`/`H200`, `H20` never inside `H200`; a GeForce name followed by Ti, SUPER or D
   (`RTX 4090D`, `RTX 3090 Ti`) is another card, so it is not matched at all. A word is bounded by
   anything but a letter or digit, and on its left by no underscore either: `BM.GPU.H100.8` and
   `nvidia-l4` name their card, `Standard_NC40ads_H100_v5` does not (Azure's H100 v5 is the 94GB
   NVL; instance types are each collector's rules).
3. **The variant**, from the model's cards in the table: the memory the name says ("80GB", "80 GB",
   "80G"; a size the model is not sold in makes the name unknown rather than a wrong card), the form
   factor it says (`SXM…` or `PCIe`/`FHHL`, plus model hints: an H100 "HBM3" or "Mega" is the SXM5
   card), and `NVL` (the H100/H200 NVL variants are taken only when named, or when the memory says
   94GB). A name that does not say the memory means the size the bare name was first sold as
   (A100 40GB, V100 16GB, P100 16GB, GH200 96GB) or the model's only size; a model sold in several
   sizes without such a default (A800) needs the memory stated. A name that leaves the form factor
   open where the model has several gives none (form factor and interconnect unknown).

A MIG profile in the name (`A100-SXM4-80GB MIG 1g.10gb`, `mig-3g.40gb`) makes it a slice of that
card: `GpuSpec.gpu_fraction` is the profile's compute slices over the card's (`1g` of 7), its memory
the profile's; `GpuSpec.slice` marks the fractions providers sell by instance type (a 1/6 A10 vGPU).

A name none of this reads raises `UnknownGpu`: never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pricedb.cards import cards_of, memory_sizes

_L = r"(?<![a-z0-9_])"  # a word's left edge: not inside a word, nor after an underscore
_R = r"(?![a-z0-9])"  # its right edge
_S = r"[\s_-]*"  # what names put between the parts of one word ("RTX 6000 Ada", "RTX6000-Ada")
_NOT_ANOTHER_GEFORCE = rf"(?!{_S}(ti|super|d){_R})"  # RTX 3090 Ti, RTX 4080 SUPER, RTX 4090 D


class UnknownGpu(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class GpuSpec:
    model: str
    memory_gb: float  # per GPU; for a slice, the slice's
    form_factor: str | None = None  # "SXM4", "SXM5", "PCIe" (of the card a slice is cut from)
    interconnect: str | None = None  # "NVLink", "PCIe"
    gpu_fraction: float | None = None  # a slice: its share of one GPU's compute; None: a whole GPU
    gpu_partition: str | None = None  # a slice: what it is ("MIG 1g.10gb", "1/6 GPU (vGPU)")

    def quote_fields(self) -> dict[str, object]:
        """The GPU fields of a Quote: `Quote(**spec.quote_fields(), gpu_count=…, …)`."""
        return {
            "gpu_model": self.model,
            "gpu_memory_gb": self.memory_gb,
            "form_factor": self.form_factor,
            "interconnect": self.interconnect,
            "gpu_fraction": self.gpu_fraction,
            "gpu_partition": self.gpu_partition,
        }

    def slice(self, fraction: float, partition: str, memory_gb: float) -> GpuSpec:
        """A slice of this card: `fraction` of one GPU with `memory_gb` of its memory, called
        `partition` (e.g. Azure's NV6ads_A10_v5: `identify("A10").slice(1/6, "1/6 GPU (vGPU)", 4)`).
        UnknownGpu when it cannot be a slice of this card."""
        largest = max(memory_sizes(self.model), default=0.0)
        if not 0 < fraction <= 1 or not 0 < memory_gb <= largest:
            raise UnknownGpu(
                f"{partition!r}: {fraction:g} of a GPU with {memory_gb:g} GB is not a slice of the {self.model} "
                f"(at most {largest:g} GB)"
            )
        return GpuSpec(self.model, float(memory_gb), self.form_factor, self.interconnect, fraction, partition)


def _named(model: str, memory_gb: float, form_factor: str | None = None) -> GpuSpec:
    """A rule's answer, taken from the card table (a rule naming a card the table lacks fails at import).
    Without `form_factor` the name says only the model and memory: form factor and interconnect unknown."""
    found = [c for c in cards_of(model) if c.memory_gb == memory_gb and form_factor in (None, c.form_factor)]
    if not found:
        raise LookupError(f"the card table has no {model} {form_factor or ''} with {memory_gb:g} GB")
    if form_factor is None:
        return GpuSpec(model, memory_gb)
    return GpuSpec(model, memory_gb, found[0].form_factor, found[0].interconnect)


A100_40_SXM = _named("A100", 40.0, "SXM4")
A100_80_SXM = _named("A100", 80.0, "SXM4")
A100_80_PCIE = _named("A100", 80.0, "PCIe")

# Instance types whose names do not say the card: (pattern, spec), matched case-insensitively with
# re.search, before any card name.
_RULES: list[tuple[str, GpuSpec]] = [
    (r"^p4de\.", A100_80_SXM),
    (r"^p4d\.", A100_40_SXM),
    (r"^standard_nd\d+amsr_a100_v4$", A100_80_SXM),
    (r"^standard_nd\d+asr_v4$", A100_40_SXM),
    (r"^standard_nc\d+ads_a100_v4$", A100_80_PCIE),
    (r"^a2-ultragpu-", A100_80_SXM),
    (r"^a2-(high|mega)gpu-", A100_40_SXM),
]
_COMPILED = [(re.compile(pattern, re.IGNORECASE), spec) for pattern, spec in _RULES]


def _word(pattern: str) -> str:
    return _L + pattern + _R


_OR_NVL = f"(?:{_R}|(?=nvl{_R}))"  # the end of the word, or "NVL" glued to it ("H100NVL")


# (model, pattern), most specific first; the model is the table's spelling.
_MODELS: list[tuple[str, str]] = [
    ("MI355X", _word("mi355x")),
    ("MI325X", _word("mi325x")),
    ("MI300X", _word("mi300x")),
    ("MI250X", _word("mi250x")),
    ("MI250", _word("mi250")),
    ("MI210", _word("mi210")),
    ("MI25", _word("mi25")),
    ("V520", _word("v520")),
    ("Gaudi3", _word(f"gaudi{_S}3")),
    ("Gaudi2", _word(f"gaudi{_S}2")),
    ("Gaudi", _word(f"(gaudi(?!{_S}[23]{_R})|hl{_S}205)")),
    ("GB200", _word("gb200")),
    ("GH200", _word("gh200")),
    ("B300", _word("b300")),
    ("B200", _word("b200")),
    ("H200", _L + "h200" + _OR_NVL),
    ("H100", _L + "h100" + _OR_NVL),
    ("H800", _word("h800")),
    ("H20", _word("h20")),
    ("A100", _word("a100")),
    ("A800", _word("a800")),
    ("RTXPRO6000", _word(f"rtx{_S}pro{_S}6000")),
    ("RTX6000Ada", _word(f"rtx{_S}6000{_S}ada")),
    ("RTX5000Ada", _word(f"rtx{_S}5000{_S}ada")),
    ("RTX4000Ada", _word(f"rtx{_S}4000{_S}ada")),  # not the "RTX 4000 SFF Ada" (another card)
    ("RTX2000Ada", _word(f"rtx{_S}2000{_S}ada")),
    ("RTX8000", _word(f"((quadro|q){_S})?rtx{_S}8000")),  # the Turing Quadro RTX 8000, 48GB
    ("RTX6000", _word(f"((quadro|q){_S})?rtx{_S}6000")),  # the Turing Quadro RTX 6000, 24GB
    ("A6000", _word(f"(rtx{_S})?a6000")),
    ("A5000", _word(f"(rtx{_S})?a5000")),
    ("A4500", _word(f"(rtx{_S})?a4500")),
    ("A4000", _word(f"(rtx{_S})?a4000")),
    ("RTX5090", _word(f"rtx{_S}5090") + _NOT_ANOTHER_GEFORCE),
    ("RTX4090", _word(f"rtx{_S}4090") + _NOT_ANOTHER_GEFORCE),
    ("RTX4080", _word(f"rtx{_S}4080") + _NOT_ANOTHER_GEFORCE),
    ("RTX3090", _word(f"rtx{_S}3090") + _NOT_ANOTHER_GEFORCE),
    ("L40S", _word("l40s")),
    ("L40", _word("l40")),
    ("L20", _word("l20")),
    ("L4", _word("l4")),
    ("A40", _word("a40")),
    ("A30", _word("a30")),
    ("A16", _word("a16")),
    ("A10G", _word("a10g")),
    ("A10", _word("a10")),
    ("T4G", _word("t4g")),
    ("T4", _word("t4")),
    ("V100", _word("v100")),
    ("P100", _word("p100")),
    ("P40", _word("p40")),
    ("P4", _word("p4")),
    ("K80", _word("k80")),
    ("M60", _word("m60")),
]
_MODEL_PATTERNS = [(model, re.compile(pattern, re.IGNORECASE)) for model, pattern in _MODELS]

# The size a bare name was first sold as, for models sold in several (see the module docstring).
_BARE_NAME_SIZE: dict[str, float] = {"A100": 40.0, "V100": 16.0, "P100": 16.0, "GH200": 96.0}
# Words that say the form factor of one model's card where the name does not say SXM or PCIe.
_FORM_HINTS: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "H100": [(re.compile(_word("(hbm3|mega)"), re.IGNORECASE), "SXM")],  # H100 PCIe is HBM2e; GCP A3 Mega
}
_SXM = re.compile(_L + r"sxm\d?" + _R, re.IGNORECASE)
_PCIE = re.compile(_L + r"(pci[\s-]?e|fhhl)" + _R, re.IGNORECASE)
_NVL = re.compile(r"(?<![a-z])nvl" + _R, re.IGNORECASE)  # also glued to the model: "H100NVL"
# "80GB", "80 GB", "94 GiB", "80G" (a bare G only after two digits: "a2-highgpu-1g" is a count).
_MEMORY = re.compile(r"(?<![a-z0-9.])(?:(\d+(?:\.\d+)?)\s*gi?b|(\d{2,})\s*g)(?![a-z0-9])", re.IGNORECASE)


def _model_of(name: str) -> str:
    for model, pattern in _MODEL_PATTERNS:
        if pattern.search(name):
            return model
    raise UnknownGpu(f"no GPU rule matches {name!r}")


def _mentioned_sizes(name: str) -> set[float]:
    return {float(a or b) for a, b in _MEMORY.findall(name)}


def _form_class(name: str, model: str, nvl: bool) -> str | None:
    if _SXM.search(name):
        return "SXM"
    if _PCIE.search(name):
        return "PCIe"
    if not nvl:
        for pattern, form in _FORM_HINTS.get(model, []):
            if pattern.search(name):
                return form
    return None


def _memory_named(name: str, model: str, nvl: bool) -> float:
    """The memory `name` says for `model`, else the size its bare name means; UnknownGpu if it says a
    size the model is not sold in, or leaves open a choice it has no default for."""
    sizes = memory_sizes(model)
    mentioned = _mentioned_sizes(name)
    if mentioned - set(sizes) or len(mentioned) > 1:
        said = ", ".join(f"{m:g} GB" for m in sorted(mentioned))
        raise UnknownGpu(f"{name!r} says {said}; the {model} is sold with {', '.join(f'{s:g}' for s in sizes)} GB")
    if mentioned:
        return mentioned.pop()
    candidates = {c.memory_gb for c in cards_of(model) if (c.variant == "NVL") == nvl}
    if len(candidates) == 1:
        return candidates.pop()
    if model in _BARE_NAME_SIZE:
        return _BARE_NAME_SIZE[model]
    listed = " or ".join(f"{s:g}" for s in sizes)
    raise UnknownGpu(f"{name!r} does not say the memory of its {model} ({listed} GB)")


def _resolve(model: str, memory_gb: float, form: str | None, nvl: bool) -> GpuSpec | None:
    """The card of `model` with `memory_gb` and the named form factor class and NVL-ness, as a spec:
    full when one card fits, model and memory only when several do, None when none does."""
    sized = [c for c in cards_of(model) if c.memory_gb == memory_gb and form in (None, c.form_factor_class)]
    fitting = [c for c in sized if (c.variant == "NVL") == nvl]
    if not fitting and not nvl:  # "H200 PCIe" is the H200 NVL, "H100 94GB" the H100 NVL
        fitting = sized
    if not fitting:
        return None
    if len(fitting) == 1:
        return GpuSpec(model, memory_gb, fitting[0].form_factor, fitting[0].interconnect)
    return GpuSpec(model, memory_gb)


def _card_named(name: str, memory_gb: float | None) -> GpuSpec:
    model = _model_of(name)
    nvl = bool(_NVL.search(name))
    form = _form_class(name, model, nvl)
    named_memory = _memory_named(name, model, nvl) if memory_gb is None else None
    spec = _resolve(model, named_memory, form, nvl) if named_memory is not None else None
    if memory_gb is None:
        if spec is None:
            raise UnknownGpu(f"{name!r}: the card table has no {model} {form or ''} {named_memory:g} GB")
        return spec
    # The provider states the memory apart from the name (Vast's gpu_ram, Aliyun's GPUMemorySize): it wins.
    stated = _resolve(model, memory_gb, form, nvl)
    if stated is not None:
        return stated
    try:
        named = _resolve(model, _memory_named(name, model, nvl), form, nvl)
    except UnknownGpu:  # the name alone says no size the table has: the stated one stands
        named = None
    if named is None:
        return GpuSpec(model, memory_gb)
    return GpuSpec(model, memory_gb, named.form_factor, named.interconnect)


# A MIG profile: "1g.10gb", "MIG 3g.40gb", "nvidia.com/mig-1g.10gb", "1g.10gb+me" (media extensions).
_MIG_PROFILE = re.compile(r"(?<![a-z0-9])(\d)g\.(\d+)gb(?:\+me)?(?![a-z0-9])", re.IGNORECASE)
_MIG_WORD = re.compile(r"(nvidia\.com/)?(?<![a-z0-9])mig(?![a-z0-9])[\s_-]*", re.IGNORECASE)


def _mig_slice(name: str, profile: re.Match[str]) -> GpuSpec:
    """A MIG instance: the card the rest of the name says, cut as the profile says. UnknownGpu for a
    card NVIDIA's MIG guide does not list or a profile larger than the card."""
    whole = identify(_MIG_WORD.sub(" ", name[: profile.start()] + name[profile.end() :]).strip())
    slices, memory = int(profile.group(1)), float(profile.group(2))
    instances = {c.mig_instances for c in cards_of(whole.model) if c.memory_gb == whole.memory_gb}
    if len(instances) != 1 or None in instances:
        raise UnknownGpu(f"{name!r}: the {whole.model} {whole.memory_gb:g}GB is not a card MIG slices")
    (count,) = instances
    if slices > count or memory > whole.memory_gb or (slices < count and memory == whole.memory_gb):
        raise UnknownGpu(f"{name!r}: not a MIG profile of the {whole.model} {whole.memory_gb:g}GB ({count} slices)")
    return whole.slice(slices / count, f"MIG {slices}g.{memory:g}gb", memory)


def identify(name: str, memory_gb: float | None = None) -> GpuSpec:
    """The GPU a provider's name means. `memory_gb`, when the provider states it separately
    (Vast's gpu_ram, Aliyun's GPUMemorySize), wins over what the name implies — except for a MIG
    slice, whose profile states its memory exactly."""
    profile = _MIG_PROFILE.search(name)
    if profile is not None:
        return _mig_slice(name, profile)
    for pattern, spec in _COMPILED:
        if pattern.search(name):
            if memory_gb is not None and memory_gb != spec.memory_gb:
                return GpuSpec(spec.model, memory_gb, spec.form_factor, spec.interconnect)
            return spec
    return _card_named(name, memory_gb)
