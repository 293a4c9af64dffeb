"""Each card's own figures in the estimator: decoding speed at the card's bandwidth, training hours from
its dense TFLOPS (api/estimator/compute.py), and nothing guessed for a card the table has no figure for.
Any card pricedb/cards.py holds is covered from its own row (the L40S here: no code names it)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from api.estimator import EstimateQuery, EstimatorError, decode_throughput, gpu_bandwidth_gb_s
from api.estimator.compute import QUANTIZED_BASE_TIME_FACTOR, active_params, training_work
from pricedb.cards import card
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

# Bandwidth-bound: vLLM, Llama-2-70B int4 on one card at batch 32.
BOUND = EstimateQuery(model="llama-2-70b", precision="int4", engine="vllm", batch=32, context=4096)


def test_decoding_speed_follows_each_cards_bandwidth() -> None:
    a100 = decode_throughput(BOUND, gpu_memory_gb=80, form_factor="SXM4")
    h100 = decode_throughput(BOUND, gpu_model="H100", gpu_memory_gb=80, form_factor="SXM5")
    h200 = decode_throughput(BOUND, gpu_model="H200", gpu_memory_gb=141, form_factor="SXM5")
    assert (a100.bandwidth_gb_s, h100.bandwidth_gb_s, h200.bandwidth_gb_s) == (2039, 3350, 4800)
    assert a100.bound == h200.bound == "memory bandwidth"
    assert h100.tokens_per_s / a100.tokens_per_s == pytest.approx(3350 / 2039)
    assert h200.tokens_per_s / a100.tokens_per_s == pytest.approx(4800 / 2039)
    assert "H200: its own peak bandwidth (4,800 GB/s" in h200.notes[-1]
    assert not any("its own peak bandwidth" in n for n in a100.notes)  # the card the efficiency was fitted on


def test_a_card_without_a_bandwidth_is_never_guessed() -> None:
    assert gpu_bandwidth_gb_s(80, "SXM5", gpu_model="H800") is None
    assert gpu_bandwidth_gb_s(10, None, gpu_model="H100") is None  # no such size (a MIG slice is not a card)
    with pytest.raises(EstimatorError) as raised:
        decode_throughput(BOUND, gpu_model="H800", gpu_memory_gb=80, form_factor="SXM5")
    assert raised.value.param == "gpu" and "no memory bandwidth for H800 80GB" in raised.value.message


def test_training_compute_by_workload() -> None:
    full = training_work(EstimateQuery(model="qwen2.5-7b", workload="full_finetune"), 2_000_000_000)
    lora = training_work(EstimateQuery(model="qwen2.5-7b", workload="lora"), 2_000_000_000)
    qlora = training_work(EstimateQuery(model="qwen2.5-7b", workload="qlora"), 2_000_000_000)
    n = 7_615_616_512
    assert full.flops == 6 * n * 2e9 and full.time_factor == 1 and full.compute_dtype == "bf16"
    assert lora.flops == 4 * n * 2e9 and lora.time_factor == 1
    assert qlora.flops == lora.flops and qlora.time_factor == QUANTIZED_BASE_TIME_FACTOR == 1.25
    # hours = FLOPs × q / (TFLOPS × 10^12 × GPUs × MFU) / 3600, by hand for 8 H100 SXM at MFU 0.4
    assert full.hours(989.4, 8, 0.4) == pytest.approx(6 * n * 2e9 / (989.4e12 * 8 * 0.4) / 3600)
    assert qlora.hours(989.4, 1, 0.4) == pytest.approx(1.25 * 4 * n * 2e9 / (989.4e12 * 0.4) / 3600)


def test_precision_picks_the_tensor_figure_and_fp32_has_none() -> None:
    fp16 = training_work(EstimateQuery(model="qwen2.5-7b", workload="lora", precision="fp16"), 1000)
    fp32 = training_work(EstimateQuery(model="qwen2.5-7b", workload="lora", precision="fp32"), 1000)
    int8_base = training_work(EstimateQuery(model="qwen2.5-7b", workload="lora", precision="int8"), 1000)
    assert (fp16.compute_dtype, fp32.compute_dtype, int8_base.compute_dtype) == ("fp16", None, "bf16")
    assert int8_base.time_factor == 1.25  # LoRA over a quantised base is QLoRA


def test_an_moe_token_goes_through_its_routed_experts_only() -> None:
    query = EstimateQuery(model="mixtral-8x7b", workload="lora")
    total = active_params(EstimateQuery(model="llama-2-7b"))
    assert total == 6_738_415_616  # dense: every parameter
    active = active_params(query)
    assert 12.5e9 < active < 13.2e9  # Mixtral: 46.7B held, ~12.9B per token (2 of 8 experts)
    assert training_work(query, 10).flops == 4 * active * 10


def test_inference_is_paced_by_decoding_not_flops() -> None:
    with pytest.raises(ValueError, match="decoding speed"):
        training_work(EstimateQuery(model="qwen2.5-7b"), 1000)


def test_a_card_in_the_table_is_covered_from_its_own_figures(store: PriceStore, settings: Settings) -> None:
    l40s = card("L40S", 48.0, "PCIe")
    assert l40s is not None and l40s.bandwidth_gb_s and l40s.bf16_dense_tflops
    seed_fx(store)
    quote = make_quote(provider="verda", region="global", sku="l40s-box", gpu_model="L40S", gpu_count=1,
                       gpu_memory_gb=48.0, price=1.0, form_factor="PCIe", interconnect="PCIe")  # fmt: skip
    store.record_run(make_run("verda", [quote]))
    with serving(settings, store, NOW + timedelta(minutes=5)) as client:
        infer = client.get("/cheapest?model=llama-3-8b&engine=vllm&batch=32&context=2048&rank_by=per_mtoken").json()
        train = client.get("/cheapest?model=qwen2.5-7b&workload=lora&tokens=1e8").json()
    (option,) = infer["options"]
    assert option["bandwidth_gb_s"] == option["throughput"]["bandwidth_gb_s"] == l40s.bandwidth_gb_s == 864
    (job,) = [o["job"] for o in train["options"]]
    assert job["tflops_per_gpu"] == l40s.bf16_dense_tflops == 362.05
    assert job["hours_needed"] == pytest.approx(4 * 7_615_616_512 * 1e8 / (362.05e12 * 0.4) / 3600, abs=1e-4)
