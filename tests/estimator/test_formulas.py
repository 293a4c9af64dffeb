"""The estimator's components, each against numbers worked out by hand (bytes unless stated)."""

from __future__ import annotations

import dataclasses

import pytest

from api.estimator import formulas as f
from api.estimator.catalog import lookup

LLAMA2_7B = lookup("llama-2-7b").shape
LLAMA2_70B = lookup("llama-2-70b").shape
KIB = 1024


# --- KV cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "kib"),
    [
        ("llama-2-7b", 512),  # 2 × 32 layers × 32 KV heads × 128 × 2 bytes
        ("llama-2-70b", 320),  # 2 × 80 × 8 (GQA) × 128 × 2
        ("llama-3-8b", 128),  # 2 × 32 × 8 × 128 × 2
        ("qwen2.5-7b", 56),  # 2 × 28 × 4 × 128 × 2
        ("chatglm3-6b", 28),  # 2 × 28 × 2 × 128 × 2
        ("gemma-2-9b", 336),  # head_dim 256 from the config, not hidden/heads = 224
    ],
)
def test_kv_bytes_per_token_fp16(model: str, kib: int) -> None:
    assert f.kv_bytes_per_token(lookup(model).shape) == kib * KIB


def test_kv_cache_uses_kv_heads_not_hidden_size() -> None:
    # gpu_poor's 2·2·h·L ignores GQA: 8× too big for Llama-2-70B.
    hidden_based = 2 * 2 * LLAMA2_70B.hidden * LLAMA2_70B.layers
    assert hidden_based / f.kv_bytes_per_token(LLAMA2_70B) == 8


def test_kv_cache_scales_with_tokens_and_sequences() -> None:
    # 4096 tokens × 512 KiB = exactly 2 GiB per sequence for Llama-2-7B at fp16.
    assert f.kv_cache_bytes(LLAMA2_7B, 4096, 1) == 2 * f.GIB
    assert f.kv_cache_bytes(LLAMA2_7B, 4096, 16) == 32 * f.GIB
    assert f.kv_cache_bytes(LLAMA2_7B, 4096, 1, kv_bytes=4) == 4 * f.GIB


def test_sliding_window_caps_cached_tokens() -> None:
    assert f.cached_tokens(8192, 4096, 1.0) == 4096  # Mistral v0.1: every layer windowed
    assert f.cached_tokens(8192, 4096, 0.5) == 6144  # Gemma-2: half the layers windowed
    assert f.cached_tokens(2048, 4096, 1.0) == 2048
    assert f.cached_tokens(8192, None, 1.0) == 8192


def test_vllm_allocates_whole_16_token_blocks() -> None:
    assert f.vllm_block_tokens(1000) == 1008
    assert f.vllm_block_tokens(4096) == 4096


# --- weights ----------------------------------------------------------------------------------


def test_nf4_double_quant_bits() -> None:
    # QLoRA §3: 4 + 8/64 + 32/(64·256) = 4.127 bits; without double quantization 4.5.
    assert round(f.BITS_NF4_DOUBLE_QUANT, 3) == 4.127
    assert f.BITS_NF4 == 4.5
    assert f.BITS_INT4_GROUP128 == 4 + (16 + 4) / 128  # GPTQ/AWQ g128: fp16 scale + packed 4-bit zero per group


def test_16bit_weights_are_two_bytes_per_param() -> None:
    p = 6_738_415_616
    assert f.weight_bytes(p, f.embedding_params(LLAMA2_7B), 16) == 13_476_831_232
    assert f.weight_bytes(p, f.embedding_params(LLAMA2_7B), 32) == 26_953_662_464


def test_quantized_weights_keep_embeddings_and_head_in_16bit() -> None:
    p, emb = 6_738_415_616, 2 * 32000 * 4096  # untied: embedding + lm_head = 262,144,000
    assert f.embedding_params(LLAMA2_7B) == emb
    # int8: 6,476,271,616 × 1 + 262,144,000 × 2
    assert f.weight_bytes(p, emb, 8) == 6_476_271_616 + 524_288_000
    # GPTQ int4 g128: 6,476,271,616 × 4.25/8 + 524,288,000
    assert f.weight_bytes(p, emb, 4.25) == pytest.approx(3_440_519_296 + 524_288_000)


def test_tied_embeddings_count_once() -> None:
    gemma = lookup("gemma-2-9b").shape
    assert f.embedding_params(gemma) == 256000 * 3584


# --- model states and ZeRO --------------------------------------------------------------------


def test_mixed_precision_adamw_is_16_bytes_per_param() -> None:
    assert sum(f.MIXED_PRECISION_BYTES["adamw"]) == 16  # 2 weights + 2 grads + 12 (fp32 master, m, v)
    assert sum(f.FP32_BYTES["adamw"]) == 16  # 4 + 4 + 8
    assert sum(f.MIXED_PRECISION_BYTES["adamw8bit"]) == 10  # ESTIMATOR.md §2.1: 2 + 2 + 4 + 2
    assert sum(f.MIXED_PRECISION_BYTES["sgd"]) == 12  # fp32 master + momentum
    assert sum(f.ADAPTER_BYTES["adamw"]) == 16


def test_llama2_7b_full_finetune_model_states() -> None:
    # ESTIMATOR.md §2.1: 16 B/param → 107.8 GB (1e9 bytes) for 6.74B parameters.
    states = f.zero_model_states(6_738_415_616, f.MIXED_PRECISION_BYTES["adamw"], stage=0, gpus=1)
    assert states.total / 1e9 == pytest.approx(107.8, abs=0.05)


@pytest.mark.parametrize(("stage", "gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_worked_example(stage: int, gb: float) -> None:
    # Rajbhandari et al. Fig. 1: Ψ = 7.5B, N = 64, K = 12 → 120 / 31.4 / 16.6 / 1.9 GB.
    states = f.zero_model_states(7.5e9, (2, 2, 12), stage=stage, gpus=64)
    assert states.total / 1e9 == pytest.approx(gb, abs=0.05)


def test_zero_stages_partition_in_order() -> None:
    per = (2, 2, 12)
    s1 = f.zero_model_states(1e9, per, 1, 8)
    assert (s1.weights, s1.gradients, s1.optimizer) == (2e9, 2e9, 1.5e9)
    s2 = f.zero_model_states(1e9, per, 2, 8)
    assert (s2.weights, s2.gradients, s2.optimizer) == (2e9, 0.25e9, 1.5e9)
    s3 = f.zero_model_states(1e9, per, 3, 8)
    assert (s3.weights, s3.gradients, s3.optimizer) == (0.25e9, 0.25e9, 1.5e9)


def test_zero_buffers() -> None:
    ll = f.largest_layer_params(LLAMA2_7B)
    assert ll == 202_383_360  # one block (4h² + 3hI + 2h) is bigger than the 131M embedding
    assert f.zero_buffer_bytes(0, 7e9, 7e9, ll) == 0
    assert f.zero_buffer_bytes(2, 7e9, 7e9, ll) == 1e9  # 5e8-element bucket × 2 bytes
    assert f.zero_buffer_bytes(2, 1e6, 7e9, ll) == 2e6  # capped by the trainable size (LoRA)
    assert f.zero_buffer_bytes(3, 7e9, 7e9, ll) == 4 * ll + 2e9  # largest layer + 1e9 live params


# --- LoRA -------------------------------------------------------------------------------------


def test_lora_params_all_linear_layers() -> None:
    # r·Σ(d_in + d_out): q, k, v, o each 4096+4096; gate, up, down each 4096+11008; × 32 layers.
    assert f.lora_params(LLAMA2_7B, 64) == 64 * 32 * (4 * 8192 + 3 * 15104) == 159_907_840  # "160M for 7B"
    # GQA: k and v project to kv_heads × head_dim = 1024 on Llama-2-70B.
    per_layer = 2 * (8192 + 8192) + 2 * (8192 + 1024) + 3 * (8192 + 28672)
    assert f.lora_params(LLAMA2_70B, 16) == 16 * 80 * per_layer


def test_lora_params_count_every_expert() -> None:
    mixtral = lookup("mixtral-8x7b").shape
    dense = dataclasses.replace(mixtral, num_experts=1)
    # 7 extra experts × 3 projections × (4096 + 14336) per layer, rank 8, 32 layers
    assert f.lora_params(mixtral, 8) - f.lora_params(dense, 8) == 8 * 32 * 7 * 3 * (4096 + 14336)


# --- activations ------------------------------------------------------------------------------


def test_activation_coefficient() -> None:
    gpt2 = lookup("gpt-2").shape
    assert f.activation_coefficient(gpt2) == 34  # Korthikanti: 11 + 19 + 4 for a 4h GeLU MLP
    # SwiGLU, I = 11008: 11 + 4 + 2 + 8·11008/4096 = 38.5 (ESTIMATOR.md §2.4: "roughly 36–40")
    assert f.activation_coefficient(LLAMA2_7B) == pytest.approx(38.5)


def test_training_activations_without_checkpointing() -> None:
    # GPT-2 1.5B (48 layers, h 1600) at s = 1024, b = 32, FlashAttention: 34·s·b·h·L = 85.6 GB.
    # (With the 5as/h score term, 34 + 80 = 114 → the 287 GB ESTIMATOR.md §2.4 quotes.)
    shape = f.Shape(
        layers=48,
        hidden=1600,
        heads=25,
        kv_heads=25,
        head_dim=64,
        vocab=50257,
        intermediate=6400,
        mlp="plain",
        arch="gpt2",
    )
    assert f.training_activation_bytes(shape, 1024, 32, checkpointing=False) == 48 * 1024 * 32 * 1600 * 34
    with_scores = 48 * 1024 * 32 * 1600 * (34 + 5 * 25 * 1024 / 1600)
    assert round(with_scores / 1e9) == 287


def test_training_activations_with_full_recomputation() -> None:
    sbh = 4096 * 1 * 4096
    assert f.training_activation_bytes(LLAMA2_7B, 4096, 1, checkpointing=True) == pytest.approx((2 * 32 + 38.5) * sbh)
    assert f.training_activation_bytes(LLAMA2_7B, 4096, 1, checkpointing=True, act_bytes=4) == pytest.approx(
        2 * (2 * 32 + 38.5) * sbh
    )


def test_logits_and_their_gradient_in_fp32() -> None:
    qwen = lookup("qwen2.5-7b").shape
    assert f.logits_bytes(qwen, 8192, 1) == 2 * 8192 * 152064 * 4  # 9.97 GB: big for a 152K vocabulary


def test_prefill_working_set() -> None:
    # The prompt through one block: (2h + 3I) values per token at 2 bytes.
    assert f.prefill_working_bytes(LLAMA2_7B, 4096) == 4096 * (2 * 4096 + 3 * 11008) * 2


def test_moe_mlp_width_is_per_routed_expert() -> None:
    mixtral = lookup("mixtral-8x7b").shape
    assert f.mlp_width_per_token(mixtral) == 2 * 14336
    assert f.expert_params(mixtral) == 32 * 8 * 3 * 4096 * 14336
