"""Resolution: the architecture a query describes (catalog entry, closest catalog shape for `params`,
explicit overrides), and the per-query facts every later step reads — context, gradient checkpointing,
weight bits, KV cache element size — plus the combinations refused before any arithmetic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

from . import formulas as f
from .catalog import ModelSpec, closest_by_params, lookup
from .errors import EstimatorError, InvalidCombination
from .memo import kept_in_memo
from .models import EstimateQuery, Precision, Workload

DEFAULT_CONTEXT = 4096


@dataclass(frozen=True, slots=True)
class Resolved:
    """The architecture the estimate uses, and how it was obtained."""

    shape: f.Shape
    params: int
    unquantized_params: int  # kept in 16-bit by quantized formats: embeddings, output head, norms, biases
    causal: bool
    max_context: int
    sliding_window: int | None
    window_fraction: float
    model: str | None
    display_name: str
    facts: dict
    notes: tuple[str, ...]
    warnings: tuple[str, ...] = ()


_ARCH_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate")


class _Architecture(NamedTuple):
    """What `resolve` reads of a query (not its GPU count, batch, context or precision)."""

    model: str | None
    params: int | None
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    vocab: int | None
    intermediate: int | None


def resolve(query: EstimateQuery) -> Resolved:
    """The architecture for a query: the catalog entry (or, with only `params`, the closest catalog
    model's shape) with the query's explicit fields applied. Raises EstimatorError. Worked out once
    per architecture asked (a question by model plans its job on every GPU count; read it, never change it)."""
    return _resolve(_Architecture(query.model, query.params, *(getattr(query, name) for name in _ARCH_FIELDS)))


RESOLVED_BYTES = 2 * 1024  # a memo entry: the architecture, its facts and notes (~1.7-1.9 KB measured)


@kept_in_memo(RESOLVED_BYTES)
def _resolve(query: _Architecture) -> Resolved:
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
    counted = f.count_params(shape)
    # what quantizers leave in 16-bit, as the same share of `params` as of the shape's own count
    unquantized = min(params, round(params * (1 - min(1.0, f.quantized_params(shape) / counted))))
    warnings: list[str] = []
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
        unquantized_params=unquantized,
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


def context_for(query: EstimateQuery, r: Resolved) -> int:
    """Tokens per sequence: the query's, else the model's context capped at DEFAULT_CONTEXT."""
    return query.context if query.context is not None else min(r.max_context, DEFAULT_CONTEXT)


def checkpointing(query: EstimateQuery) -> bool | None:
    """Gradient checkpointing for training (on unless turned off); None for inference."""
    if not query.workload.training:
        return None
    return True if query.gradient_checkpointing is None else query.gradient_checkpointing


def check_combinations(query: EstimateQuery) -> None:
    """Refuse workload/precision pairs that contradict each other (InvalidCombination)."""
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


def weight_bits(query: EstimateQuery) -> tuple[float, str]:
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
    return f.BITS_INT4_GROUP128, "int4 (GPTQ/AWQ, group size 128: 4.16 bits with scales and zero points)"


def kv_element_bytes(query: EstimateQuery) -> int:
    """Bytes per KV cache value (and inference activation): 4 in fp32, else 2 (16-bit compute)."""
    return 4 if query.precision is Precision.FP32 else 2
