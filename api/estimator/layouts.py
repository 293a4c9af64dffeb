"""Layouts: how a job sits on `n` GPUs and the bytes each GPU holds per component (formulas.py).
Inference splits weights and KV cache (vLLM: tensor parallel; hf: layers); training shards model
states by ZeRO stage, or, with no stage given, takes the smaller of DDP and ZeRO-3.

A layout's notes explain it in the estimate's assumptions; a per-GPU plan for /cheapest reads only its
figures and strategy, and asks for none (`explain=False`): writing them costs as much as the arithmetic.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import formulas as f
from .models import Attention, Engine, EstimateQuery, Logits, Precision, Workload
from .resolution import Resolved, checkpointing, context_for, kv_element_bytes, weight_bits

# Relative uncertainty (down, up) of quantized weights, from ESTIMATOR.md §3 "Uncertainty"; the band
# (estimate.py) reads it from the layout.
_WEIGHT_UNCERTAINTY = {Precision.INT8: (0.05, 0.10), Precision.INT4: (0.05, 0.15)}
KEPT_16BIT = "embeddings, output head, norms and biases"
_COMPONENTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead", "adapter", "margin")


class Infeasible(Exception):
    """The job cannot be laid out on that many GPUs; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class Layout:
    """One way to run the job on `n` GPUs: the bytes each GPU holds per component, and how."""

    parts: dict[str, float]  # bytes per GPU
    strategy: str
    shardable: bool
    zero: int | None
    notes: list[str] = field(default_factory=list)
    weight_uncertainty: tuple[float, float] = (0.03, 0.03)

    @property
    def total(self) -> float:
        return sum(self.parts.values())


def _inference_layout(query: EstimateQuery, r: Resolved, n: int, explain: bool) -> Layout:
    shape = r.shape
    s, b = context_for(query, r), query.batch
    bits, fmt = weight_bits(query)
    weights = f.weight_bytes(r.params, r.unquantized_params, bits)
    kv_bytes = kv_element_bytes(query)
    notes = [f"Weights in {fmt}" + (f"; {KEPT_16BIT} kept in 16-bit." if bits < 16 else ".")] if explain else []
    vllm = query.engine is Engine.VLLM
    if vllm:
        if shape.heads % n:
            raise Infeasible(
                f"vLLM tensor parallelism needs a GPU count that divides the {shape.heads} attention heads"
            )
        share = 1 / n
        kv_heads = max(1, math.ceil(shape.kv_heads / n))
        strategy = "1 GPU" if n == 1 else f"tensor parallel over {n} GPUs"
    else:
        if n > shape.layers:
            raise Infeasible(f"cannot split {shape.layers} layers over {n} GPUs")
        share = math.ceil(shape.layers / n) / shape.layers
        kv_heads = shape.kv_heads
        strategy = "1 GPU" if n == 1 else f"layers split over {n} GPUs (device_map=auto)"

    parts = dict.fromkeys(_COMPONENTS, 0.0)
    parts["weights"] = weights * share
    if r.causal:
        tokens = f.cached_tokens(s, r.sliding_window, r.window_fraction) if vllm else s
        if vllm:
            tokens = f.vllm_block_tokens(tokens)
        kv = f.kv_cache_bytes(shape, tokens, b, kv_bytes, kv_heads) * (1 if vllm else share)
        parts["kv_cache"] = kv
        if explain:
            notes.append(
                f"KV cache: 2 × {shape.layers} layers × {shape.kv_heads} KV heads × {shape.head_dim} × {kv_bytes} "
                f"bytes = {f.kv_bytes_per_token(shape, kv_bytes) / 1024:.0f} KiB per token, × {tokens:g} tokens × "
                f"{b} sequences" + (" (per GPU: KV heads split by tensor parallelism)" if vllm and n > 1 else "") + "."
            )
        if explain and vllm and r.sliding_window and s > r.sliding_window:
            notes.append(f"vLLM keeps at most {r.sliding_window} tokens on sliding-window layers.")
    elif explain:
        notes.append("Encoder model: no KV cache; the whole sequence goes through each layer at once.")

    if vllm:
        chunk = min(b * s, f.VLLM_MAX_BATCHED_TOKENS)
        mlp = shape.mlp_matrices * f.mlp_width_per_token(shape) / n
        act = chunk * (2 * shape.hidden + mlp) * kv_bytes + min(b, f.VLLM_MAX_SEQS) * shape.vocab * 4
        parts["activations"] = act
        parts["overhead"] = f.FIXED_OVERHEAD_BYTES + f.CUDA_GRAPHS_BYTES
        if explain:
            notes.append(
                f"engine=vllm: the cache is sized exactly for {b} × {s} tokens; prefill runs in chunks of ≤ "
                f"{f.VLLM_MAX_BATCHED_TOKENS} tokens; CUDA graphs 1 GiB. vLLM itself reserves "
                "gpu_memory_utilization=0.90 of whatever card it runs on (the rest of that becomes extra cache), "
                "so nvidia-smi shows ~90% of the card: this estimate is what that 90% must hold."
            )
    else:
        parts["activations"], how = _hf_transients(query, shape, s, b, parts["kv_cache"], kv_bytes)
        parts["overhead"] = f.FIXED_OVERHEAD_BYTES
        if explain:
            notes.append(f"engine=hf (transformers generate): transients, the largest of {how}.")
    if explain:
        notes.append("Fixed overhead 1 GiB per GPU (CUDA context, cuBLAS workspace, allocator).")
    return Layout(
        parts=parts,
        strategy=strategy,
        shardable=True,
        zero=None,
        notes=notes,
        weight_uncertainty=_WEIGHT_UNCERTAINTY.get(query.precision, (0.03, 0.03)),
    )


def _hf_transients(
    query: EstimateQuery, shape: f.Shape, s: int, b: int, kv: float, kv_bytes: float
) -> tuple[float, str]:
    """What transformers `generate` holds beside the weights and the KV cache at its peak, and the phases
    it was the largest of: the first decoding steps (one more copy of the cache: the growing cache is
    re-allocated, and generate still holds the prefill's logits), the prompt going through one layer
    (its MLP; with eager attention also its s² scores), and with logits=all the output layer."""
    eager = query.attention is Attention.EAGER
    every = query.logits is Logits.ALL
    held = f.all_positions_logits_bytes(shape, s, b) if every else f.last_token_logits_bytes(shape, b)
    phases = {
        "the decoding step (one more copy of the KV cache + the prompt's logits held)": kv + held,
        "the prompt's pass through one layer's MLP": f.prefill_working_bytes(shape, b * s, kv_bytes),
    }
    if eager:
        phases["eager attention over the prompt (b·a·s² scores × 10 bytes)"] = f.eager_attention_bytes(
            shape, s, b, kv_bytes
        )
    if every:
        phases["the output layer (16-bit + fp32 logits of every prompt position)"] = held * 1.5
    largest = max(phases.values())
    settings = f"attention={query.attention.value}, logits={query.logits.value}"
    return largest, f"{'; '.join(phases)} ({settings})"


def _training_layout(query: EstimateQuery, r: Resolved, n: int, stage: int, explain: bool) -> Layout:
    shape = r.shape
    s, b = context_for(query, r), query.batch
    ckpt = bool(checkpointing(query))
    opt = query.optimizer.value
    parts = dict.fromkeys(_COMPONENTS, 0.0)
    notes: list[str] = []
    sharded = stage >= 3
    if query.workload is Workload.FULL_FINETUNE:
        trainable = r.params
        table = f.FP32_BYTES if query.precision is Precision.FP32 else f.MIXED_PRECISION_BYTES
        per_param = table[opt]
        states = f.zero_model_states(trainable, per_param, stage, n)
        parts["weights"], parts["gradients"], parts["optimizer"] = states.weights, states.gradients, states.optimizer
        if explain:
            mode = "fp32" if query.precision is Precision.FP32 else f"{query.precision.value} mixed precision"
            notes.append(
                f"Full fine-tune, {mode}, {opt}: {per_param[0]} + {per_param[1]} + {per_param[2]} = {sum(per_param)} "
                "bytes per parameter for weights, gradients and optimizer states"
                + (" (fp32 master weights + m + v; ZeRO paper)" if opt == "adamw" and per_param[0] == 2 else "")
                + (
                    ". Kept in fp32, gradients make it 18 (DeepSpeed's estimator): inside the band."
                    if per_param == (2, 2, 12)
                    else "."
                )
            )
        weight_unc = (0.03, 0.03)
    else:
        bits, fmt = weight_bits(query)
        base = f.weight_bytes(r.params, r.unquantized_params, bits)
        parts["weights"] = base / (n if sharded else 1)
        trainable = f.lora_params(shape, query.lora_rank)
        per_param = f.ADAPTER_BYTES[opt]
        states = f.zero_model_states(trainable, per_param, stage, n)
        parts["adapter"], parts["gradients"], parts["optimizer"] = states.weights, states.gradients, states.optimizer
        if explain:
            notes.append(
                f"{query.workload.value}: frozen base in {fmt}"
                + (f"; {KEPT_16BIT} kept in 16-bit" if bits < 16 else "")
                + f". LoRA rank {query.lora_rank} on every linear layer (q, k, v, o, MLP): {trainable / 1e6:.1f}M "
                f"adapter parameters at {sum(per_param)} bytes each (fp32 weight + gradient + {opt} states)."
            )
        weight_unc = _WEIGHT_UNCERTAINTY.get(Precision.INT4 if bits < 8 else query.precision, (0.03, 0.03))
        if explain and query.workload is Workload.LORA and query.precision.quantized:
            notes.append("LoRA over a quantized base is QLoRA: estimated as such.")

    act_bytes = 4 if query.precision is Precision.FP32 else 2
    autocast = stage == 0 and query.precision is not Precision.FP32
    per_logit = f.LOGITS_BYTES_AUTOCAST if autocast else f.LOGITS_BYTES_SHARDED
    logits = f.logits_bytes(shape, s, b, per_logit)
    eager = query.attention is Attention.EAGER
    parts["activations"] = f.training_activation_bytes(shape, s, b, ckpt, act_bytes, logits, eager)
    if explain:
        coefficient = f.activation_coefficient(shape) + (f.eager_score_coefficient(shape, s) if eager else 0.0)
        attention = "eager attention (its s² scores: 5·a·s/h)" if eager else "FlashAttention/SDPA (no s² term)"
        if ckpt:
            notes.append(
                f"Activations with gradient checkpointing (full recomputation): 2·s·b·h per layer, plus the larger "
                f"of the loss over the logits and one layer's {coefficient:.1f}·s·b·h being recomputed, at s={s}, "
                f"b={b} per GPU, {attention}."
            )
        else:
            notes.append(
                f"Activations without checkpointing: {coefficient:.1f}·s·b·h bytes per layer (Korthikanti et al., "
                f"{attention}), s={s}, b={b} per GPU, plus the loss over the logits."
            )
        how = (
            "16-bit logits, their shifted copy, autocast's fp32 copy and fp32 log-softmax: 12"
            if autocast
            else "logits and their gradient in fp32: 2·4"
        )
        notes.append(f"Loss over the logits: b·s·V × {per_logit} bytes ({how}) = {logits / f.GIB:.2f} GiB.")

    buffers = f.zero_buffer_bytes(stage, trainable, r.params, f.largest_layer_params(shape)) if stage else 0.0
    parts["overhead"] = f.FIXED_OVERHEAD_BYTES + buffers
    subtotal = sum(parts.values())
    parts["margin"] = subtotal * (f.TRAINING_SAFETY_FACTOR - 1)
    if explain:
        notes.append(
            "Fixed overhead 1 GiB per GPU"
            + (f" + ZeRO-{stage} communication buffers {buffers / f.GIB:.2f} GiB" if stage else "")
            + "; training total × 1.2 for fragmentation, bucket buffers and temporaries (ESTIMATOR.md §3.G)."
        )
    if n == 1 and stage == 0:
        strategy, shardable = "1 GPU", True
    elif stage == 0:
        strategy, shardable = _replica_strategy(n), False
    else:
        what = {
            1: "optimizer states",
            2: "optimizer states and gradients",
            3: "weights, gradients and optimizer states",
        }
        strategy = f"ZeRO-{stage} over {n} GPU{'s' if n > 1 else ''} ({what[stage]} sharded)"
        shardable = True
    return Layout(
        parts=parts, strategy=strategy, shardable=shardable, zero=stage, notes=notes, weight_uncertainty=weight_unc
    )


def _replica_strategy(n: int) -> str:
    return f"data parallel (DDP): a full replica on each of {n} GPUs"


def layout_for(query: EstimateQuery, r: Resolved, n: int, explain: bool = True) -> Layout:
    """The layout an estimate uses on `n` GPUs, with its notes unless `explain` is False (then
    `notes` is empty). Raises Infeasible when the job cannot be split so."""
    if not query.workload.training:
        return _inference_layout(query, r, n, explain)
    if query.zero is not None:
        return _training_layout(query, r, n, query.zero, explain)
    if n == 1:
        return _training_layout(query, r, n, 0, explain)
    ddp = _training_layout(query, r, n, 0, explain)
    zero3 = _training_layout(query, r, n, 3, explain)
    chosen = zero3 if zero3.total <= ddp.total else ddp
    if explain:
        chosen.notes.append(
            f"zero not given: on {n} GPUs the smaller of DDP (a replica per GPU, {ddp.total / f.GIB:.1f} GiB) and "
            f"ZeRO-3/FSDP full sharding ({zero3.total / f.GIB:.1f} GiB) per GPU: {chosen.strategy}."
        )
    return chosen


def bare_layouts(query: EstimateQuery, r: Resolved, counts: Iterable[int]) -> dict[int, Layout | Infeasible]:
    """`layout_for(query, r, n, explain=False)` for each of `counts` (or why it cannot be), made together:
    with no ZeRO stage given, training compares each count's ZeRO-3 layout with data parallelism, whose
    full replica on each GPU holds the same on any count (no ZeRO stage shards anything, ZeRO adds no
    buffer): it is laid out once, and only its strategy names the count."""
    if not query.workload.training or query.zero is not None:
        found: dict[int, Layout | Infeasible] = {}
        for n in counts:
            try:
                found[n] = layout_for(query, r, n, explain=False)
            except Infeasible as exc:
                found[n] = exc
        return found
    replica = _training_layout(query, r, 1, 0, False)
    replica_total = replica.total
    laid_out: dict[int, Layout | Infeasible] = {}
    for n in counts:
        if n == 1:
            laid_out[n] = replica
            continue
        zero3 = _training_layout(query, r, n, 3, False)
        laid_out[n] = (
            zero3
            if zero3.total <= replica_total
            else dataclasses.replace(replica, strategy=_replica_strategy(n), shardable=False)
        )
    return laid_out
