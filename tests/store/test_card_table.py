"""The card table as a whole (pricedb/cards.py): each card's figures are its document's or None,
never another card's assumed; names for the exporters; bands that hold each model's variants."""

from __future__ import annotations

import pytest

from pricedb.cards import CARDS, MODEL_FACTS, NO_DATASHEET, card, cards_of, model_named

FIGURES = ("bandwidth_gb_s", "bf16_dense_tflops", "fp16_dense_tflops", "fp32_tflops")


def test_every_card_has_a_document_a_verification_and_figures_or_none() -> None:
    for c in CARDS:
        assert c.datasheet.startswith("https://") or c.datasheet == NO_DATASHEET, c
        assert c.verification in ("stored_copy", "partial", "recalled", "unconfirmed"), c
        assert c.memory_gb > 0 and c.vendor in ("NVIDIA", "AMD", "Intel"), c
        for figure in FIGURES:
            value = getattr(c, figure)
            assert value is None or (isinstance(value, float) and value > 0), (c.model, figure, value)
        # Dense, never the vendor's sparse headline: nothing rented today does 2.6 dense PFLOPS.
        assert c.bf16_dense_tflops is None or c.bf16_dense_tflops <= 2500, c


def test_every_model_named_in_the_issue_is_in_the_table() -> None:
    wanted = {"B200", "H200", "H100", "H800", "H20", "GH200", "A100", "A800", "L40S", "L40", "L20", "L4", "A40",
              "A10", "A10G", "A16", "A6000", "RTX6000Ada", "RTX5090", "RTX4090", "RTX3090", "V100", "T4", "P100",
              "MI300X", "MI250", "MI250X"}  # fmt: skip
    assert wanted <= set(MODEL_FACTS)
    assert {(c.form_factor, c.variant) for c in cards_of("H100")} == {("SXM5", None), ("PCIe", None), ("PCIe", "NVL")}
    assert sorted(c.memory_gb for c in cards_of("V100")) == [16, 16, 32, 32]
    a100 = {(c.memory_gb, c.form_factor) for c in cards_of("A100")}
    assert a100 == {(40, "SXM4"), (40, "PCIe"), (80, "SXM4"), (80, "PCIe")}


def test_figures_no_document_states_are_none_not_another_card_s() -> None:
    """H800 = H100, GH200 compute = H100 SXM, T4G = T4, A800 bandwidth = A100: assumptions, so None."""
    for c in cards_of("H800"):
        assert all(getattr(c, f) is None for f in FIGURES) and c.datasheet == NO_DATASHEET
    for c in cards_of("GH200") + cards_of("T4G") + cards_of("B300"):
        assert (c.bf16_dense_tflops, c.fp16_dense_tflops, c.fp32_tflops) == (None, None, None), c
    assert all(c.bandwidth_gb_s is None for c in cards_of("A800") + cards_of("T4G") + cards_of("B300"))
    assert {c.bf16_dense_tflops for c in cards_of("A800")} == {312.0}  # NVIDIA's listing: A100 compute


@pytest.mark.parametrize("model", ["V100", "T4", "P100", "RTX6000", "MI25", "P40", "P4", "K80", "M60"])
def test_cards_before_ampere_have_no_bf16(model: str) -> None:
    assert all(c.bf16_dense_tflops is None for c in cards_of(model))


def test_data_sheet_figures_of_the_cards_most_rented() -> None:
    figures = {(c.model, c.memory_gb, c.form_factor): (c.bandwidth_gb_s, c.bf16_dense_tflops) for c in CARDS}
    assert figures[("H100", 80, "SXM5")] == (3350, 989.4)  # whitepaper Table 1, dense
    assert figures[("H100", 94, "PCIe")] == (3938, 835.5)  # NVL brief: 1,671 sparse
    assert figures[("H200", 141, "SXM5")] == (4800, 989.5)
    assert figures[("L40S", 48, "PCIe")] == (864, 362.05)
    assert figures[("RTX4090", 24, "PCIe")] == (1008, 165.2)  # FP32 accumulate, not the 330 FP16-accumulate rate
    assert figures[("MI300X", 192, "OAM")] == (5300, 1307.4)


def test_every_variant_carries_its_model_s_band_and_the_band_is_wide() -> None:
    for c in CARDS:
        low, high = c.usd_per_gpu_hour
        assert MODEL_FACTS[c.model].usd_per_gpu_hour == (low, high)
        assert 0 < low < high and high >= 10 * low, c  # a judgement that refuses only the impossible


def test_each_card_is_one_row() -> None:
    keys = [(c.model, c.memory_gb, c.form_factor, c.variant) for c in CARDS]
    assert len(keys) == len(set(keys))


def test_the_exporters_names() -> None:
    names = {(c.model, c.memory_gb, c.form_factor): (c.skypilot_name, c.gpuhunt_name) for c in CARDS}
    assert names[("A100", 40, "SXM4")] == ("A100", "A100")
    assert names[("A100", 80, "PCIe")] == ("A100-80GB", "A100")
    assert names[("H100", 94, "PCIe")] == ("H100-NVL", "H100NVL")
    assert names[("RTX6000Ada", 48, "PCIe")] == ("RTX6000-Ada", "RTX6000Ada")
    assert names[("RTX6000", 24, "PCIe")] == ("RTX6000", "RTX6000")  # the Turing Quadro
    assert names[("A6000", 48, "PCIe")] == ("A6000", "A6000")
    assert names[("V100", 32, "SXM2")] == ("V100-32GB", "V100")
    assert names[("H800", 80, "SXM5")] == (None, None)  # neither tool knows it


def test_mig_slices_as_nvidia_s_guide_lists_them() -> None:
    assert {c.model: c.mig_instances for c in CARDS if c.mig_instances} == {
        "B200": 7, "GB200": 7, "H200": 7, "H100": 7, "H20": 7, "GH200": 7, "A100": 7, "A30": 4, "RTXPRO6000": 4,
    }  # fmt: skip
    assert card("GH200", 144) is not None and card("GH200", 144).mig_instances is None  # the guide lists 96GB only


def test_model_names_in_any_case() -> None:
    assert model_named("rtx4090") == "RTX4090" and model_named(" h100 ") == "H100" and model_named("RTX 4090") is None
