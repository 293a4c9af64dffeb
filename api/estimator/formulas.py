"""The estimator's arithmetic: pure functions of architecture facts, in **bytes**.

Every formula here is one line of `docs/estimator.md` and of `shared/reference/ESTIMATOR.md` §3;
`layouts.py` combines them per GPU and `estimate.py` converts to GiB. Nothing here knows about
queries, defaults or the catalog, so each function can be checked by hand.

Notation: P = parameters, h = hidden size, L = layers, I = MLP width (per projection), V = vocab,
s = tokens per sequence, b = sequences (micro-batch), N = data-parallel GPUs, T = tensor-parallel GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GIB = 2**30  # cards are sold in GiB: an "80GB" A100 has 80 GiB

# Bits per weight of the formats the precisions stand for (ESTIMATOR.md §1.5, §3.A).
BITS_NF4_DOUBLE_QUANT = 4 + 8 / 64 + 32 / (64 * 256)  # QLoRA §3: 4.127 bits (QLoRA's base weights)
BITS_NF4 = 4 + 32 / 64  # without double quantization: 4.5 bits
# GPTQ/AWQ int4, group size 128: per group an fp16 scale and a zero point packed in 4 bits (GPTQ's
# per-row g_idx adds 32 bits per input row: under 0.01 bit per weight, left out): 4.156 bits.
BITS_INT4_GROUP128 = 4 + (16 + 4) / 128
BITS_INT8 = 8.0  # LLM.int8 / GPTQ-8: about one byte (outlier overhead is inside the band)

# CUDA context with PyTorch's kernels + cuBLAS workspace + allocator, per GPU: ESTIMATOR.md §3.F budgets
# 1.0 GiB, §1.6 cites 0.5–1.5 GB on A100 and HF's 1,343 MB measured on V100; 1.1 GiB is the value within
# that range that Qwen's single-GPU fine-tuning profile (process-level figures) agrees with.
FIXED_OVERHEAD_BYTES = 1.1 * GIB
CUDA_GRAPHS_BYTES = 1 * GIB  # vLLM captures CUDA graphs (0.5–1.5 GiB, ESTIMATOR.md §3.B)
TRAINING_SAFETY_FACTOR = 1.2  # fragmentation, bucket buffers, temporaries (ESTIMATOR.md §3.G)
ZERO12_BUCKET_ELEMENTS = 5e8  # DeepSpeed allgather/reduce bucket default
ZERO3_MAX_LIVE_PARAMETERS = 1e9  # DeepSpeed stage3_max_live_parameters default
VLLM_BLOCK_TOKENS = 16  # vLLM block_size default: each sequence's cache is allocated in 16-token blocks
VLLM_MAX_BATCHED_TOKENS = 8192  # prefill chunk vLLM processes at once (chunked prefill)
VLLM_MAX_SEQS = 256  # vLLM max_num_seqs default: sequences whose logits are computed in one step


@dataclass(frozen=True, slots=True)
class Shape:
    """The architecture facts the formulas need. `intermediate` is the width of one MLP projection;
    `mlp` is "gated" (SwiGLU/GeGLU: gate, up, down) or "plain" (GeLU: up, down)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    mlp: str = "gated"
    tied_embeddings: bool = False
    qkv_bias: bool = False
    num_experts: int = 1
    experts_per_token: int = 1
    arch: str = "llama"
    max_context: int = 4096

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.mlp == "gated" else 2


# Per-architecture details that change the parameter count but not the memory model: whether every
# linear has a bias, LayerNorm (weight + bias) or RMSNorm (weight), norms per layer, learned positions.
_STYLE = {
    "gpt2": {"linear_bias": True, "norm": 2, "norms_per_layer": 2, "final_norm": True, "positions": True},
    "bert": {"linear_bias": True, "norm": 2, "norms_per_layer": 2, "final_norm": False, "positions": True},
    "falcon": {"linear_bias": False, "norm": 2, "norms_per_layer": 2, "final_norm": True, "positions": False},
    "gemma2": {"linear_bias": False, "norm": 1, "norms_per_layer": 4, "final_norm": True, "positions": False},
}
_DEFAULT_STYLE = {"linear_bias": False, "norm": 1, "norms_per_layer": 2, "final_norm": True, "positions": False}


def embedding_params(shape: Shape) -> int:
    """Input embedding plus an untied output head (quantizers keep both in 16-bit)."""
    return shape.vocab * shape.hidden * (1 if shape.tied_embeddings else 2)


def quantized_params(shape: Shape) -> int:
    """The blocks' linear weight matrices (attention q, k, v, o and the MLP's, every expert's): what
    GPTQ, AWQ and bitsandbytes quantize. Everything else stays 16-bit: embeddings, the output head,
    norms, biases and an MoE's router."""
    h = shape.hidden
    attn = 2 * h * shape.q_dim + 2 * h * shape.kv_dim
    mlp = shape.mlp_matrices * h * shape.intermediate * max(shape.num_experts, 1)
    return shape.layers * (attn + mlp)


def layer_params(shape: Shape) -> int:
    """Parameters of one transformer block (all experts of an MoE block)."""
    style = _STYLE.get(shape.arch, _DEFAULT_STYLE)
    h = shape.hidden
    attn = h * shape.q_dim + 2 * h * shape.kv_dim + shape.q_dim * h
    if shape.qkv_bias or style["linear_bias"]:
        attn += shape.q_dim + 2 * shape.kv_dim
    if style["linear_bias"]:
        attn += h
    mlp = shape.mlp_matrices * h * shape.intermediate
    if style["linear_bias"]:
        mlp += shape.intermediate * (shape.mlp_matrices - 1) + h
    if shape.num_experts > 1:
        mlp = mlp * shape.num_experts + h * shape.num_experts  # experts + router
    norms = style["norms_per_layer"] * style["norm"] * h
    return attn + mlp + norms


def count_params(shape: Shape) -> int:
    """Parameters from the dimensions (embeddings + head + blocks + norms), as models.json computes
    `params_computed`. Within 0.1% of it for every catalog model (tested)."""
    style = _STYLE.get(shape.arch, _DEFAULT_STYLE)
    total = embedding_params(shape) + shape.layers * layer_params(shape)
    if style["final_norm"]:
        total += style["norm"] * shape.hidden
    if style["positions"]:
        total += shape.max_context * shape.hidden
    if shape.arch == "bert":  # token-type embeddings, embedding LayerNorm, pooler
        total += 2 * shape.hidden + 2 * shape.hidden + shape.hidden * shape.hidden + shape.hidden
    return total


def largest_layer_params(shape: Shape) -> int:
    """The biggest single module ZeRO-3 must gather at once: a block, or the embedding matrix."""
    return max(layer_params(shape), shape.vocab * shape.hidden)


# --- A. Weights -------------------------------------------------------------------------------


def weight_bytes(params: int, unquantized: int, bits: float) -> float:
    """`P_q·q + P_16·2`: quantized formats quantize the blocks' linear weights (P_q, `bits` each, their
    scales and zero points included) and keep the rest — embeddings, output head, norms, biases — in
    16-bit (`unquantized`, 2 bytes each); at 16 or 32 bits everything uses the same width."""
    unquantized = min(unquantized, params)
    if bits >= 16:
        return params * bits / 8
    return (params - unquantized) * bits / 8 + unquantized * 2


def expert_params(shape: Shape) -> int:
    """Parameters inside MoE experts (all of them); 0 for dense models."""
    if shape.num_experts <= 1:
        return 0
    return shape.layers * shape.num_experts * shape.mlp_matrices * shape.hidden * shape.intermediate


# --- B. KV cache ------------------------------------------------------------------------------


def kv_bytes_per_token(shape: Shape, kv_bytes: float = 2, kv_heads: int | None = None) -> float:
    """`2 · L · n_kv · d_head · bytes`: K and V for every layer (grouped-query attention: n_kv < heads)."""
    heads = shape.kv_heads if kv_heads is None else kv_heads
    return 2 * shape.layers * heads * shape.head_dim * kv_bytes


def kv_cache_bytes(
    shape: Shape, tokens: int, sequences: int, kv_bytes: float = 2, kv_heads: int | None = None
) -> float:
    """The whole cache: bytes per token × tokens per sequence × sequences."""
    return kv_bytes_per_token(shape, kv_bytes, kv_heads) * tokens * sequences


def cached_tokens(context: int, sliding_window: int | None, window_fraction: float) -> float:
    """Tokens each layer keeps on average: sliding-window layers keep at most `window` tokens."""
    if not sliding_window or context <= sliding_window:
        return float(context)
    return window_fraction * sliding_window + (1 - window_fraction) * context


def vllm_block_tokens(tokens: float) -> int:
    """vLLM allocates each sequence's cache in whole blocks of 16 tokens."""
    return math.ceil(tokens / VLLM_BLOCK_TOKENS) * VLLM_BLOCK_TOKENS


# --- C. Inference transients ------------------------------------------------------------------


def mlp_width_per_token(shape: Shape) -> int:
    """MLP width each token goes through: I, or k·I for an MoE routing each token to k experts."""
    return shape.intermediate * (shape.experts_per_token if shape.num_experts > 1 else 1)


def prefill_working_bytes(shape: Shape, tokens: int, act_bytes: float = 2) -> float:
    """One block's live tensors while a prompt of `tokens` (all sequences) goes through it with
    FlashAttention/SDPA: residual + normed input (2h) and the MLP's gate/up/product (3I; 2I plain)."""
    width = 2 * shape.hidden + (shape.mlp_matrices * mlp_width_per_token(shape))
    return tokens * width * act_bytes


def last_token_logits_bytes(shape: Shape, sequences: int) -> float:
    """fp32 logits of the next token of each sequence (generate computes only the last position)."""
    return sequences * shape.vocab * 4


# Bytes per attention score while eager attention's softmax runs: the 16-bit scores (2), the fp32 copy
# `softmax(..., dtype=float32)` makes of bf16 input (4) and its fp32 result (4).
EAGER_SCORE_BYTES = 10


def eager_attention_bytes(shape: Shape, tokens: int, sequences: int, act_bytes: float = 2) -> float:
    """One layer's eager attention over prompts of `tokens` (each of `sequences`): the scores of every head,
    `b · a · s² · 10` bytes, plus the layer's own tensors — residual and normed input (2h), rotated
    queries and the attention output (2 · a · d)."""
    scores = sequences * shape.heads * tokens * tokens * EAGER_SCORE_BYTES
    return scores + sequences * tokens * (2 * shape.hidden + 2 * shape.q_dim) * act_bytes


def all_positions_logits_bytes(shape: Shape, tokens: int, sequences: int) -> float:
    """fp32 logits of every prompt position, `b · s · V · 4` (transformers before 4.45, a plain forward)."""
    return sequences * tokens * shape.vocab * 4


# --- D. Training model states -----------------------------------------------------------------

# Bytes per trainable parameter: (weights, gradients, optimizer states). Mixed precision keeps 16-bit
# weights and gradients, and an fp32 master copy inside the optimizer states (ZeRO paper: 2 + 2 + 12).
MIXED_PRECISION_BYTES = {"adamw": (2, 2, 12), "adamw8bit": (2, 2, 6), "sgd": (2, 2, 8)}
FP32_BYTES = {"adamw": (4, 4, 8), "adamw8bit": (4, 4, 2), "sgd": (4, 4, 4)}
# LoRA adapters live in fp32 (PEFT upcasts them): weight 4 + grad 4 + optimizer states.
ADAPTER_BYTES = {"adamw": (4, 4, 8), "adamw8bit": (4, 4, 2), "sgd": (4, 4, 4)}


@dataclass(frozen=True, slots=True)
class ModelStates:
    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


def zero_model_states(params: float, per_param: tuple[float, float, float], stage: int, gpus: int) -> ModelStates:
    """Model states per GPU under ZeRO (Rajbhandari et al. §5): stage 1 partitions the optimizer
    states over the `gpus` data-parallel GPUs, stage 2 also the gradients, stage 3 also the weights.
    With (2, 2, 12) this is 16Ψ / 4Ψ+12Ψ/N / 2Ψ+14Ψ/N / 16Ψ/N."""
    w, g, o = per_param
    return ModelStates(
        weights=params * w / (gpus if stage >= 3 else 1),
        gradients=params * g / (gpus if stage >= 2 else 1),
        optimizer=params * o / (gpus if stage >= 1 else 1),
    )


def zero_buffer_bytes(stage: int, trainable: float, total_params: float, largest_layer: float) -> float:
    """Communication buffers ZeRO adds per GPU (ESTIMATOR.md §3.D): stages 1–2 an allgather bucket
    (5e8 elements × 2 bytes, or the trainable size if smaller); stage 3 the gathered largest layer
    (4 bytes per parameter: 16-bit weight + gradient) plus live/prefetched parameters (≤ 1e9 × 2 bytes)."""
    if stage in (1, 2):
        return 2 * min(ZERO12_BUCKET_ELEMENTS, trainable)
    if stage >= 3:
        return 4 * largest_layer + 2 * min(ZERO3_MAX_LIVE_PARAMETERS, total_params)
    return 0.0


def lora_params(shape: Shape, rank: int) -> int:
    """`r · Σ (d_in + d_out)` over every linear layer of every block (q, k, v, o and the MLP's
    projections, each expert's too): PEFT's "all-linear" target, as the QLoRA paper and Qwen's scripts use."""
    h = shape.hidden
    attn = (h + shape.q_dim) + 2 * (h + shape.kv_dim) + (shape.q_dim + h)
    mlp = shape.mlp_matrices * (h + shape.intermediate) * max(shape.num_experts, 1)
    return rank * shape.layers * (attn + mlp)


# --- E. Training activations ------------------------------------------------------------------


def activation_coefficient(shape: Shape) -> float:
    """Bytes per token per hidden unit one block saves for backward, at 16-bit, without the attention
    s² term (FlashAttention/SDPA). Korthikanti et al. Table 2: attention 11 + LayerNorms 4 + MLP 19 = 34
    for a 4h GeLU MLP with dropout; a gated (SwiGLU) MLP of width I saves 2 + 8·I/h instead
    (≈ 38 in total for I ≈ 2.7h, ESTIMATOR.md §2.4). An MoE token goes through k experts."""
    ratio = mlp_width_per_token(shape) / shape.hidden
    mlp = 2 + 8 * ratio if shape.mlp == "gated" else 3 + 4 * ratio
    return 11 + 4 + mlp


def eager_score_coefficient(shape: Shape, tokens: int) -> float:
    """Korthikanti et al.'s attention-score term, `5·a·s/h` bytes per token per hidden unit, for attention
    that materialises the scores (eager: 16-bit scores 2 + softmax 2 + dropout mask 1 per score)."""
    return 5 * shape.heads * tokens / shape.hidden


def training_activation_bytes(
    shape: Shape,
    tokens: int,
    sequences: int,
    checkpointing: bool,
    act_bytes: float = 2,
    logits: float = 0.0,
    eager: bool = False,
) -> float:
    """Activations at their peak on one GPU (micro-batch `sequences` × `tokens`), with `logits` the bytes
    of the loss over the output logits (`logits_bytes`). Without checkpointing every block keeps
    `c·s·b·h` for backward, and the loss comes on top: `L·s·b·h·c + logits`. With full recomputation
    (HF/PEFT `gradient_checkpointing`) only each block's input is kept, `2·s·b·h·L`, and on top of it
    either the loss (end of the forward, start of the backward) or one block being recomputed
    (`c·s·b·h`, later in the backward, once the logits' memory is freed): the larger of the two.
    Eager attention adds its scores to `c` (`eager_score_coefficient`). Scaled for fp32 activations."""
    sbh = tokens * sequences * shape.hidden
    c = activation_coefficient(shape) + (eager_score_coefficient(shape, tokens) if eager else 0.0)
    per_element = act_bytes / 2
    if checkpointing:
        return 2 * shape.layers * sbh * per_element + max(c * sbh * per_element, logits)
    return shape.layers * c * sbh * per_element + logits


# Bytes per output logit while the loss is computed. Under PyTorch autocast (HF Trainer's bf16/fp16
# without DeepSpeed) the 16-bit logits (2) and their shifted copy (2) are cast to fp32 (4) for
# log-softmax, whose fp32 output (4) is saved for backward: 12. A model run in 16-bit by DeepSpeed or
# FSDP (any ZeRO stage) holds the logits and their gradient, as fp32 at most: 2 × 4 = 8.
LOGITS_BYTES_AUTOCAST = 12
LOGITS_BYTES_SHARDED = 8


def logits_bytes(shape: Shape, tokens: int, sequences: int, per_value: float = LOGITS_BYTES_SHARDED) -> float:
    """The loss over the output logits, `b · s · V · per_value` (8: logits and their gradient in fp32;
    12 under autocast): large for 150K–256K vocabularies."""
    return per_value * sequences * tokens * shape.vocab
