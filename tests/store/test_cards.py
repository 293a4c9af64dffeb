"""The card table (pricedb/cards.py) and the names that point into it (pricedb/card_names.py): most
specific match first; an 80GB card is never read as 40GB."""

from __future__ import annotations

import pytest

from api.estimator.estimate import CARD_SIZES_GB
from api.estimator.throughput import REFERENCE_CARD, gpu_bandwidth_gb_s
from pricedb.card_names import _RULES, UnknownGpu, identify
from pricedb.cards import CARDS, MODEL_FACTS, NO_DATASHEET, card, memory_sizes, nearest_known_size


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
        identify("RTX 4090D")


def test_nearest_known_size() -> None:
    assert nearest_known_size("A100", 40960 / 1024) == 40
    assert nearest_known_size("A100", 79.15) == 80
    assert nearest_known_size("A100", 42.5) == 40
    assert nearest_known_size("A100", 60) is None


# --- the card table --------------------------------------------------------------------------


def test_the_table_gives_each_model_the_sizes_and_band_the_checks_use() -> None:
    facts = {model: (sorted(f.memory_sizes_gb), f.usd_per_gpu_hour) for model, f in MODEL_FACTS.items()}
    assert facts["A100"] == ([40.0, 80.0], (0.1, 12.0))  # the A100 checks as before the table grew
    assert {model: facts[model] for model in ("A800", "H100", "H800", "H200", "V100", "P100", "GH200")} == {
        "A800": ([40.0, 80.0], (0.13, 10.0)),
        "H100": ([80.0, 94.0], (0.26, 26.0)),
        "H800": ([80.0], (0.23, 20.0)),
        "H200": ([141.0], (0.4, 28.0)),
        "V100": ([16.0, 32.0], (0.016, 8.0)),
        "P100": ([12.0, 16.0], (0.016, 4.0)),
        "GH200": ([96.0, 144.0], (0.33, 18.0)),
    }
    # The order answers list them in: NVIDIA data centre newest first, workstation and GeForce, AMD, Intel.
    order = list(MODEL_FACTS)
    assert order[:5] == ["B200", "GB200", "B300", "H200", "H100"] and order[-3:] == ["Gaudi3", "Gaudi2", "Gaudi"]
    assert len(order) == 53


def test_a100_figures_are_the_data_sheet_s() -> None:
    """NVIDIA A100 data sheet r4: bandwidth per variant, dense BF16/FP16 tensor 312 TFLOPS."""
    a100 = {(c.memory_gb, c.form_factor): c for c in CARDS if c.model == "A100"}
    assert {key: c.bandwidth_gb_s for key, c in a100.items()} == {
        (40.0, "SXM4"): 1555, (40.0, "PCIe"): 1555, (80.0, "SXM4"): 2039, (80.0, "PCIe"): 1935,
    }  # fmt: skip
    assert {(c.bf16_dense_tflops, c.fp16_dense_tflops) for c in a100.values()} == {(312, 312)}
    assert all("a100-datasheet" in c.datasheet for c in a100.values())


def test_every_card_is_unique_and_cites_its_source() -> None:
    keys = [(c.model, c.memory_gb, c.form_factor, c.interconnect) for c in CARDS]
    assert len(keys) == len(set(keys))
    for c in CARDS:
        assert c.datasheet and c.usd_per_gpu_hour[0] < c.usd_per_gpu_hour[1], c
        # Unknown is None, never a guess: a China-market card without a data sheet states no figures.
        if c.datasheet == NO_DATASHEET:
            assert (c.bandwidth_gb_s, c.bf16_dense_tflops, c.fp16_dense_tflops) == (None, None, None), c


def test_a_card_of_unknown_form_factor_is_the_slower_pcie_variant() -> None:
    assert card("A100", 80.0).form_factor == "PCIe"
    assert card("A100", 80.0, "SXM").form_factor == card("A100", 80.0, "SXM5").form_factor == "SXM4"
    assert card("A100", 60.0) is None and card("RTX 4090", 24.0) is None
    assert memory_sizes("A100") == (40.0, 80.0) and memory_sizes("RTX 4090") == ()


def test_every_name_rule_means_a_card_of_the_table() -> None:
    for _, spec in _RULES:
        assert spec.memory_gb in memory_sizes(spec.model), spec
        if spec.form_factor is not None:
            found = card(spec.model, spec.memory_gb, spec.form_factor)
            assert found is not None and (found.form_factor, found.interconnect) == (
                spec.form_factor,
                spec.interconnect,
            )


def test_the_estimator_reads_the_table() -> None:
    """Borderline sizes and bandwidths are the reference card's (A100) rows, not copies."""
    assert CARD_SIZES_GB == tuple(int(size) for size in memory_sizes(REFERENCE_CARD)) == (40, 80)
    for c in CARDS:
        if c.model == REFERENCE_CARD:
            assert gpu_bandwidth_gb_s(c.memory_gb, c.form_factor) == c.bandwidth_gb_s
    assert gpu_bandwidth_gb_s(60) == 1935 and gpu_bandwidth_gb_s(59.9) == 1555  # nearest size, halfway: larger
