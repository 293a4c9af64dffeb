"""From a query to an answer: resolve the architecture (resolution.py), lay the job out on `gpus` GPUs
(layouts.py), add up the components (formulas.py), and put a band around the sum.

Public entry point: `estimate(query)`. Per-GPU plans for /cheapest are in plan.py, the bytes one
decoding step reads (`decode_step`) in throughput.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pricedb.cards import memory_sizes
from pricedb.settings import DEFAULT_GPU_MEMORY_HEADROOM

from . import formulas as f
from .errors import EstimatorError
from .layouts import Infeasible, Layout, bare_layouts, layout_for
from .memo import kept_in_memo
from .models import Breakdown, Engine, Estimate, EstimateQuery, Precision, Workload
from .resolution import (
    DEFAULT_CONTEXT,
    Resolved,
    check_combinations,
    checkpointing,
    context_for,
    kv_element_bytes,
    resolve,
    weight_bits,
)
from .throughput import REFERENCE_CARD, decode_step

# The card sizes `borderline` speaks of unless the question names cards (`gpu=`): the reference card's,
# from the card table (40 and 80 GiB).
CARD_SIZES_GB = tuple(int(size) for size in memory_sizes(REFERENCE_CARD))
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


# --- band -------------------------------------------------------------------------------------


def _band_floor(query: EstimateQuery) -> tuple[float, float]:
    if not query.workload.training and query.precision is Precision.INT4:
        return BAND_FLOOR_INT4_INFERENCE
    return BAND_FLOOR


def _band_ends(layout: Layout, query: EstimateQuery) -> tuple[float, float]:
    """The band's low and high ends (bytes per GPU) around the layout's total."""
    total = layout.total
    down = up = 0.0
    for name, value in layout.parts.items():
        lo, hi = layout.weight_uncertainty if name == "weights" else _UNCERTAINTY[name]
        down += lo * value
        up += hi * value
    floor_lo, floor_hi = _band_floor(query)
    return total - max(floor_lo * total, down), total + max(floor_hi * total, up)


def _band(layout: Layout, query: EstimateQuery) -> tuple[float, float, str]:
    """`_band_ends` and the assumption that explains them."""
    low, high = _band_ends(layout, query)
    total = layout.total
    floor_lo, floor_hi = _band_floor(query)
    reason = (
        f"Band {low / total:.2f}–{high / total:.2f} × the point estimate: at least −{floor_lo:.0%}/+{floor_hi:.0%} "
        "(ESTIMATOR.md §3), widened to the sum of each component's uncertainty when larger (weights ±3%, "
        "int8 −5/+10%, int4 −5/+15%, KV ±1%, activations −30/+40%, gradients/optimizer −5/+15%, "
        "overhead −50/+100%, training margin −100/+50%)."
    )
    return low, high, reason


def card_sizes(gpu_models: tuple[str, ...]) -> tuple[int, ...]:
    """The sizes (GiB) the named cards are sold in, from the card table; the reference card's when none."""
    if not gpu_models:
        return CARD_SIZES_GB
    return tuple(sorted({round(size) for model in gpu_models for size in memory_sizes(model)}))


def _borderline(low_gb: float, high_gb: float, headroom: float, sizes: tuple[int, ...]) -> list[int]:
    """Card sizes whose fit the band leaves open: the band reaches above the usable part of the card
    (`headroom`, 90% by default) while its low end is still below the card's size."""
    return [size for size in sizes if low_gb < size and high_gb > headroom * size]


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
        if query.engine is Engine.VLLM and (query.given("attention") or query.given("logits")):
            out.append("attention and logits describe transformers (engine=hf); vLLM's kernels keep no score "
                       "matrix and compute the last position's logits: ignored.")  # fmt: skip
    else:
        for name in ("engine", "logits"):
            if query.given(name):
                out.append(f"{name} applies to inference; ignored for training.")
        if query.workload is Workload.FULL_FINETUNE and query.given("lora_rank"):
            out.append("lora_rank applies to lora/qlora; ignored for full_finetune.")
    if r.causal and context > r.max_context:
        out.append(f"context {context} is longer than {r.display_name}'s {r.max_context}-token context.")
    if not r.causal and context > r.max_context:
        out.append(f"context {context} is longer than {r.display_name}'s {r.max_context} positions.")
    return out


def _laid_out(query: EstimateQuery, gpus: int) -> tuple[Resolved, Layout]:
    """The architecture and the per-GPU layout on `gpus` GPUs (EstimatorError on `gpus` when the job
    cannot be split so); the query's own `gpus` is not read."""
    check_combinations(query)
    r = resolve(query)
    try:
        return r, layout_for(query, r, gpus)
    except Infeasible as exc:
        raise EstimatorError("gpus", f"{exc.reason} (gpus={gpus})") from None


def _gib(value: float) -> float:
    return round(value / f.GIB, 2)


@dataclass(frozen=True, slots=True)
class PerGpu:
    """What `estimate(query)` says about one GPU — its band and layout — without the rest of the answer."""

    point_gb: float
    low_gb: float
    high_gb: float
    strategy: str
    shardable: bool
    zero: int | None


# What a memo entry holds (tracemalloc, tests/estimator/test_memo.py), key and its query included, with
# a margin: an estimate 8.4-9.4 KB (its assumptions and facts).
ESTIMATE_BYTES = 10 * 1024


def per_gpu_each(query: EstimateQuery, counts: Iterable[int]) -> dict[int, PerGpu | EstimatorError]:
    """What `estimate(query)` says about one GPU (per_gpu_gb, per_gpu_low_gb, per_gpu_high_gb, strategy,
    shardable, zero) were the job on each of `counts` GPUs — an EstimatorError on `gpus` for a count the
    job cannot be split over — worked out alone: a plan for each GPU count of /cheapest needs nothing
    else. The job is resolved once and its layouts made together (layouts.py `bare_layouts`). Not kept:
    a job's plans are kept with its questions (api.cheapest_estimate)."""
    check_combinations(query)
    r = resolve(query)
    found: dict[int, PerGpu | EstimatorError] = {}
    for n, layout in bare_layouts(query, r, counts).items():
        if isinstance(layout, Infeasible):
            found[n] = EstimatorError("gpus", f"{layout.reason} (gpus={n})")
            continue
        low, high = _band_ends(layout, query)
        found[n] = PerGpu(_gib(layout.total), _gib(low), _gib(high), layout.strategy, layout.shardable, layout.zero)
    return found


def _build(query: EstimateQuery, headroom: float, gpu_models: tuple[str, ...]) -> Estimate:
    n = query.gpus
    r, layout = _laid_out(query, n)
    per_gpu = layout.total
    low, high, band_reason = _band(layout, query)
    context = context_for(query, r)
    cards = _borderline(low / f.GIB, high / f.GIB, headroom, card_sizes(gpu_models))

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
    else:
        if "engine" not in query.model_fields_set:
            defaults.append("engine hf")
        if query.engine is Engine.HF and "attention" not in query.model_fields_set:
            defaults.append(
                "attention flash (FlashAttention/SDPA; eager attention holds its s² scores: attention=eager)"
            )
        if query.engine is Engine.HF and "logits" not in query.model_fields_set:
            defaults.append("logits of the last position (transformers >= 4.45; older ones: logits=all)")
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
    if gpu_models:
        sizes = ", ".join(f"{size}" for size in card_sizes(gpu_models))
        assumptions.append(f"Borderline judged against the sizes {', '.join(gpu_models)} are sold in: {sizes} GiB.")
    if cards:
        assumptions.append(
            "Borderline: the per-GPU band "
            f"{low / f.GIB:.1f}–{high / f.GIB:.1f} GiB straddles "
            + " and ".join(f"the {c} GiB card ({headroom * c:.0f} GiB usable at {headroom:.0%})" for c in cards)
            + ": measure before committing."
        )
    if query.workload.training:
        assumptions.append(
            "Model states are partitioned by ZeRO stage over the data-parallel GPUs (Rajbhandari et al.); "
            "activations are per GPU and not sharded."
        )

    step = None if query.workload.training else decode_step(query, r)
    g = _gib
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
        gradient_checkpointing=checkpointing(query),
        strategy=layout.strategy,
        shardable=layout.shardable,
        borderline_cards_gb=cards,
        kv_bytes_per_token=f.kv_bytes_per_token(r.shape, kv_element_bytes(query)) if r.causal else 0.0,
        bytes_per_token_read=None if step is None else step.bytes_per_token,
        weights_bytes=f.weight_bytes(r.params, r.unquantized_params, weight_bits(query)[0]),
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


@kept_in_memo(ESTIMATE_BYTES)
def _cached_build(
    query: EstimateQuery, fields_set: frozenset[str], headroom: float, gpu_models: tuple[str, ...]
) -> Estimate:
    # fields_set is part of the key: equal queries differ in which defaults were stated explicitly,
    # which changes the warnings and the "Defaults used" line.
    return _build(query, headroom, gpu_models)


def cached_estimate(
    query: EstimateQuery, headroom: float = DEFAULT_GPU_MEMORY_HEADROOM, gpu_models: tuple[str, ...] = ()
) -> Estimate:
    """`estimate(query)` shared from the cache: read it, never change it (plan.py reads only)."""
    return _cached_build(query, frozenset(query.model_fields_set), headroom, tuple(gpu_models))


def estimate(
    query: EstimateQuery, headroom: float = DEFAULT_GPU_MEMORY_HEADROOM, gpu_models: tuple[str, ...] = ()
) -> Estimate:
    """The memory `query` needs, per GPU and in total, with its breakdown, band and assumptions.
    `headroom` is the share of a card a job may use (Settings.gpu_memory_headroom) and `gpu_models`
    the cards the question is about (card table names; none: the reference A100's 40 and 80 GiB),
    which decide `borderline`. Raises EstimatorError (a ValueError naming the parameter) for
    impossible queries."""
    return cached_estimate(query, headroom, gpu_models).model_copy(deep=True)
