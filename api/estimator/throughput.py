"""Inference throughput from memory bandwidth, and what a million tokens costs.

Decoding is memory-bandwidth bound: each step reads the weights once and every sequence's KV cache,
and yields one token per sequence. So one step takes

    step time = max(bytes per step / (bandwidth × efficiency × tensor-parallel GPUs),  layers × t_layer)

and tokens/s = batch / step time. The second term is the floor eager HF `generate` cannot go below
(Python and kernel launches, ~0.6–0.8 ms per layer on A100); vLLM's CUDA graphs remove it. This is an
estimate — a roofline scaled by measured factors — not a benchmark; the answer carries every input.
Each card's own peak bandwidth comes from the card table (pricedb.cards); a card without one is
never guessed (`gpu_bandwidth_gb_s` is None, `decode_throughput` refuses it). The efficiencies were
fitted on A100 and are applied to every card as they are (an assumption the answer states).
`decode_step(query)` gives the bytes per step (and the Estimate's `bytes_per_token_read`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pricedb.cards import card, memory_sizes

from . import formulas as f
from .errors import EstimatorError
from .models import Engine, Estimate, EstimateQuery, Precision
from .resolution import Resolved, context_for, kv_element_bytes, resolve, weight_bits

# The card the efficiency factors below were fitted on, and whose sizes `borderline` names unless the
# question names other cards.
REFERENCE_CARD = "A100"

# Fitted to QwenLM/Qwen README "Inference Performance" (A100-SXM4-80G, batch 1, 2048 generated tokens),
# one pair per weight format because AutoGPTQ's int8 and int4 kernels differ: HF Qwen-1.8B/7B/14B run
# at a per-layer time whatever their size (launch-bound) — bf16 0.75 ms, GPTQ-int8 0.81 ms (0.75–0.85
# measured), GPTQ-int4 0.62 ms (0.59–0.65: AutoGPTQ fuses more); Qwen-72B on 2 GPUs runs at a share of
# the bandwidth roofline — bf16 0.6, int8 0.36, int4 (1 GPU) 0.26; vLLM bf16 Qwen-72B (tensor parallel) 0.62.
EFFICIENCY = {"vllm": 0.6, "hf": 0.6, "hf_int8": 0.36, "hf_int4": 0.26}
HF_SECONDS_PER_LAYER = {"hf": 0.75e-3, "hf_int8": 0.81e-3, "hf_int4": 0.62e-3}


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
    bits, _ = weight_bits(query)
    weights = f.weight_bytes(r.params, r.unquantized_params, bits)
    if shape.num_experts > 1:
        k, e = shape.experts_per_token, shape.num_experts
        coverage = 1 - (1 - k / e) ** query.batch
        weights -= f.expert_params(shape) * bits / 8 * (1 - coverage)
    context = context_for(query, r)
    tokens = f.cached_tokens(context, r.sliding_window, r.window_fraction) if query.engine is Engine.VLLM else context
    kv = f.kv_cache_bytes(shape, tokens, query.batch, kv_element_bytes(query)) if r.causal else 0.0
    return DecodeStep(weights_bytes=weights, kv_bytes=kv, batch=query.batch, context=context, layers=shape.layers)


@dataclass(frozen=True, slots=True)
class Throughput:
    """Estimated decoding throughput and the inputs it came from."""

    tokens_per_s: float  # all sequences together
    tokens_per_s_per_sequence: float
    batch: int
    context: int
    gpu_count: int
    bandwidth_gb_s: float  # peak, per GPU (10^9 bytes/s)
    efficiency: float  # share of peak bandwidth achieved
    effective_bandwidth_gb_s: float  # what a step's bytes are divided by
    weights_bytes_per_step: float
    kv_bytes_per_step: float
    bytes_per_token: float  # bytes read per generated token
    step_seconds: float
    bound: str  # "memory bandwidth" or "per-layer launch overhead"
    parallelism: str
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """The fields in order, as `dataclasses.asdict` gives them (every value here is a number or
        text but `notes`, copied), without its deep copy of each value."""
        values = {name: getattr(self, name) for name in _THROUGHPUT_FIELDS}
        values["notes"] = list(self.notes)
        return values


def gpu_bandwidth_gb_s(
    gpu_memory_gb: float, form_factor: str | None = None, gpu_model: str = REFERENCE_CARD
) -> float | None:
    """Peak memory bandwidth (GB/s) of `gpu_model` with `gpu_memory_gb` and a form factor (`SXM4`, `SXM5`,
    `PCIe`; unknown: the PCIe variant, the slower), from the card table. None when the table has no
    figure for that card (never guessed). The reference card (A100) is also found from a size near one
    it is sold in (halfway: the larger), so an 80 GiB card of unknown form factor reads 1,935 GB/s."""
    size = gpu_memory_gb
    if gpu_model == REFERENCE_CARD:
        size = min(memory_sizes(REFERENCE_CARD), key=lambda sold: (abs(sold - gpu_memory_gb), -sold))
    found = card(gpu_model, size, form_factor)
    return None if found is None else found.bandwidth_gb_s


def decode_throughput(
    estimate_or_query: Estimate | EstimateQuery,
    *,
    gpu_memory_gb: float,
    gpu_count: int = 1,
    form_factor: str | None = None,
    interconnect: str | None = None,
    gpu_model: str = REFERENCE_CARD,
    bandwidth_gb_s: float | None = None,
    efficiency: float | None = None,
) -> Throughput:
    """Decoding tokens/s of an inference query on `gpu_count` cards `gpu_model` of `gpu_memory_gb`,
    at the card's own bandwidth (or `bandwidth_gb_s`). engine=vllm splits each step over the GPUs
    (tensor parallel: bandwidths add up); engine=hf splits layers and runs the GPUs one after another
    (no speed-up). Raises EstimatorError for training and for a card the table has no bandwidth for."""
    query = estimate_or_query.query if isinstance(estimate_or_query, Estimate) else estimate_or_query
    if query.workload.training:
        raise EstimatorError("workload", "throughput is estimated for inference only")
    if gpu_count < 1:
        raise EstimatorError("gpus", f"gpu_count must be at least 1, got {gpu_count}")
    step = decode_step(query)
    bw = bandwidth_gb_s if bandwidth_gb_s is not None else gpu_bandwidth_gb_s(gpu_memory_gb, form_factor, gpu_model)
    if bw is None:
        raise EstimatorError("gpu", f"no memory bandwidth for {gpu_model} {gpu_memory_gb:g}GB in the card table")
    vllm = query.engine is Engine.VLLM
    hf_key = {Precision.INT8: "hf_int8", Precision.INT4: "hf_int4"}.get(query.precision, "hf")
    if efficiency is None:
        efficiency = EFFICIENCY["vllm" if vllm else hf_key]
    parallel = gpu_count if vllm else 1
    effective = bw * efficiency * parallel
    bandwidth_seconds = step.total_bytes / (effective * 1e9)
    hf_per_layer = HF_SECONDS_PER_LAYER[hf_key]
    floor_seconds = 0.0 if vllm else step.layers * hf_per_layer
    step_seconds = max(bandwidth_seconds, floor_seconds)
    bound = "memory bandwidth" if bandwidth_seconds >= floor_seconds else "per-layer launch overhead"
    total = query.batch / step_seconds
    notes = [
        "Estimate, not a benchmark: decoding reads the weights once per step and each sequence's KV cache; "
        f"tokens/s = batch / max(bytes per step / (bandwidth × efficiency), layers × {hf_per_layer * 1e3:.2f} ms "
        "for hf).",
        f"KV cache read at its full length ({step.context} tokens per sequence); prefill time not included.",
        f"Efficiency {efficiency:.2f} of peak bandwidth, fitted to the QwenLM/Qwen README speeds on A100.",
    ]
    if gpu_model != REFERENCE_CARD:
        notes.append(
            f"{gpu_model}: its own peak bandwidth ({bw:,.0f} GB/s, card table) at the efficiency fitted on A100."
        )
    if gpu_count > 1:
        if vllm:
            parallelism = f"tensor parallel over {gpu_count} GPUs"
            if interconnect and interconnect.lower() == "pcie":
                notes.append("PCIe-only machine: tensor-parallel scaling is weaker than over NVLink.")
        else:
            parallelism = f"layers split over {gpu_count} GPUs, run one after another (no speed-up)"
    else:
        parallelism = "1 GPU"
    return Throughput(
        tokens_per_s=total,
        tokens_per_s_per_sequence=total / query.batch,
        batch=query.batch,
        context=step.context,
        gpu_count=gpu_count,
        bandwidth_gb_s=bw,
        efficiency=efficiency,
        effective_bandwidth_gb_s=effective,
        weights_bytes_per_step=step.weights_bytes,
        kv_bytes_per_step=step.kv_bytes,
        bytes_per_token=step.bytes_per_token,
        step_seconds=step_seconds,
        bound=bound,
        parallelism=parallelism,
        notes=notes,
    )


def cny_per_million_tokens(cny_per_hour: float, tokens_per_s: float) -> float:
    """¥ per million generated tokens for an instance costing `cny_per_hour` that decodes
    `tokens_per_s` (all sequences together). inf when it decodes nothing."""
    if tokens_per_s <= 0:
        return float("inf")
    return cny_per_hour / (tokens_per_s * 3600) * 1e6


_THROUGHPUT_FIELDS = tuple(f.name for f in fields(Throughput))
