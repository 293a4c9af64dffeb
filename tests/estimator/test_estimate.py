"""Whole estimates: the answer's shape, hand-computed totals, layouts over GPUs (per_gpu_need),
the band, borderline, vLLM, and the throughput estimate."""

from __future__ import annotations

import json
import math

import pytest

from api.estimator import (
    EstimateQuery,
    EstimatorError,
    cny_per_million_tokens,
    decode_step,
    decode_throughput,
    estimate,
    gpu_bandwidth_gb_s,
    per_gpu_need,
    per_gpu_plan,
    per_gpu_plans,
)
from api.estimator.formulas import GIB
from api.estimator.layouts import Infeasible, bare_layouts, layout_for
from api.estimator.resolution import resolve
from pricedb.settings import DEFAULT_GPU_MEMORY_HEADROOM

CONTRACT_FIELDS = {"total_gb", "per_gpu_gb", "low_gb", "high_gb", "borderline", "breakdown", "assumptions"}
BREAKDOWN_FIELDS = {"weights_gb", "kv_cache_gb", "activations_gb", "gradients_gb", "optimizer_gb", "overhead_gb"}


def q(**kwargs) -> EstimateQuery:
    return EstimateQuery(**kwargs)


# --- the answer -------------------------------------------------------------------------------


@pytest.mark.parametrize("workload", ["inference", "lora", "qlora", "full_finetune"])
def test_answer_has_the_contract_fields_for_every_workload(workload: str) -> None:
    est = estimate(q(model="llama-2-7b", workload=workload))
    body = est.model_dump(mode="json")
    assert set(body) >= CONTRACT_FIELDS
    assert set(body["breakdown"]) >= BREAKDOWN_FIELDS
    assert body["unit"] == "GiB"
    assert any("GiB" in line for line in body["assumptions"])
    json.dumps(body)  # plain JSON: no inf/NaN, no objects
    parts = sum(body["breakdown"].values())
    assert parts == pytest.approx(est.per_gpu_gb, abs=0.05)
    assert est.low_gb <= est.total_gb <= est.high_gb


def test_inference_llama2_7b_by_hand() -> None:
    est = estimate(q(model="llama-2-7b", context=4096))
    b = est.breakdown
    assert b.weights_gb == pytest.approx(13_476_831_232 / GIB, abs=0.01)  # 12.55: 2 bytes × 6.74B
    assert b.kv_cache_gb == 2.0  # 4096 tokens × 512 KiB
    # transients, the larger phase: the decoding step's one more KV copy (2 GiB) with the last-token fp32
    # logits (32000 × 4 bytes), against the prompt through one block's MLP (4096 × (2·4096 + 3·11008) × 2)
    assert 2 * GIB > 4096 * 41216 * 2
    assert b.activations_gb == pytest.approx((2 * GIB + 128_000) / GIB, abs=0.01)
    assert b.overhead_gb == 1.1
    assert b.gradients_gb == b.optimizer_gb == b.margin_gb == 0
    assert est.per_gpu_gb == pytest.approx(12.551 + 2 + 2.0001 + 1.1, abs=0.02)
    assert est.bytes_per_token_read == 13_476_831_232 + 2 * GIB


def test_full_finetune_is_16_bytes_per_param_plus_activations_and_margin() -> None:
    est = estimate(q(model="llama-2-7b", workload="full_finetune", context=2048))
    b = est.breakdown
    p = 6_738_415_616
    assert (b.weights_gb, b.gradients_gb, b.optimizer_gb) == pytest.approx(
        (2 * p / GIB, 2 * p / GIB, 12 * p / GIB), abs=0.01
    )
    raw = b.weights_gb + b.gradients_gb + b.optimizer_gb + b.activations_gb + b.overhead_gb
    assert b.margin_gb == pytest.approx(0.2 * raw, abs=0.02)
    assert est.trainable_params == p


def test_optimizer_choice_changes_the_state_bytes() -> None:
    p = 6_738_415_616
    adamw8 = estimate(q(model="llama-2-7b", workload="full_finetune", optimizer="adamw8bit"))
    sgd = estimate(q(model="llama-2-7b", workload="full_finetune", optimizer="sgd"))
    assert adamw8.breakdown.optimizer_gb == pytest.approx(6 * p / GIB, abs=0.01)
    assert sgd.breakdown.optimizer_gb == pytest.approx(8 * p / GIB, abs=0.01)
    fp32 = estimate(q(model="llama-2-7b", workload="full_finetune", precision="fp32"))
    assert fp32.breakdown.weights_gb == pytest.approx(4 * p / GIB, abs=0.01)
    assert fp32.breakdown.optimizer_gb == pytest.approx(8 * p / GIB, abs=0.01)


def test_lora_and_qlora() -> None:
    lora = estimate(q(model="llama-2-7b", workload="lora"))
    qlora = estimate(q(model="llama-2-7b", workload="qlora"))
    assert lora.trainable_params == qlora.trainable_params == 159_907_840
    # adapters: fp32 weight (4) + gradient (4) + AdamW m, v (8) = 16 bytes each
    assert lora.breakdown.adapter_gb == pytest.approx(159_907_840 * 4 / GIB, abs=0.01)
    assert lora.breakdown.optimizer_gb == pytest.approx(159_907_840 * 8 / GIB, abs=0.01)
    # NF4 + double quantization for the blocks' 6,476,005,376 linear weights; embeddings, head and norms
    # (262,410,240 parameters) in 16-bit
    nf4 = 6_476_005_376 * (4 + 8 / 64 + 32 / 16384) / 8 + 262_410_240 * 2
    assert qlora.breakdown.weights_gb == pytest.approx(nf4 / GIB, abs=0.01)
    assert qlora.total_gb < 0.6 * lora.total_gb
    assert estimate(q(model="llama-2-7b", workload="lora", lora_rank=8)).trainable_params == 159_907_840 // 8


def test_lora_on_a_quantized_base_is_qlora() -> None:
    assert (
        estimate(q(model="llama-2-7b", workload="lora", precision="int4")).breakdown.weights_gb
        == estimate(q(model="llama-2-7b", workload="qlora")).breakdown.weights_gb
    )


def test_checkpointing_shrinks_activations() -> None:
    on = estimate(q(model="llama-2-7b", workload="lora", context=4096, gradient_checkpointing=True))
    off = estimate(q(model="llama-2-7b", workload="lora", context=4096, gradient_checkpointing=False))
    assert off.breakdown.activations_gb > 5 * (on.breakdown.activations_gb - 2 * 4096 * 32000 * 4 / GIB)
    assert on.gradient_checkpointing is True and off.gradient_checkpointing is False


def test_gqa_makes_the_kv_cache_smaller() -> None:
    mha = estimate(q(model="llama-2-7b", context=4096, batch=8))
    gqa = estimate(q(model="llama-2-7b", context=4096, batch=8, kv_heads=8))
    assert mha.breakdown.kv_cache_gb == 4 * gqa.breakdown.kv_cache_gb == 16.0
    assert gqa.kv_bytes_per_token == 128 * 1024
    assert gqa.params < mha.params  # recomputed from the overridden dimensions
    assert gqa.architecture["overridden"] == ["kv_heads"]


def test_defaults_are_stated() -> None:
    est = estimate(q(model="qwen2.5-14b", workload="lora"))
    text = " ".join(est.assumptions)
    assert est.context == 4096 and "context 4096 tokens" in text
    assert "gradient checkpointing on" in text and "LoRA rank 64" in text and "precision bf16" in text
    assert estimate(q(model="gpt2")).context == 1024  # capped at the model's context
    assert estimate(q(model="bert-large")).breakdown.kv_cache_gb == 0  # encoder: no KV cache


def test_params_only_uses_the_closest_catalog_shape() -> None:
    est = estimate(q(params="13B"))
    assert est.architecture["shape_from"] == "llama-2-13b"
    assert est.params == 13_000_000_000
    assert any(line.startswith("Only params given") for line in est.assumptions)
    explicit = estimate(q(params="13B", layers=40, hidden=5120, heads=40, kv_heads=8, vocab=32000))
    assert explicit.kv_bytes_per_token == 2 * 40 * 8 * 128 * 2


def test_warnings_for_ignored_and_surprising_inputs() -> None:
    est = estimate(q(model="llama-2-7b", zero=2, lora_rank=8, context=8192))
    assert any(w.startswith("zero applies to training") for w in est.warnings)
    assert any(w.startswith("lora_rank applies to training") for w in est.warnings)
    assert any("longer than Llama-2-7B's 4096-token context" in w for w in est.warnings)
    assert estimate(q(model="llama-2-7b", workload="lora", engine="vllm")).warnings == [
        "engine applies to inference; ignored for training."
    ]


def test_estimates_are_independent_copies() -> None:
    a = estimate(q(model="llama-2-7b"))
    a.assumptions.append("mutated")
    assert "mutated" not in estimate(q(model="llama-2-7b")).assumptions


# --- band and borderline ----------------------------------------------------------------------


def test_band_is_at_least_minus_15_plus_20_percent() -> None:
    est = estimate(q(model="llama-2-7b", context=256))
    assert est.low_gb == pytest.approx(0.85 * est.total_gb, abs=0.02)
    assert est.high_gb == pytest.approx(1.20 * est.total_gb, abs=0.02)
    int4 = estimate(q(model="llama-2-70b", precision="int4", context=256))
    assert int4.high_gb == pytest.approx(1.25 * int4.total_gb, abs=0.02)  # dequantization workspaces
    small = estimate(q(model="qwen-1.8b", precision="int4", context=256))
    assert small.high_gb > 1.25 * small.total_gb  # the 1 GiB overhead (−50/+100%) dominates a small job


def test_band_widens_when_activations_dominate() -> None:
    est = estimate(q(model="qwen2.5-7b", workload="qlora", context=32768, gradient_checkpointing=False))
    assert est.high_gb > 1.3 * est.total_gb
    assert est.low_gb < 0.8 * est.total_gb


def test_borderline_when_the_band_straddles_a_card() -> None:
    est = estimate(q(model="qwen2.5-14b", workload="lora", context=4096))
    assert est.borderline and est.borderline_cards_gb == [40]
    assert any(line.startswith("Borderline") for line in est.assumptions)
    small = estimate(q(model="gpt2"))
    assert not small.borderline and small.borderline_cards_gb == []


def test_borderline_reads_the_headroom_it_is_given() -> None:
    """The usable share of a card is Settings.gpu_memory_headroom (0.90 by default), passed in."""
    query = q(model="qwen2.5-14b", workload="lora", context=4096)
    default = estimate(query)
    assert estimate(query, headroom=DEFAULT_GPU_MEMORY_HEADROOM) == default
    assert any("(36 GiB usable at 90%)" in line for line in default.assumptions)
    strict = estimate(query, headroom=0.5)
    assert default.borderline_cards_gb == [40] and strict.borderline_cards_gb == [40, 80]  # 40 GiB usable of 80
    assert any("(20 GiB usable at 50%)" in line for line in strict.assumptions)


# --- vLLM -------------------------------------------------------------------------------------


def test_vllm_sizes_the_cache_exactly_and_drops_hf_transients() -> None:
    query = dict(model="llama-2-70b", precision="int4", batch=16, context=4096)
    vllm = estimate(q(**query, engine="vllm"))
    hf = estimate(q(**query))
    b = vllm.breakdown
    # GPTQ int4 g128 (4 + (16 + 4)/128 bits) for the blocks' 68,451,041,280 linear weights; embeddings,
    # head and norms (525,606,912) in 16-bit
    weights = 68_451_041_280 * 4.15625 / 8 + 525_606_912 * 2
    assert b.weights_gb == pytest.approx(weights / GIB, abs=0.01)  # 34.10
    assert b.kv_cache_gb == 20.0  # 327,680 bytes × 4096 × 16
    assert b.overhead_gb == 2.1  # + CUDA graphs
    assert b.activations_gb < 2
    # hf: the larger phase — the cache's second copy while decoding (20 GiB) or the 65,536-token prompt
    # through one block's MLP (65,536 × (2·8192 + 3·28672) × 2 bytes = 12.5 GiB)
    assert hf.breakdown.activations_gb == 20.0
    assert vllm.total_gb < hf.total_gb
    assert any("gpu_memory_utilization=0.90" in line for line in vllm.assumptions)


def test_vllm_block_rounding_and_sliding_window() -> None:
    est = estimate(q(model="llama-2-7b", context=1000, engine="vllm"))
    assert est.breakdown.kv_cache_gb == pytest.approx(1008 * 512 * 1024 / GIB, abs=0.01)
    mistral_vllm = estimate(q(model="mistral-7b", context=16384, engine="vllm"))
    mistral_hf = estimate(q(model="mistral-7b", context=16384))
    assert mistral_vllm.breakdown.kv_cache_gb == 0.5  # 4096-token window × 128 KiB
    assert mistral_hf.breakdown.kv_cache_gb == 2.0  # transformers keeps the whole cache


# --- per-GPU need for /cheapest ---------------------------------------------------------------


def test_per_gpu_need_is_the_band_high_end_on_that_many_gpus() -> None:
    est = estimate(q(model="qwen2.5-14b", workload="lora", context=4096))
    assert per_gpu_need(est, 1) == est.per_gpu_high_gb
    assert per_gpu_need(est.query, 1) == est.per_gpu_high_gb
    plan = per_gpu_plan(est, 8)
    assert plan.feasible and plan.zero == 3 and plan.strategy.startswith("ZeRO-3 over 8 GPUs")
    assert plan.need_gb < per_gpu_need(est, 2) < per_gpu_need(est, 1)
    assert plan.fits(40) and not per_gpu_plan(est, 1).fits(40) and per_gpu_plan(est, 1).fits(80)


PLANNED_JOBS = [
    {"model": "llama-2-7b", "workload": "inference"},
    {"model": "llama-2-70b", "workload": "inference", "precision": "int4", "batch": 16, "context": 8192},
    {"model": "llama-2-13b", "workload": "inference", "engine": "vllm", "batch": 4},
    {"model": "qwen2.5-14b", "workload": "lora", "context": 4096, "batch": 2},
    {"model": "llama-2-7b", "workload": "qlora", "gradient_checkpointing": False},
    {"model": "llama-2-7b", "workload": "full_finetune"},
    {"model": "llama-2-7b", "workload": "full_finetune", "zero": 0},
    {"params": "7B", "workload": "full_finetune", "zero": 2, "optimizer": "sgd"},
    {"model": "gpt2", "workload": "inference", "layers": 3},
    {"model": "llama-2-7b", "workload": "lora", "precision": "int8", "attention": "eager"},
]


@pytest.mark.parametrize("fields", PLANNED_JOBS)
def test_a_layout_without_notes_has_the_same_figures(fields: dict) -> None:
    """Plans lay jobs out without notes (layout_for's `explain=False`): the same parts, strategy and
    sharding as the explained layout, and no notes at all."""
    query = q(**fields)
    r = resolve(query)
    for n in (1, 2, 3, 4, 8, 16):
        try:
            explained = layout_for(query, r, n)
        except Infeasible:
            with pytest.raises(Infeasible):
                layout_for(query, r, n, explain=False)
            continue
        bare = layout_for(query, r, n, explain=False)
        assert explained.notes and not bare.notes
        assert bare.parts == explained.parts
        assert (bare.strategy, bare.shardable, bare.zero, bare.weight_uncertainty) == (
            explained.strategy,
            explained.shardable,
            explained.zero,
            explained.weight_uncertainty,
        )


@pytest.mark.parametrize("fields", PLANNED_JOBS)
def test_plans_made_together_are_each_plan_made_alone(fields: dict) -> None:
    """per_gpu_plans resolves the job once and lays a training job's data-parallel replica out once
    for every GPU count: each of its plans (one that cannot run too) is the one made alone."""
    query = q(**fields)
    counts = (1, 2, 3, 4, 8, 16, 64)
    for job in (query, estimate(query)):
        together = per_gpu_plans(job, counts)
        assert list(together) == list(counts)
        assert together == {n: per_gpu_plan(job, n) for n in reversed(counts)}
    bare = bare_layouts(query, resolve(query), counts)
    for n in counts:
        try:
            alone = layout_for(query, resolve(query), n, explain=False)
        except Infeasible as exc:
            assert isinstance(bare[n], Infeasible) and bare[n].reason == exc.reason
            continue
        assert bare[n] == alone


@pytest.mark.parametrize("fields", PLANNED_JOBS)
def test_a_plan_says_what_the_whole_estimate_on_that_many_gpus_says(fields: dict) -> None:
    """per_gpu_plan works out only the per-GPU figures; they are the full estimate's own, and planned
    from an estimate (for one GPU, or for that many: read from it) they are the same."""
    query = q(**fields)
    for n in (1, 2, 3, 4, 8, 16, 64):
        plan = per_gpu_plan(query, n)
        assert per_gpu_plan(estimate(query), n) == plan
        try:
            whole = estimate(query.model_copy(update={"gpus": n}))
        except EstimatorError as exc:
            assert exc.param == "gpus" and not plan.feasible and plan.reason == exc.message
            continue
        assert plan.feasible
        assert (plan.need_gb, plan.point_gb, plan.low_gb) == (
            whole.per_gpu_high_gb,
            whole.per_gpu_gb,
            whole.per_gpu_low_gb,
        )
        assert (plan.strategy, plan.shardable, plan.zero) == (whole.strategy, whole.shardable, whole.zero)
        assert per_gpu_plan(whole, n) == plan


def test_unset_zero_picks_the_smaller_of_ddp_and_zero3() -> None:
    for model in ("llama-2-7b", "gpt2", "bert-large"):
        auto = q(model=model, workload="full_finetune")
        for n in (2, 4, 8):
            ddp = per_gpu_need(auto.model_copy(update={"zero": 0}), n)
            zero3 = per_gpu_need(auto.model_copy(update={"zero": 3}), n)
            assert per_gpu_need(auto, n) == min(ddp, zero3)


def test_full_finetune_shards_with_zero3() -> None:
    query = q(model="llama-2-7b", workload="full_finetune", zero=3)
    two, eight = per_gpu_plan(query, 2), per_gpu_plan(query, 8)
    assert eight.need_gb < two.need_gb / 2.5
    est8 = estimate(query.model_copy(update={"gpus": 8}))
    p = 6_738_415_616
    assert est8.breakdown.optimizer_gb == pytest.approx(12 * p / 8 / GIB, abs=0.01)
    assert est8.total_gb == pytest.approx(8 * est8.per_gpu_gb, abs=0.05)
    assert est8.low_gb <= est8.total_gb <= est8.high_gb


def test_zero_stages_shard_progressively() -> None:
    needs = [per_gpu_need(q(model="llama-2-7b", workload="full_finetune", zero=z), 8) for z in (0, 1, 2, 3)]
    assert needs == sorted(needs, reverse=True)
    assert len(set(needs)) == 4


def test_ddp_cannot_be_sharded() -> None:
    query = q(model="llama-2-13b", workload="full_finetune", zero=0)
    plan = per_gpu_plan(query, 8)
    assert plan.need_gb == per_gpu_need(query, 1)
    assert not plan.shardable and plan.strategy.startswith("data parallel")
    est = estimate(query.model_copy(update={"gpus": 8}))
    assert any("full replica" in w for w in est.warnings)


def test_inference_splits_weights_and_cache_over_gpus() -> None:
    query = q(model="llama-2-70b", precision="int4", batch=16, context=4096, engine="vllm")
    one, two, four = (per_gpu_plan(query, n) for n in (1, 2, 4))
    assert two.strategy == "tensor parallel over 2 GPUs"
    assert two.need_gb < one.need_gb / 1.7 and four.need_gb < two.need_gb / 1.7
    assert not per_gpu_plan(query, 3).feasible and math.isinf(per_gpu_need(query, 3))
    # The /cheapest example: int4 Llama-2-70B for 16 users fits 2×80 GiB or 4×40 GiB at 90% headroom.
    assert two.fits(80) and four.fits(40) and not one.fits(80)


def test_kv_heads_are_replicated_beyond_their_count() -> None:
    # Llama-2-70B has 8 KV heads: with 16-way tensor parallelism each GPU still holds one.
    est = estimate(q(model="llama-2-70b", context=4096, engine="vllm", gpus=16))
    assert est.breakdown.kv_cache_gb == pytest.approx(1.25 / 8, abs=0.01)


def test_hf_splits_layers() -> None:
    query = q(model="llama-2-70b", precision="int4", batch=16, context=4096)
    plan = per_gpu_plan(query, 2)
    assert plan.strategy.startswith("layers split over 2 GPUs") and plan.feasible
    assert per_gpu_plan(query, 8).fits(40)


def test_per_gpu_need_rejects_nonsense_counts() -> None:
    from api.estimator import EstimatorError

    with pytest.raises(EstimatorError):
        per_gpu_need(q(model="llama-2-7b"), 0)
    with pytest.raises(TypeError):
        per_gpu_need("llama-2-7b", 1)  # type: ignore[arg-type]


# --- throughput -------------------------------------------------------------------------------


def test_bandwidths() -> None:
    assert gpu_bandwidth_gb_s(40, "SXM4") == gpu_bandwidth_gb_s(40, "PCIe") == 1555
    assert gpu_bandwidth_gb_s(80, "SXM4") == 2039
    assert gpu_bandwidth_gb_s(80, "PCIe") == gpu_bandwidth_gb_s(80) == 1935


def test_decode_throughput_by_hand() -> None:
    query = q(model="llama-2-70b", precision="int4", batch=16, context=4096, engine="vllm")
    t = decode_throughput(query, gpu_memory_gb=80, form_factor="SXM4")
    # GPTQ int4 g128 (4 + (16 + 4)/128 bits) for the blocks' 68,451,041,280 linear weights; embeddings,
    # head and norms (525,606,912) in 16-bit
    weights = 68_451_041_280 * 4.15625 / 8 + 525_606_912 * 2
    kv = 327_680 * 4096 * 16
    assert (t.weights_bytes_per_step, t.kv_bytes_per_step) == pytest.approx((weights, kv))
    assert t.tokens_per_s == pytest.approx(16 / ((weights + kv) / (2039e9 * 0.6)))  # ≈ 332 tokens/s
    assert t.bound == "memory bandwidth"
    assert t.bytes_per_token == pytest.approx((weights + kv) / 16)
    assert estimate(query).bytes_per_token_read == pytest.approx(t.bytes_per_token)
    two = decode_throughput(query, gpu_memory_gb=80, form_factor="SXM4", gpu_count=2, interconnect="PCIe")
    assert two.tokens_per_s == pytest.approx(2 * t.tokens_per_s)
    assert any("NVLink" in n for n in two.notes)


def test_hf_decoding_has_a_per_layer_floor_and_no_multi_gpu_speedup() -> None:
    t = decode_throughput(q(model="qwen-7b", context=2048), gpu_memory_gb=80, form_factor="SXM4")
    assert t.bound == "per-layer launch overhead"
    assert t.tokens_per_s == pytest.approx(1 / (32 * 0.75e-3))
    big = q(model="llama-2-70b", context=2048)
    one = decode_throughput(big, gpu_memory_gb=80, gpu_count=1)
    two = decode_throughput(big, gpu_memory_gb=80, gpu_count=2)
    assert two.tokens_per_s == one.tokens_per_s


def test_moe_reads_only_routed_experts_at_batch_1() -> None:
    one = decode_step(q(model="mixtral-8x7b", batch=1, context=1))
    many = decode_step(q(model="mixtral-8x7b", batch=64, context=1))
    assert one.weights_bytes < 0.4 * many.weights_bytes  # 2 of 8 experts vs nearly all
    assert many.weights_bytes == pytest.approx(estimate(q(model="mixtral-8x7b")).weights_bytes, rel=1e-4)


def test_throughput_is_for_inference_only() -> None:
    from api.estimator import EstimatorError

    with pytest.raises(EstimatorError) as info:
        decode_throughput(q(model="llama-2-7b", workload="lora"), gpu_memory_gb=80)
    assert info.value.param == "workload"


def test_cny_per_million_tokens() -> None:
    assert cny_per_million_tokens(36.0, 100.0) == pytest.approx(100.0)  # ¥36/h, 360,000 tokens/h
    assert math.isinf(cny_per_million_tokens(36.0, 0.0))


def test_explicitly_stated_defaults_are_not_confused_with_unset_ones() -> None:
    unset = estimate(q(model="llama-2-7b"))
    stated = estimate(q(model="llama-2-7b", lora_rank=64))  # equal query, but lora_rank given
    assert unset.warnings == []
    assert stated.warnings == ["lora_rank applies to training; ignored for inference."]


def test_params_that_disagree_with_the_shape_are_flagged() -> None:
    est = estimate(q(model="llama-2-7b", params="70B"))
    assert est.params == 70_000_000_000
    assert any("disagrees with the shape of Llama-2-7B" in w for w in est.warnings)
    assert any("shape of Qwen2-72B" in w or "shape of Qwen2.5-72B" in w for w in estimate(q(params="500B")).warnings)
    assert estimate(q(params="7B")).warnings == []
