"""The GPU table: most specific match first; an 80GB card is never read as 40GB."""

from __future__ import annotations

import pytest

from pricedb.gpus import UnknownGpu, identify, nearest_known_size


@pytest.mark.parametrize(
    ("name", "memory", "form_factor"),
    [
        ("p4de.24xlarge", 80, "SXM4"),
        ("p4d.24xlarge", 40, "SXM4"),
        ("Standard_NC24ads_A100_v4", 80, "PCIe"),
        ("Standard_NC96ads_A100_v4", 80, "PCIe"),
        ("Standard_ND96asr_v4", 40, "SXM4"),
        ("Standard_ND96amsr_A100_v4", 80, "SXM4"),
        ("a2-highgpu-8g", 40, "SXM4"),
        ("a2-megagpu-16g", 40, "SXM4"),
        ("a2-ultragpu-1g", 80, "SXM4"),
        ("BM.GPU4.8", 40, "SXM4"),
        ("BM.GPU.A100-v2.8", 80, "SXM4"),
        ("NVIDIA A100-SXM4-80GB", 80, "SXM4"),
        ("A100-SXM4-40GB", 40, "SXM4"),
        ("NVIDIA A100 80GB PCIe", 80, "PCIe"),
        ("A100 PCIE", 40, "PCIe"),
        ("A100 SXM4", 40, "SXM4"),
        ("1x A100 (40 GB SXM4)", 40, "SXM4"),
        ("8x A100 (80 GB SXM4)", 80, "SXM4"),
        ("nvidia-a100-80gb", 80, None),
        ("nvidia-tesla-a100", 40, None),
        ("Nvidia Tesla A100 80GB GPU running in Americas", 80, None),
        ("1x A100 SXM4 80GB", 80, "SXM4"),
        ("A100", 40, None),
    ],
)
def test_names(name: str, memory: int, form_factor: str | None) -> None:
    spec = identify(name)
    assert spec.model == "A100"
    assert spec.memory_gb == memory
    assert spec.form_factor == form_factor


def test_80gb_never_read_as_40gb() -> None:
    for name in ["A100 80G", "a100-80g", "A100_80GB", "A100 SXM 80GB", "A100 PCIe 80 GB", "NVIDIA A100 80GB"]:
        assert identify(name).memory_gb == 80, name


def test_stated_memory_wins() -> None:
    assert identify("A100 PCIE", memory_gb=80.0).memory_gb == 80.0


def test_unknown() -> None:
    with pytest.raises(UnknownGpu):
        identify("RTX 4090")


def test_nearest_known_size() -> None:
    assert nearest_known_size("A100", 40960 / 1024) == 40
    assert nearest_known_size("A100", 79.15) == 80
    assert nearest_known_size("A100", 42.5) == 40
    assert nearest_known_size("A100", 60) is None
