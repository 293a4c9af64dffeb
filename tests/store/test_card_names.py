"""Provider names → cards (pricedb/card_names.py), table-driven: every spelling the sources use reads
as exactly one card, look-alikes never meet, and a name the rules do not know is refused, never guessed."""

from __future__ import annotations

import pytest

from pricedb.card_names import UnknownGpu, identify
from pricedb.cards import CARDS

SXM = "NVLink"

# name → (model, GB, form factor, interconnect); None: the name leaves it open.
NAMES: dict[str, tuple[str, float, str | None, str | None]] = {
    # RunPod GPU ids (runpod/docs references/gpu-types)
    "NVIDIA H100 80GB HBM3": ("H100", 80, "SXM5", SXM),
    "NVIDIA H100 PCIe": ("H100", 80, "PCIe", "PCIe"),
    "NVIDIA H100 NVL": ("H100", 94, "PCIe", "NVLink"),
    "NVIDIA H200": ("H200", 141, "SXM5", SXM),
    "NVIDIA B200": ("B200", 180, "SXM6", SXM),
    "NVIDIA B300 SXM6 AC": ("B300", 288, "SXM6", SXM),
    "NVIDIA A100 80GB PCIe": ("A100", 80, "PCIe", "PCIe"),
    "NVIDIA A100-SXM4-80GB": ("A100", 80, "SXM4", SXM),
    "NVIDIA A30": ("A30", 24, "PCIe", "PCIe"),
    "NVIDIA A40": ("A40", 48, "PCIe", "PCIe"),
    "NVIDIA GeForce RTX 5090": ("RTX5090", 32, "PCIe", "PCIe"),
    "NVIDIA GeForce RTX 4090": ("RTX4090", 24, "PCIe", "PCIe"),
    "NVIDIA GeForce RTX 4080": ("RTX4080", 16, "PCIe", "PCIe"),
    "NVIDIA GeForce RTX 3090": ("RTX3090", 24, "PCIe", "PCIe"),
    "NVIDIA L4": ("L4", 24, "PCIe", "PCIe"),
    "NVIDIA L40": ("L40", 48, "PCIe", "PCIe"),
    "NVIDIA L40S": ("L40S", 48, "PCIe", "PCIe"),
    "NVIDIA RTX 2000 Ada Generation": ("RTX2000Ada", 16, "PCIe", "PCIe"),
    "NVIDIA RTX 4000 Ada Generation": ("RTX4000Ada", 20, "PCIe", "PCIe"),
    "NVIDIA RTX 5000 Ada Generation": ("RTX5000Ada", 32, "PCIe", "PCIe"),
    "NVIDIA RTX 6000 Ada Generation": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "NVIDIA RTX A4000": ("A4000", 16, "PCIe", "PCIe"),
    "NVIDIA RTX A4500": ("A4500", 20, "PCIe", "PCIe"),
    "NVIDIA RTX A5000": ("A5000", 24, "PCIe", "PCIe"),
    "NVIDIA RTX A6000": ("A6000", 48, "PCIe", "PCIe"),
    "Tesla V100-FHHL-16GB": ("V100", 16, "PCIe", "PCIe"),
    "Tesla V100-PCIE-16GB": ("V100", 16, "PCIe", "PCIe"),
    "Tesla V100-SXM2-16GB": ("V100", 16, "SXM2", SXM),
    "Tesla V100-SXM2-32GB": ("V100", 32, "SXM2", SXM),
    "AMD Instinct MI300X OAM": ("MI300X", 192, "OAM", "Infinity Fabric"),
    # Vast.ai gpu_name
    "RTX 5090": ("RTX5090", 32, "PCIe", "PCIe"),
    "RTX 4090": ("RTX4090", 24, "PCIe", "PCIe"),
    "RTX 3090": ("RTX3090", 24, "PCIe", "PCIe"),
    "RTX A6000": ("A6000", 48, "PCIe", "PCIe"),
    "RTX 6000Ada": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "Q RTX 6000": ("RTX6000", 24, "PCIe", "PCIe"),
    "H100 SXM": ("H100", 80, "SXM5", SXM),
    "H100 PCIE": ("H100", 80, "PCIe", "PCIe"),
    "H100 NVL": ("H100", 94, "PCIe", "NVLink"),
    "H200": ("H200", 141, "SXM5", SXM),
    "H200 NVL": ("H200", 141, "PCIe", "NVLink"),
    "A100 PCIE": ("A100", 40, "PCIe", "PCIe"),
    "A100 SXM4": ("A100", 40, "SXM4", SXM),
    "A40": ("A40", 48, "PCIe", "PCIe"),
    "A10": ("A10", 24, "PCIe", "PCIe"),
    "L40S": ("L40S", 48, "PCIe", "PCIe"),
    "Tesla V100": ("V100", 16, None, None),
    "Tesla T4": ("T4", 16, "PCIe", "PCIe"),
    "Tesla P100": ("P100", 16, None, None),
    "RTX PRO 6000 WS": ("RTXPRO6000", 96, "PCIe", "PCIe"),
    "RTX PRO 6000 S": ("RTXPRO6000", 96, "PCIe", "PCIe"),
    "GH200 SXM": ("GH200", 96, "Superchip", "NVLink-C2C"),
    # GCP accelerator ids and billing-catalog descriptions
    "nvidia-tesla-t4": ("T4", 16, "PCIe", "PCIe"),
    "nvidia-l4": ("L4", 24, "PCIe", "PCIe"),
    "nvidia-h100-80gb": ("H100", 80, None, None),
    "nvidia-h100-mega-80gb": ("H100", 80, "SXM5", SXM),
    "nvidia-h200-141gb": ("H200", 141, "SXM5", SXM),
    "nvidia-b200": ("B200", 180, "SXM6", SXM),
    "nvidia-gb200": ("GB200", 186, "Superchip", SXM),
    "nvidia-a100-80gb": ("A100", 80, None, None),
    "nvidia-tesla-a100": ("A100", 40, None, None),
    "nvidia-tesla-v100": ("V100", 16, None, None),
    "nvidia-tesla-p100": ("P100", 16, None, None),
    "nvidia-tesla-p4": ("P4", 8, "PCIe", "PCIe"),
    "nvidia-tesla-k80": ("K80", 12, "PCIe", "PCIe"),
    "nvidia-rtx-pro-6000": ("RTXPRO6000", 96, "PCIe", "PCIe"),
    "Nvidia Tesla T4 GPU running in Americas": ("T4", 16, "PCIe", "PCIe"),
    "Nvidia H100 80GB GPU running in Americas": ("H100", 80, None, None),
    "H100 80GB Mega GPU running in Americas": ("H100", 80, "SXM5", SXM),
    "Nvidia B200 (1 gpu slice) running in Americas": ("B200", 180, "SXM6", SXM),
    # Verda (DataCrunch) gpu.description, without the "Nx " count
    "B200 SXM6 180GB": ("B200", 180, "SXM6", SXM),
    "H200 SXM5 141GB": ("H200", 141, "SXM5", SXM),
    "H100 SXM5 80GB": ("H100", 80, "SXM5", SXM),
    "A100 SXM4 40GB": ("A100", 40, "SXM4", SXM),
    "RTX6000 Ada 48GB": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "NVidia RTX6000 Ada 48GB": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "RTX PRO 6000 96GB": ("RTXPRO6000", 96, "PCIe", "PCIe"),
    "NVidia RTX A6000 48GB": ("A6000", 48, "PCIe", "PCIe"),
    "NVidia Tesla V100 16GB": ("V100", 16, None, None),
    "L40S 48GB": ("L40S", 48, "PCIe", "PCIe"),
    # Lambda gpu_description
    "1x H100 (80 GB PCIe)": ("H100", 80, "PCIe", "PCIe"),
    "8x H100 (80 GB SXM5)": ("H100", 80, "SXM5", SXM),
    "8x B200 (180 GB SXM6)": ("B200", 180, "SXM6", SXM),
    "1x GH200 (96 GB)": ("GH200", 96, "Superchip", "NVLink-C2C"),
    "1x A10 (24 GB PCIe)": ("A10", 24, "PCIe", "PCIe"),
    "1x A6000 (48 GB)": ("A6000", 48, "PCIe", "PCIe"),
    "1x RTX 6000 (24 GB)": ("RTX6000", 24, "PCIe", "PCIe"),
    "8x Tesla V100 (16 GB)": ("V100", 16, None, None),
    # AutoDL gpu_name
    "A100-PCIE-40GB": ("A100", 40, "PCIe", "PCIe"),
    "A800-80GB": ("A800", 80, None, None),
    "A800-80GB-NVLink": ("A800", 80, None, None),
    "H800": ("H800", 80, None, None),
    "H20-NVLink": ("H20", 96, "SXM5", SXM),
    "L20": ("L20", 48, "PCIe", "PCIe"),
    "V100-32GB": ("V100", 32, None, None),
    "V100-SXM2-32GB": ("V100", 32, "SXM2", SXM),
    "RTX PRO 6000": ("RTXPRO6000", 96, "PCIe", "PCIe"),
    # E2E Networks GPU cells, Aliyun GPUSpec
    "1 x A100 80 GB": ("A100", 80, None, None),
    "2 x L40S 48 GB": ("L40S", 48, "PCIe", "PCIe"),
    "NVIDIA A10": ("A10", 24, "PCIe", "PCIe"),
    "NVIDIA T4": ("T4", 16, "PCIe", "PCIe"),
    # OCI shapes that name their card
    "BM.GPU.H100.8": ("H100", 80, None, None),
    "BM.GPU.H200.8": ("H200", 141, "SXM5", SXM),
    "BM.GPU.B200.8": ("B200", 180, "SXM6", SXM),
    "BM.GPU.GB200.4": ("GB200", 186, "Superchip", SXM),
    "BM.GPU.L40S-NC.4": ("L40S", 48, "PCIe", "PCIe"),
    "VM.GPU.A10.2": ("A10", 24, "PCIe", "PCIe"),
    "BM.GPU.MI300X.8": ("MI300X", 192, "OAM", "Infinity Fabric"),
    "BM.GPU.MI355X.8": ("MI355X", 288, "OAM", "Infinity Fabric"),
    # Other spellings: the exporters' own names, AMD and Intel parts
    "H100NVL": ("H100", 94, "PCIe", "NVLink"),
    "RTX6000Ada": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "RTX6000-Ada": ("RTX6000Ada", 48, "PCIe", "PCIe"),
    "RTXA6000": ("A6000", 48, "PCIe", "PCIe"),
    "Quadro RTX 6000": ("RTX6000", 24, "PCIe", "PCIe"),
    "Quadro RTX 8000": ("RTX8000", 48, "PCIe", "PCIe"),
    "Q RTX 8000": ("RTX8000", 48, "PCIe", "PCIe"),
    "1 x RTX 8000 48 GB": ("RTX8000", 48, "PCIe", "PCIe"),
    "NVIDIA A10G": ("A10G", 24, "PCIe", "PCIe"),
    "T4G": ("T4G", 16, "PCIe", "PCIe"),
    "MI300X": ("MI300X", 192, "OAM", "Infinity Fabric"),
    "MI325X": ("MI325X", 256, "OAM", "Infinity Fabric"),
    "MI250X": ("MI250X", 128, "OAM", "Infinity Fabric"),
    "MI250": ("MI250", 128, "OAM", "Infinity Fabric"),
    "MI210": ("MI210", 64, "PCIe", "PCIe"),
    "Radeon Instinct MI25": ("MI25", 16, "PCIe", "PCIe"),
    "Radeon Pro V520": ("V520", 8, "PCIe", "PCIe"),
    "Gaudi HL-205": ("Gaudi", 32, "OAM", "RoCE"),
    "Gaudi2": ("Gaudi2", 96, "OAM", "RoCE"),
    "Gaudi 3": ("Gaudi3", 128, "OAM", "RoCE"),
    "GH200 144GB": ("GH200", 144, "Superchip", "NVLink-C2C"),
    "H100 94GB": ("H100", 94, "PCIe", "NVLink"),
    "H200 PCIe": ("H200", 141, "PCIe", "NVLink"),
    "P100 PCIe 12GB": ("P100", 12, "PCIe", "PCIe"),
    "P100 SXM2": ("P100", 16, "SXM2", SXM),
    "Tesla P40": ("P40", 24, "PCIe", "PCIe"),
    "Tesla M60": ("M60", 8, "PCIe", "PCIe"),
    "A16": ("A16", 16, "PCIe", "PCIe"),
    "H800 SXM5": ("H800", 80, "SXM5", SXM),
    "H800 PCIe": ("H800", 80, "PCIe", "PCIe"),
    "A800 SXM4 80GB": ("A800", 80, "SXM4", SXM),
    "A800 40GB": ("A800", 40, "PCIe", "PCIe"),
}


@pytest.mark.parametrize(("name", "expected"), NAMES.items(), ids=list(NAMES))
def test_every_spelling_reads_as_exactly_its_card(name: str, expected: tuple) -> None:
    spec = identify(name)
    assert (spec.model, spec.memory_gb, spec.form_factor, spec.interconnect) == expected


# Pairs that differ by a letter, a suffix or a size, and are different cards.
LOOK_ALIKES = [
    ("RTX 6000 Ada", "Quadro RTX 6000"),
    ("RTX 6000 Ada", "RTX A6000"),
    ("Quadro RTX 6000", "RTX A6000"),
    ("RTX PRO 6000", "RTX 6000 Ada"),
    ("A10", "A10G"),
    ("A10", "A100"),
    ("L40", "L40S"),
    ("L4", "L40"),
    ("H20", "H200"),
    ("B200", "GB200"),
    ("H200", "GH200"),
    ("A800 80GB", "A100 80GB"),
    ("H800", "H100"),
    ("H100 NVL", "H100 PCIe"),
    ("GH200 96GB", "GH200 144GB"),
    ("MI250", "MI250X"),
    ("MI25", "MI250"),
    ("T4", "T4G"),
    ("P4", "P40"),
    ("V100 16GB", "V100 32GB"),
    ("A100 40GB", "A100 80GB"),
]


@pytest.mark.parametrize(("one", "other"), LOOK_ALIKES)
def test_look_alikes_are_different_cards(one: str, other: str) -> None:
    a, b = identify(one), identify(other)
    assert (a.model, a.memory_gb, a.form_factor) != (b.model, b.memory_gb, b.form_factor)


@pytest.mark.parametrize(
    "name",
    [
        "RTX 4090D",  # China-market cut-down 4090: another card
        "RTX 4090 D",
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA GeForce RTX 4080 SUPER",
        "RTX 5090 D",
        "NVIDIA RTX 4000 SFF Ada Generation",  # lower bandwidth than the RTX 4000 Ada
        "RTX 3080",
        "NVIDIA RTX A2000",
        "A100X",  # converged card: the provider's memory decides, in its collector
        "Tesla V100S",
        "vGPU-32GB",  # AutoDL's undisclosed virtual GPU
        "AMD 7900XTX",
        "B300 SXM6 262GB",  # a size the B300 is not sold in: not the 288GB card
        "RTX 6000 48GB",  # a Quadro RTX 6000 has 24GB: the name is not that card
        "A800",  # sold with 40 and 80GB: the name does not say which
        "H100 SXM 94GB",  # the table has no 94GB SXM H100
        "Standard_NC40ads_H100_v5",  # instance types are each collector's rules
        "gpu_1x_a100",
        "",
    ],
)
def test_names_the_rules_do_not_know_are_refused_not_guessed(name: str) -> None:
    with pytest.raises(UnknownGpu):
        identify(name)


def test_the_size_a_name_says_is_the_size_read() -> None:
    said = {"H100 80GB": 80, "nvidia-h100-80gb": 80, "V100 32GB": 32, "A800-80GB": 80, "A100-PCIE-80GB": 80,
            "GH200 (144 GB)": 144, "P100 12GB": 12, "A100 80G": 80, "A100 SXM4 40 GiB": 40}  # fmt: skip
    assert {name: identify(name).memory_gb for name in said} == said


def test_stated_memory_picks_the_variant_and_keeps_the_named_form_factor() -> None:
    assert identify("H100 PCIe", 94.0) == identify("H100 NVL")
    assert identify("Tesla V100", 32.0).memory_gb == 32 and identify("Tesla V100", 32.0).form_factor is None
    assert identify("V100 SXM2", 32.0).form_factor == "SXM2"
    assert identify("A800", 80.0).memory_gb == 80  # the provider's size settles what the name leaves open
    odd = identify("RTX 4090", 48.0)  # a modded card: kept as stated, the sanity checks refuse the size
    assert (odd.model, odd.memory_gb, odd.form_factor) == ("RTX4090", 48.0, "PCIe")


def test_every_card_of_the_table_has_a_name_that_reads_as_it() -> None:
    for c in CARDS:
        spec = identify(f"{c.model} {c.memory_gb:g}GB {c.variant or ''}", None)
        assert (spec.model, spec.memory_gb) == (c.model, c.memory_gb), c
