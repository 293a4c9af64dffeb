"""Which GPUs an EC2 instance type has: AWS's instance type names do not say the card.

One `Family` per GPU instance family: the card (as AWS's product page names it, read by
`pricedb.card_names.identify`, so the card table supplies memory, form factor and interconnect),
the GPUs of each size, and the page the figures come from. The Price List's own `GPU` column gives
the count where it says one (it does for p4d, "8"); the table gives it otherwise and is the
cross-check. The Price List's `GPU Memory` column is not read: it is "NA" in the real p4d rows
seen (opencost's recorded us-east-1 product, 2024-05), and where sources fill it, it is the whole
instance's memory ("640 GB" for 8 × H100), not the card's.

Fractional families (g6f, gr6f: a share of one L4 per instance) are listed with the share of the
card each size gets and stored as slices (`gpu_fraction`, `gpu_partition` "1/8 GPU", the slice's
memory the same share of the card's: 3 GB for 1/8 of an L4, as AWS's g6f table lists), never as
whole cards.

Bases, per family (see /work/research/cards/instance_rules.md for the research notes):
- AWS's instance-type pages, https://aws.amazon.com/ec2/instance-types/<family>/ (card per family);
- the AWS Batch "Run GPU jobs" table, https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html
  (GPUs per size of g3, g4dn, g5, g5g, g6, p2, p3, p3dn);
- meta-pytorch/torchx `named_resources_aws.py` (p4d, p4de, p5, p5e, p5en, g6e counts) and SkyPilot's
  `fetch_aws.py` (p5.4xlarge has 1 GPU; p5en is 8 × H200, its API names the GPU only "NVIDIA");
- instances.vantage.sh data as published in tsaol/aws-gpu `data/*_instances.js` (g4ad, g7e, gr6,
  g6f counts and cards, cross-checked against the above where both exist).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from pricedb.card_names import GpuSpec, identify

EC2_PAGE = "https://aws.amazon.com/ec2/instance-types/{}/"
BATCH_TABLE = "https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html"

# The sizes most GPU families share: one GPU up to 16xlarge, four at 12xlarge and 24xlarge, eight at 48xlarge.
_G_SIZES = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "24xlarge": 4,
            "48xlarge": 8}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # "p5", "p6-b200": the part of the instance type before the dot
    card: str  # the card as AWS's page names it, read by identify()
    gpus: Mapping[str, int]  # size → GPUs per instance
    source: str  # where the card and the counts come from
    slices: Mapping[str, Fraction] = field(default_factory=dict)  # fractional families: size → share of one GPU
    spec: GpuSpec = field(init=False)  # the card, from the table (an unknown card fails at import)

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", identify(self.card))

    @property
    def fractional(self) -> bool:
        return bool(self.slices)

    def instance_types(self) -> list[str]:
        return [f"{self.name}.{size}" for size in (*self.gpus, *self.slices)]


FAMILIES: tuple[Family, ...] = (
    Family("p6-b200", "NVIDIA B200", {"48xlarge": 8}, EC2_PAGE.format("p6")),
    Family("p5en", "NVIDIA H200 141GB SXM", {"48xlarge": 8}, EC2_PAGE.format("p5") + "; SkyPilot fetch_aws.py"),
    Family("p5e", "NVIDIA H200 141GB SXM", {"48xlarge": 8}, EC2_PAGE.format("p5") + "; torchx"),
    Family("p5", "NVIDIA H100 80GB SXM", {"48xlarge": 8, "4xlarge": 1}, EC2_PAGE.format("p5") + "; SkyPilot"),
    Family("p4de", "NVIDIA A100 80GB SXM4", {"24xlarge": 8}, EC2_PAGE.format("p4")),
    Family("p4d", "NVIDIA A100 40GB SXM4", {"24xlarge": 8}, EC2_PAGE.format("p4")),
    Family("p3dn", "NVIDIA V100 32GB SXM2", {"24xlarge": 8}, BATCH_TABLE),
    Family("p3", "NVIDIA V100 16GB SXM2", {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8}, BATCH_TABLE),
    Family("p2", "NVIDIA K80", {"xlarge": 1, "8xlarge": 8, "16xlarge": 16}, BATCH_TABLE),  # per GK210 chip
    Family("g7e", "NVIDIA RTX PRO 6000 Blackwell 96GB",
           {"2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "12xlarge": 2, "24xlarge": 4, "48xlarge": 8},
           EC2_PAGE.format("g7e") + "; vantage data"),
    Family("g6e", "NVIDIA L40S", _G_SIZES, EC2_PAGE.format("g6e") + "; torchx"),
    Family("g6", "NVIDIA L4", _G_SIZES, BATCH_TABLE),
    Family("gr6", "NVIDIA L4", {"4xlarge": 1, "8xlarge": 1}, EC2_PAGE.format("g6") + "; vantage data"),
    Family("g6f", "NVIDIA L4", {},
           EC2_PAGE.format("g6") + "; SkyPilot fetch_aws.py (fraction from the API's memory); vantage data",
           {"large": Fraction(1, 8), "xlarge": Fraction(1, 8), "2xlarge": Fraction(1, 4), "4xlarge": Fraction(1, 2)}),
    Family("gr6f", "NVIDIA L4", {}, EC2_PAGE.format("g6") + "; vantage data", {"4xlarge": Fraction(1, 2)}),
    Family("g5g", "NVIDIA T4G", {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 2, "metal": 2},
           BATCH_TABLE),
    Family("g5", "NVIDIA A10G", _G_SIZES, BATCH_TABLE),
    Family("g4dn", "NVIDIA T4",
           {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1, "12xlarge": 4, "metal": 8},
           BATCH_TABLE),
    Family("g4ad", "AMD Radeon Pro V520", {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 2, "16xlarge": 4},
           EC2_PAGE.format("g4") + "; vantage data"),
    Family("g3", "NVIDIA Tesla M60", {"4xlarge": 1, "8xlarge": 2, "16xlarge": 4}, BATCH_TABLE),  # per GPU chip
    Family("g3s", "NVIDIA Tesla M60", {"xlarge": 1}, BATCH_TABLE),
)  # fmt: skip
BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}

# Whole-GPU instance types, the ones spot prices are asked for.
WHOLE_GPU_TYPES: tuple[str, ...] = tuple(sorted(t for f in FAMILIES if not f.fractional for t in f.instance_types()))
# Every instance type of the table, slices included: the ones availability zones are asked for.
GPU_TYPES: tuple[str, ...] = tuple(sorted(t for f in FAMILIES for t in f.instance_types()))


@dataclass(frozen=True, slots=True)
class InstanceGpus:
    """The GPUs of one instance type, and a note when the Price List and the table disagree."""

    spec: GpuSpec
    count: int
    note: str | None = None


class NotStored(ValueError):
    """An instance type whose GPUs cannot be stored as whole cards; the message says why (run notes)."""


def gpus_of(instance_type: str, listed_count: str | None = None) -> InstanceGpus:
    """The GPUs of `instance_type`. `listed_count` is the Price List's `GPU` column ("8", "NA", "")
    and wins over the table where it is a whole number; a fractional size is one slice. NotStored: a
    family the table lacks, a size whose count neither says."""
    family_name, _, size = instance_type.partition(".")
    family = BY_NAME.get(family_name)
    if family is None:
        raise NotStored(f"{instance_type}: GPU family {family_name!r} not in the table (card unknown)")
    if size in family.slices:
        share = family.slices[size]
        card = family.spec
        return InstanceGpus(card.slice(float(share), f"{share} GPU", card.memory_gb * float(share)), 1)
    table = family.gpus.get(size)
    listed = _whole_number(listed_count)
    count = listed if listed is not None else table
    if count is None:
        raise NotStored(f"{instance_type}: GPUs per instance unknown (size not in the table, no GPU column)")
    note = None
    if listed is not None and table is not None and listed != table:
        note = f"the price list says {listed} GPUs, AWS's documentation {table}"
    return InstanceGpus(family.spec, count, note)


def _whole_number(text: str | None) -> int | None:
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() and int(text) > 0 else None
