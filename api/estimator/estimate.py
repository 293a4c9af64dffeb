"""From a query to an answer: resolve the architecture, lay the job out on `gpus` GPUs, add up the
components (formulas.py), and put a band around the sum.

Public entry points: `estimate(query)`, `per_gpu_plan(query_or_estimate, gpu_count)`,
`per_gpu_need(query_or_estimate, gpu_count)` and `decode_step(query)`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache

from . import formulas as f
from .catalog import ModelSpec, closest_by_params, lookup
from .errors import EstimatorError, InvalidCombination
from .models import Breakdown, Engine, Estimate, EstimateQuery, Precision, Workload

CARD_SIZES_GB = (40, 80)
USABLE_FRACTION = 0.9  # a job should fit 90% of a card (CONTRACT headroom default)
DEFAULT_CONTEXT = 4096
BAND_FLOOR = (0.15, 0.20)  # ESTIMATOR.md §3: low ×0.85, high ×1.2 at least
BAND_FLOOR_INT4_INFERENCE = (0.15, 0.25)  # int4 kernels' dequantization workspaces (ESTIMATOR.md §3)

# Relative uncertainty (down, up) of each component, from ESTIMATOR.md §3 "Uncertainty".
_UNCERTAINTY = {
    "weights": (0.03, 0.03),
    "kv_cache": (0.01, 0.01),
    "activations": (0.30, 0.40),
    "gradients": (0.05, 0.15),  # up: 18 instead of 16 bytes/param when gradients are kept in fp32
    "optimizer": (0.05, 0.15),
    "adapter": (0.05, 0.15),
    "overhead": (0.50, 1.00),  # 0.5–2 GiB
    "margin": (1.00, 0.50),
}
_WEIGHT_UNCERTAINTY = {Precision.INT8: (0.05, 0.10), Precision.INT4: (0.05, 0.15)}
_COMPONENTS = ("weights", "kv_cache", "activations", "gradients", "optimizer", "overhead", "adapter", "margin")


class _Infeasible(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Resolved:
    """The architecture the estimate uses, and how it was obtained."""

    shape: f.Shape
    params: int
    embedding_params: int
    causal: bool
    max_context: int
    sliding_window: int | None
    window_fraction: float
    model: str | None
    display_name: str
    facts: dict
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(slots=True)
class _Layout:
    parts: dict[str, float]  # bytes per GPU
    strategy: str
    shardable: bool
    zero: int | None
    notes: list[str] = field(default_factory=list)
    weight_uncertainty: tuple[float, float] = (0.03, 0.03)

    @property
    def total(self) -> float:
        return sum(self.parts.values())


# --- resolution -------------------------------------------------------------------------------

_ARCH_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate")


def resolve(query: EstimateQuery) -> Resolved:
    """The architecture for a query: the catalog entry (or, with only `params`, the closest catalog
    model's shape) with the query's explicit fields applied. Raises EstimatorError."""
    if query.model is None and query.params is None:
        raise EstimatorError("model", "give model (a catalog name such as llama-2-13b) or params (such as 7B)")
    notes: list[str] = []
    proxy = query.model is None
    spec: ModelSpec = closest_by_params(query.params) if proxy else lookup(query.model)
    overrides = {name: getattr(query, name) for name in _ARCH_FIELDS if getattr(query, name) is not None}
    explicit = sorted(overrides)
    shape = spec.shape
    if overrides:
        if ("hidden" in overrides or "heads" in overrides) and "head_dim" not in overrides:
            heads = overrides.get("heads", shape.heads)
            overrides["head_dim"] = overrides.get("hidden", shape.hidden) // heads
        if "heads" in overrides and "kv_heads" not in overrides:
            kv = min(shape.kv_heads, overrides["heads"])
            overrides["kv_heads"] = kv if overrides["heads"] % kv == 0 else overrides["heads"]
        shape = dataclasses.replace(shape, **overrides)
    if shape.kv_heads > shape.heads:
        raise EstimatorError("kv_heads", f"{shape.kv_heads} KV heads is more than the {shape.heads} attention heads")
    if shape.heads % shape.kv_heads:
        raise EstimatorError("kv_heads", f"{shape.kv_heads} KV heads must divide the {shape.heads} attention heads")
    if query.params is not None:
        params = query.params
    elif overrides:
        params = f.count_params(shape)
    else:
        params = spec.params
    embedding = min(f.embedding_params(shape), params)
    warnings: list[str] = []
    counted = f.count_params(shape)
    if query.params is not None and not 0.8 <= params / counted <= 1.25:
        what = "the architecture given" if overrides else f"the shape of {spec.display_name}"
        warnings.append(
            f"params {params / 1e9:.3g}B disagrees with {what}, which counts {counted / 1e9:.3g}B: "
            "weights use params, KV cache and activations use the shape; give layers/hidden/kv_heads/vocab."
        )

    facts = spec.facts() | {k: getattr(shape, k) for k in _ARCH_FIELDS}
    arch_text = (
        f"{shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads ({shape.kv_heads} KV heads), "
        f"head_dim {shape.head_dim}, vocab {shape.vocab}, MLP {shape.intermediate}"
        + (f", {shape.num_experts} experts ({shape.experts_per_token} per token)" if shape.num_experts > 1 else "")
    )
    if proxy:
        facts = {k: v for k, v in facts.items() if k not in ("name", "hf_id", "source")}
        facts["shape_from"] = spec.name
        facts["source"] = [f"shape of the catalog model closest in size ({spec.display_name})", *spec.source]
        given = f"; given: {', '.join(explicit)}" if explicit else ""
        notes.append(
            f"Only params given: {params / 1e9:.2f}B parameters with the shape of the catalog model closest in size, "
            f"{spec.display_name} ({arch_text}){given}. "
            "Give layers, hidden, kv_heads, head_dim, vocab for an exact KV cache."
        )
    else:
        source = "; ".join(spec.source[:2])
        given = f" with {', '.join(explicit)} overridden" if explicit else ""
        count = "given" if query.params is not None else ("computed from the dimensions" if overrides else "catalog")
        notes.append(
            f"{spec.display_name}{given}: {arch_text}; {params / 1e9:.2f}B parameters ({count}). Source: {source}."
        )
    facts["params"] = params
    facts["overridden"] = explicit
    return Resolved(
        shape=shape,
        params=params,
        embedding_params=embedding,
        causal=spec.causal,
        max_context=spec.max_context,
        sliding_window=spec.sliding_window,
        window_fraction=spec.sliding_window_layer_fraction,
        model=None if proxy else spec.name,
        display_name=spec.display_name if not proxy else f"{params / 1e9:.3g}B model",
        facts=facts,
        notes=tuple(notes),
        warnings=tuple(warnings),
    )


def _context(query: EstimateQuery, r: Resolved) -> int:
    return query.context if query.context is not None else min(r.max_context, DEFAULT_CONTEXT)


def _checkpointing(query: EstimateQuery) -> bool | None:
    if not query.workload.training:
        return None
    return True if query.gradient_checkpointing is None else query.gradient_checkpointing


def _check_combinations(query: EstimateQuery) -> None:
    if query.workload is Workload.QLORA and query.precision is Precision.FP32:
        raise InvalidCombination(
            "precision",
            "qlora keeps the base model in 4-bit and computes in bf16/fp16, so precision=fp32 contradicts it "
            "(use precision=bf16, or workload=lora with precision=fp32)",
        )
    if query.workload is Workload.FULL_FINETUNE and query.precision.quantized:
        raise InvalidCombination(
            "precision",
            f"full_finetune cannot update {query.precision.value} weights; train adapters on a quantized base "
            "with workload=qlora, or use precision=bf16",
        )


def _weight_bits(query: EstimateQuery) -> tuple[float, str]:
    """Bits per (non-embedding) weight and the format's name."""
    p = query.precision
    adapters_on_quantized = query.workload is Workload.QLORA or (query.workload is Workload.LORA and p.quantized)
    if adapters_on_quantized:
        if p is Precision.INT8:
            return f.BITS_INT8, "int8 (bitsandbytes LLM.int8, ~1 byte per weight)"
        return f.BITS_NF4_DOUBLE_QUANT, "NF4 with double quantization (4.127 bits, QLoRA §3)"
    if p is Precision.FP32:
        return 32, "fp32"
    if p in (Precision.BF16, Precision.FP16):
        return 16, p.value
    if p is Precision.INT8:
        return f.BITS_INT8, "int8 (~1 byte per weight: GPTQ-8 / LLM.int8)"
    return f.BITS_INT4_GROUP128, "int4 (GPTQ/AWQ, group size 128: 4.25 bits)"


def _kv_bytes(query: EstimateQuery) -> int:
    return 4 if query.precision is Precision.FP32 else 2


# --- layouts ----------------------------------------------------------------------------------


def _inference_layout(query: EstimateQuery, r: Resolved, n: int) -> _Layout:
    shape = r.shape
    s, b = _context(query, r), query.batch
    bits, fmt = _weight_bits(query)
    weights = f.weight_bytes(r.params, r.embedding_params, bits)
    kv_bytes = _kv_bytes(query)
    notes = [f"Weights in {fmt}" + ("; embeddings and output head kept in 16-bit." if bits < 16 else ".")]
    vllm = query.engine is Engine.VLLM
    if vllm:
        if shape.heads % n:
            raise _Infeasible(
                f"vLLM tensor parallelism needs a GPU count that divides the {shape.heads} attention heads"
            )
        share = 1 / n
        kv_heads = max(1, math.ceil(shape.kv_heads / n))
        strategy = "1 GPU" if n == 1 else f"tensor parallel over {n} GPUs"
    else:
        if n > shape.layers:
            raise _Infeasible(f"cannot split {shape.layers} layers over {n} GPUs")
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
        notes.append(
            f"KV cache: 2 × {shape.layers} layers × {shape.kv_heads} KV heads × {shape.head_dim} × {kv_bytes} bytes "
            f"= {f.kv_bytes_per_token(shape, kv_bytes) / 1024:.0f} KiB per token, × {tokens:g} tokens × {b} sequences"
            + (" (per GPU: KV heads split by tensor parallelism)" if vllm and n > 1 else "")
            + "."
        )
        if vllm and r.sliding_window and s > r.sliding_window:
            notes.append(f"vLLM keeps at most {r.sliding_window} tokens on sliding-window layers.")
    else:
        notes.append("Encoder model: no KV cache; the whole sequence goes through each layer at once.")

    if vllm:
        chunk = min(b * s, f.VLLM_MAX_BATCHED_TOKENS)
        mlp = shape.mlp_matrices * f.mlp_width_per_token(shape) / n
        act = chunk * (2 * shape.hidden + mlp) * kv_bytes + min(b, f.VLLM_MAX_SEQS) * shape.vocab * 4
        parts["activations"] = act
        parts["overhead"] = f.FIXED_OVERHEAD_BYTES + f.CUDA_GRAPHS_BYTES
        notes.append(
            f"engine=vllm: the cache is sized exactly for {b} × {s} tokens; prefill runs in chunks of ≤ "
            f"{f.VLLM_MAX_BATCHED_TOKENS} tokens; CUDA graphs 1 GiB. vLLM itself reserves "
            "gpu_memory_utilization=0.90 of whatever card it runs on (the rest of that becomes extra cache), "
            "so nvidia-smi shows ~90% of the card: this estimate is what that 90% must hold."
        )
    else:
        transient = parts["kv_cache"] + f.prefill_working_bytes(shape, b * s, kv_bytes)
        transient += f.last_token_logits_bytes(shape, b)
        parts["activations"] = transient
        parts["overhead"] = f.FIXED_OVERHEAD_BYTES
        notes.append(
            "engine=hf (transformers generate, FlashAttention/SDPA): transients = one more copy of the KV cache "
            "(the growing cache is re-allocated), the prompt's pass through one layer at once, "
            "last-token logits in fp32."
        )
    notes.append("Fixed overhead 1 GiB per GPU (CUDA context, cuBLAS workspace, allocator).")
    return _Layout(
        parts=parts,
        strategy=strategy,
        shardable=True,
        zero=None,
        notes=notes,
        weight_uncertainty=_WEIGHT_UNCERTAINTY.get(query.precision, (0.03, 0.03)),
    )


def _training_layout(query: EstimateQuery, r: Resolved, n: int, stage: int) -> _Layout:
    shape = r.shape
    s, b = _context(query, r), query.batch
    ckpt = bool(_checkpointing(query))
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
        mode = "fp32" if query.precision is Precision.FP32 else f"{query.precision.value} mixed precision"
        notes.append(
            f"Full fine-tune, {mode}, {opt}: {per_param[0]} + {per_param[1]} + {per_param[2]} = {sum(per_param)} bytes "
            "per parameter for weights, gradients and optimizer states"
            + (" (fp32 master weights + m + v; ZeRO paper)" if opt == "adamw" and per_param[0] == 2 else "")
            + (
                ". Kept in fp32, gradients make it 18 (DeepSpeed's estimator): inside the band."
                if per_param == (2, 2, 12)
                else "."
            )
        )
        weight_unc = (0.03, 0.03)
    else:
        bits, fmt = _weight_bits(query)
        base = f.weight_bytes(r.params, r.embedding_params, bits)
        parts["weights"] = base / (n if sharded else 1)
        trainable = f.lora_params(shape, query.lora_rank)
        per_param = f.ADAPTER_BYTES[opt]
        states = f.zero_model_states(trainable, per_param, stage, n)
        parts["adapter"], parts["gradients"], parts["optimizer"] = states.weights, states.gradients, states.optimizer
        notes.append(
            f"{query.workload.value}: frozen base in {fmt}"
            + ("; embeddings and output head kept in 16-bit" if bits < 16 else "")
            + f". LoRA rank {query.lora_rank} on every linear layer (q, k, v, o, MLP): {trainable / 1e6:.1f}M adapter "
            f"parameters at {sum(per_param)} bytes each (fp32 weight + gradient + {opt} states)."
        )
        weight_unc = _WEIGHT_UNCERTAINTY.get(Precision.INT4 if bits < 8 else query.precision, (0.03, 0.03))
        if query.workload is Workload.LORA and query.precision.quantized:
            notes.append("LoRA over a quantized base is QLoRA: estimated as such.")

    act_bytes = 4 if query.precision is Precision.FP32 else 2
    act = f.training_activation_bytes(shape, s, b, ckpt, act_bytes)
    logits = f.logits_bytes(shape, s, b)
    parts["activations"] = act + logits
    coefficient = f.activation_coefficient(shape)
    if ckpt:
        notes.append(
            f"Activations with gradient checkpointing (full recomputation): 2·s·b·h per layer + one layer's "
            f"{coefficient:.1f}·s·b·h being recomputed, at s={s}, b={b} per GPU, FlashAttention (no s² term)."
        )
    else:
        notes.append(
            f"Activations without checkpointing: {coefficient:.1f}·s·b·h bytes per layer (Korthikanti et al., "
            f"FlashAttention: no s² term), s={s}, b={b} per GPU."
        )
    notes.append(f"Logits and their gradient in fp32: 2·b·s·V·4 = {logits / f.GIB:.2f} GiB.")

    buffers = f.zero_buffer_bytes(stage, trainable, r.params, f.largest_layer_params(shape)) if stage else 0.0
    parts["overhead"] = f.FIXED_OVERHEAD_BYTES + buffers
    subtotal = sum(parts.values())
    parts["margin"] = subtotal * (f.TRAINING_SAFETY_FACTOR - 1)
    notes.append(
        "Fixed overhead 1 GiB per GPU"
        + (f" + ZeRO-{stage} communication buffers {buffers / f.GIB:.2f} GiB" if stage else "")
        + "; training total × 1.2 for fragmentation, bucket buffers and temporaries (ESTIMATOR.md §3.G)."
    )
    if n == 1 and stage == 0:
        strategy, shardable = "1 GPU", True
    elif stage == 0:
        strategy, shardable = f"data parallel (DDP): a full replica on each of {n} GPUs", False
    else:
        what = {
            1: "optimizer states",
            2: "optimizer states and gradients",
            3: "weights, gradients and optimizer states",
        }
        strategy = f"ZeRO-{stage} over {n} GPU{'s' if n > 1 else ''} ({what[stage]} sharded)"
        shardable = True
    return _Layout(
        parts=parts, strategy=strategy, shardable=shardable, zero=stage, notes=notes, weight_uncertainty=weight_unc
    )


def _layout(query: EstimateQuery, r: Resolved, n: int) -> _Layout:
    if not query.workload.training:
        return _inference_layout(query, r, n)
    if query.zero is not None:
        return _training_layout(query, r, n, query.zero)
    if n == 1:
        return _training_layout(query, r, n, 0)
    ddp = _training_layout(query, r, n, 0)
    zero3 = _training_layout(query, r, n, 3)
    chosen = zero3 if zero3.total <= ddp.total else ddp
    chosen.notes.append(
        f"zero not given: on {n} GPUs the smaller of DDP (a replica per GPU, {ddp.total / f.GIB:.1f} GiB) and "
        f"ZeRO-3/FSDP full sharding ({zero3.total / f.GIB:.1f} GiB) per GPU: {chosen.strategy}."
    )
    return chosen


# --- band -------------------------------------------------------------------------------------


def _band(layout: _Layout, query: EstimateQuery) -> tuple[float, float, str]:
    total = layout.total
    down = up = 0.0
    for name, value in layout.parts.items():
        lo, hi = layout.weight_uncertainty if name == "weights" else _UNCERTAINTY[name]
        down += lo * value
        up += hi * value
    floor_lo, floor_hi = BAND_FLOOR
    if not query.workload.training and query.precision is Precision.INT4:
        floor_lo, floor_hi = BAND_FLOOR_INT4_INFERENCE
    low = total - max(floor_lo * total, down)
    high = total + max(floor_hi * total, up)
    reason = (
        f"Band {low / total:.2f}–{high / total:.2f} × the point estimate: at least −{floor_lo:.0%}/+{floor_hi:.0%} "
        "(ESTIMATOR.md §3), widened to the sum of each component's uncertainty when larger (weights ±3%, "
        "int8 −5/+10%, int4 −5/+15%, KV ±1%, activations −30/+40%, gradients/optimizer −5/+15%, "
        "overhead −50/+100%, training margin −100/+50%)."
    )
    return low, high, reason


def _borderline(low_gb: float, high_gb: float) -> list[int]:
    """Card sizes whose fit the band leaves open: the band reaches above the usable 90% of the card
    while its low end is still below the card's size."""
    return [size for size in CARD_SIZES_GB if low_gb < size and high_gb > USABLE_FRACTION * size]


# --- public -----------------------------------------------------------------------------------


def _warnings(query: EstimateQuery, r: Resolved, context: int) -> list[str]:
    out = list(r.warnings)
    training = query.workload.training
    if training and query.zero and query.gpus == 1:
        out.append(
            f"zero={query.zero} with gpus=1 is pointless: ZeRO partitions model states over data-parallel GPUs, "
            "so on one GPU it only adds its buffers (estimated as such)."
        )
    if training and query.zero == 0 and query.gpus > 1:
        out.append(f"zero=0 keeps a full replica on each of the {query.gpus} GPUs: more GPUs do not lower the need.")
    if not training:
        for name in ("zero", "gradient_checkpointing", "optimizer", "lora_rank"):
            if query.given(name):
                out.append(f"{name} applies to training; ignored for inference.")
    else:
        if query.given("engine"):
            out.append("engine applies to inference; ignored for training.")
        if query.workload is Workload.FULL_FINETUNE and query.given("lora_rank"):
            out.append("lora_rank applies to lora/qlora; ignored for full_finetune.")
    if r.causal and context > r.max_context:
        out.append(f"context {context} is longer than {r.display_name}'s {r.max_context}-token context.")
    if not r.causal and context > r.max_context:
        out.append(f"context {context} is longer than {r.display_name}'s {r.max_context} positions.")
    return out


def _build(query: EstimateQuery) -> Estimate:
    _check_combinations(query)
    r = resolve(query)
    n = query.gpus
    try:
        layout = _layout(query, r, n)
    except _Infeasible as exc:
        raise EstimatorError("gpus", f"{exc.reason} (gpus={n})") from None
    per_gpu = layout.total
    low, high, band_reason = _band(layout, query)
    context = _context(query, r)
    cards = _borderline(low / f.GIB, high / f.GIB)

    assumptions = ['Sizes in GiB (2^30 bytes), the unit cards are sold in: an "80GB" A100 holds 80 GiB.']
    assumptions += list(r.notes)
    defaults = []
    if query.context is None:
        defaults.append(f"context {context} tokens (the model's context, at most {DEFAULT_CONTEXT})")
    if "batch" not in query.model_fields_set:
        defaults.append("batch 1")
    if "precision" not in query.model_fields_set:
        defaults.append("precision bf16")
    if query.workload.training:
        if query.gradient_checkpointing is None:
            defaults.append("gradient checkpointing on")
        if "optimizer" not in query.model_fields_set:
            defaults.append("AdamW")
        if query.workload is not Workload.FULL_FINETUNE and "lora_rank" not in query.model_fields_set:
            defaults.append("LoRA rank 64 (QLoRA paper, Qwen's scripts)")
    elif "engine" not in query.model_fields_set:
        defaults.append("engine hf")
    if defaults:
        assumptions.append("Defaults used: " + ", ".join(defaults) + ".")
    if query.workload.training:
        assumptions.append(
            f"batch {query.batch} is the micro-batch of {context}-token sequences on each GPU; "
            f"layout: {layout.strategy}."
        )
    else:
        assumptions.append(
            f"batch {query.batch} = concurrent sequences of {context} tokens; layout: {layout.strategy}."
        )
    assumptions += layout.notes
    assumptions.append(band_reason)
    if cards:
        assumptions.append(
            "Borderline: the per-GPU band "
            f"{low / f.GIB:.1f}–{high / f.GIB:.1f} GiB straddles "
            + " and ".join(f"the {c} GiB card ({USABLE_FRACTION * c:.0f} GiB usable at 90%)" for c in cards)
            + ": measure before committing."
        )
    if query.workload.training:
        assumptions.append(
            "Model states are partitioned by ZeRO stage over the data-parallel GPUs (Rajbhandari et al.); "
            "activations are per GPU and not sharded."
        )

    step = None if query.workload.training else decode_step(query, r)
    gib = f.GIB

    def g(x: float) -> float:
        return round(x / gib, 2)

    parts = layout.parts
    return Estimate(
        total_gb=g(per_gpu * n),
        per_gpu_gb=g(per_gpu),
        low_gb=g(low * n),
        high_gb=g(high * n),
        borderline=bool(cards),
        breakdown=Breakdown(
            weights_gb=g(parts["weights"]),
            kv_cache_gb=g(parts["kv_cache"]),
            activations_gb=g(parts["activations"]),
            gradients_gb=g(parts["gradients"]),
            optimizer_gb=g(parts["optimizer"]),
            overhead_gb=g(parts["overhead"]),
            adapter_gb=g(parts["adapter"]),
            margin_gb=g(parts["margin"]),
        ),
        assumptions=assumptions,
        per_gpu_low_gb=g(low),
        per_gpu_high_gb=g(high),
        model=r.model,
        params=r.params,
        params_b=round(r.params / 1e9, 3),
        trainable_params=_trainable(query, r),
        workload=query.workload,
        precision=query.precision,
        engine=query.engine,
        context=context,
        batch=query.batch,
        gpus=n,
        zero=layout.zero,
        gradient_checkpointing=_checkpointing(query),
        strategy=layout.strategy,
        shardable=layout.shardable,
        borderline_cards_gb=cards,
        kv_bytes_per_token=f.kv_bytes_per_token(r.shape, _kv_bytes(query)) if r.causal else 0.0,
        bytes_per_token_read=None if step is None else step.bytes_per_token,
        weights_bytes=f.weight_bytes(r.params, r.embedding_params, _weight_bits(query)[0]),
        architecture=r.facts,
        warnings=_warnings(query, r, context),
        query=query,
    )


def _trainable(query: EstimateQuery, r: Resolved) -> int:
    if query.workload is Workload.FULL_FINETUNE:
        return r.params
    if query.workload.training:
        return f.lora_params(r.shape, query.lora_rank)
    return 0


@lru_cache(maxsize=4096)
def _cached_build(query: EstimateQuery, fields_set: frozenset[str]) -> Estimate:
    # fields_set is part of the key: equal queries differ in which defaults were stated explicitly,
    # which changes the warnings and the "Defaults used" line.
    return _build(query)


def _cached(query: EstimateQuery) -> Estimate:
    return _cached_build(query, frozenset(query.model_fields_set))


def estimate(query: EstimateQuery) -> Estimate:
    """The memory `query` needs, per GPU and in total, with its breakdown, band and assumptions.
    Raises EstimatorError (a ValueError naming the parameter) for impossible queries."""
    return _cached(query).model_copy(deep=True)


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """What one decoding step of the whole batch reads from GPU memory, in bytes."""

    weights_bytes: float  # weights read once per step (MoE: only the experts the batch is routed to)
    kv_bytes: float  # every sequence's KV cache at its full `context` length
    batch: int
    context: int
    layers: int

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_bytes

    @property
    def bytes_per_token(self) -> float:
        return self.total_bytes / self.batch


def decode_step(query: EstimateQuery, resolved: Resolved | None = None) -> DecodeStep:
    """Bytes one decoding step reads for the whole batch. Weights are read once per step (for an MoE
    only the experts the batch's tokens are routed to: expected coverage 1 − (1 − k/E)^b); each
    sequence reads its whole cache, taken at its full `context` length (conservative: a generation's
    average is shorter)."""
    r = resolved or resolve(query)
    shape = r.shape
    bits, _ = _weight_bits(query)
    weights = f.weight_bytes(r.params, r.embedding_params, bits)
    if shape.num_experts > 1:
        k, e = shape.experts_per_token, shape.num_experts
        coverage = 1 - (1 - k / e) ** query.batch
        weights -= f.expert_params(shape) * bits / 8 * (1 - coverage)
    context = _context(query, r)
    tokens = f.cached_tokens(context, r.sliding_window, r.window_fraction) if query.engine is Engine.VLLM else context
    kv = f.kv_cache_bytes(shape, tokens, query.batch, _kv_bytes(query)) if r.causal else 0.0
    return DecodeStep(weights_bytes=weights, kv_bytes=kv, batch=query.batch, context=context, layers=shape.layers)


# --- per-GPU need for /cheapest ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuPlan:
    """How a job runs on `gpu_count` GPUs and what each GPU must hold (GiB). `need_gb` is the band's
    high end (math.inf when the job cannot run on that many GPUs: `reason` says why)."""

    gpu_count: int
    need_gb: float
    point_gb: float
    low_gb: float
    strategy: str
    shardable: bool
    zero: int | None
    feasible: bool
    reason: str | None = None

    def fits(self, gpu_memory_gb: float, headroom: float = USABLE_FRACTION) -> bool:
        """Viable on cards of `gpu_memory_gb` when the high end fits `headroom` of each card."""
        return self.feasible and self.need_gb <= gpu_memory_gb * headroom


def _query_of(estimate_or_query: Estimate | EstimateQuery) -> EstimateQuery:
    if isinstance(estimate_or_query, Estimate):
        return estimate_or_query.query
    if isinstance(estimate_or_query, EstimateQuery):
        return estimate_or_query
    raise TypeError("per_gpu_need takes an Estimate or an EstimateQuery")


def per_gpu_plan(estimate_or_query: Estimate | EstimateQuery, gpu_count: int) -> GpuPlan:
    """The job of `estimate_or_query` run on `gpu_count` GPUs (the query's own `gpus` is replaced):
    training shards model states by the query's ZeRO stage, or, when `zero` was not given, by the
    smaller of DDP and ZeRO-3; inference splits weights and KV cache (vLLM: tensor parallel; hf: layers).
    Never raises for a valid query: an impossible split gives feasible=False and need_gb=inf."""
    if gpu_count < 1:
        raise EstimatorError("gpus", f"gpu_count must be at least 1, got {gpu_count}")
    query = _query_of(estimate_or_query).model_copy(update={"gpus": gpu_count})
    try:
        est = _cached(query)
    except EstimatorError as exc:
        if exc.param != "gpus":
            raise
        return GpuPlan(gpu_count, math.inf, math.inf, math.inf, "not possible", False, query.zero, False, exc.message)
    return GpuPlan(
        gpu_count=gpu_count,
        need_gb=est.per_gpu_high_gb,
        point_gb=est.per_gpu_gb,
        low_gb=est.per_gpu_low_gb,
        strategy=est.strategy,
        shardable=est.shardable,
        zero=est.zero,
        feasible=True,
    )


def per_gpu_need(estimate_or_query: Estimate | EstimateQuery, gpu_count: int) -> float:
    """GiB each GPU must hold — the per-GPU band's high end — when the job runs on `gpu_count` GPUs;
    math.inf when it cannot run on that many (see `per_gpu_plan`). An option is viable when
    `per_gpu_need(q, option.gpu_count) <= option.gpu_memory_gb * headroom`."""
    return per_gpu_plan(estimate_or_query, gpu_count).need_gb
