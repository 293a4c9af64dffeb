"""Per-GPU need for /cheapest: the job re-estimated on a given GPU count, as a `GpuPlan`."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pricedb.settings import DEFAULT_GPU_MEMORY_HEADROOM

from .errors import EstimatorError
from .estimate import PerGpu, per_gpu_each
from .models import Estimate, EstimateQuery


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

    def fits(self, gpu_memory_gb: float, headroom: float = DEFAULT_GPU_MEMORY_HEADROOM) -> bool:
        """Viable on cards of `gpu_memory_gb` when the high end fits `headroom` of each card (the caller's
        Settings.gpu_memory_headroom; by default that setting's default)."""
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
    An estimate for that many GPUs already says it. Never raises for a valid query: an impossible
    split gives feasible=False and need_gb=inf."""
    return per_gpu_plans(estimate_or_query, (gpu_count,))[gpu_count]


def per_gpu_plans(estimate_or_query: Estimate | EstimateQuery, gpu_counts: Iterable[int]) -> dict[int, GpuPlan]:
    """`per_gpu_plan` for each of `gpu_counts`, worked out together (estimate.py `per_gpu_each`)."""
    counts = list(gpu_counts)
    for gpu_count in counts:
        if gpu_count < 1:
            raise EstimatorError("gpus", f"gpu_count must be at least 1, got {gpu_count}")
    query = _query_of(estimate_or_query)
    plans = {}
    if isinstance(estimate_or_query, Estimate) and estimate_or_query.gpus in counts:
        plans[estimate_or_query.gpus] = _plan(estimate_or_query.gpus, _per_gpu_of(estimate_or_query))
    for gpu_count, est in per_gpu_each(query, [n for n in counts if n not in plans]).items():
        if isinstance(est, EstimatorError):  # a split the job cannot take
            plans[gpu_count] = GpuPlan(
                gpu_count, math.inf, math.inf, math.inf, "not possible", False, query.zero, False, est.message
            )
        else:
            plans[gpu_count] = _plan(gpu_count, est)
    return plans


def _per_gpu_of(estimate: Estimate) -> PerGpu:
    return PerGpu(
        estimate.per_gpu_gb,
        estimate.per_gpu_low_gb,
        estimate.per_gpu_high_gb,
        estimate.strategy,
        estimate.shardable,
        estimate.zero,
    )


def _plan(gpu_count: int, est: PerGpu) -> GpuPlan:
    return GpuPlan(
        gpu_count=gpu_count,
        need_gb=est.high_gb,
        point_gb=est.point_gb,
        low_gb=est.low_gb,
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
