"""GPU memory estimator: "fine-tune Qwen2.5-14B with LoRA at 4k context" → GiB per GPU.

Pure library (no HTTP, no database). See docs/estimator.md.

    from api.estimator import EstimateQuery, estimate, per_gpu_need
    est = estimate(EstimateQuery(model="qwen2.5-14b", workload="lora", context=4096))
    per_gpu_need(est, 2)  # GiB each GPU must hold on a 2-GPU machine (band's high end)
"""

from .catalog import ModelSpec, all_models, closest_by_params, lookup, suggest
from .errors import EstimatorError, InvalidCombination, UnknownModel, error_details
from .estimate import estimate
from .models import (
    Attention,
    Breakdown,
    Engine,
    Estimate,
    EstimateQuery,
    Logits,
    Optimizer,
    Precision,
    Workload,
    parse_params,
)
from .plan import GpuPlan, per_gpu_need, per_gpu_plan, per_gpu_plans
from .resolution import resolve
from .throughput import (
    DecodeStep,
    Throughput,
    cny_per_million_tokens,
    decode_step,
    decode_throughput,
    gpu_bandwidth_gb_s,
)

__all__ = [
    "Attention",
    "Breakdown",
    "DecodeStep",
    "Engine",
    "Estimate",
    "EstimateQuery",
    "EstimatorError",
    "GpuPlan",
    "InvalidCombination",
    "Logits",
    "ModelSpec",
    "Optimizer",
    "Precision",
    "Throughput",
    "UnknownModel",
    "Workload",
    "all_models",
    "closest_by_params",
    "cny_per_million_tokens",
    "decode_step",
    "decode_throughput",
    "error_details",
    "estimate",
    "gpu_bandwidth_gb_s",
    "lookup",
    "parse_params",
    "per_gpu_need",
    "per_gpu_plan",
    "per_gpu_plans",
    "resolve",
    "suggest",
]
