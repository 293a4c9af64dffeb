"""The compute a training job needs: how many FLOPs `tokens` training tokens cost, for the cost of a
whole job (/cheapest with `tokens=`, docs/estimator.md "The cost of the whole job").

    FLOPs = k · N · tokens,   hours on a machine = FLOPs × q / (dense TFLOPS × 10^12 × GPUs × MFU) / 3600

- N: the parameters each token goes through (an MoE's routed experts only: N − experts × (1 − k/E)).
- k = 6 for full fine-tuning: forward 2N (one multiply-add per weight), backward 4N (the gradients of
  the activations and of the weights, 2N each; Kaplan et al. 2020 §2.1, "C ≈ 6N" per token).
- k = 4 for LoRA and QLoRA: the frozen base needs no weight gradients, so the backward is the
  activations' 2N (the adapters' own FLOPs are under 1% at rank 64). Hu et al. (LoRA, arXiv:2106.09685
  §4.2) measured 25% faster training than full fine-tuning on GPT-3 175B, which 6N → 4N (−33%) bounds.
- q = 1.25 for a quantised base (QLoRA, or LoRA over int8/int4): its weights are dequantised for
  every matrix product of every pass. The QwenLM/Qwen README's profile (one A100-SXM4-80G, the same data and
  batch) took Q-LoRA 1.25× LoRA's time per step for Qwen-7B at 1,024 tokens — 2.5× at 256 tokens
  and 1.05× at 8,192, where longer sequences amortise the dequantisation; 1.25 is that middle.
- MFU (model FLOPs utilisation, PaLM's definition, Chowdhery et al. 2022 §4.1/App. B): the share of
  the cards' dense peak the model FLOPs above achieve. Recomputation (gradient checkpointing) and
  communication are work beyond the model FLOPs, so they are what keeps MFU below 1. The setting
  `GPUPRICE_TRAINING_MFU` (default 0.4) is the caller's; see pricedb.settings.

The peak is the card's dense BF16 tensor figure (FP16 with precision=fp16) from the card table; a
card without one, or an fp32 job (no fp32 figure in the table), gets no hours: never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import formulas as f
from .models import Estimate, EstimateQuery, Precision, Workload
from .resolution import resolve

FLOPS_PER_PARAM_TOKEN = {Workload.FULL_FINETUNE: 6.0, Workload.LORA: 4.0, Workload.QLORA: 4.0}
QUANTIZED_BASE_TIME_FACTOR = 1.25


@dataclass(frozen=True, slots=True)
class TrainingWork:
    """What `tokens` training tokens of a job cost in compute, and the rule that says so."""

    tokens: int
    params: int  # the parameters a token goes through (an MoE's active ones)
    flops_per_param_token: float  # k
    time_factor: float  # q: dequantising a 4-bit base, else 1
    compute_dtype: str | None  # "bf16" / "fp16": which dense tensor figure; None: fp32 (no figure)
    rule: str

    @property
    def flops(self) -> float:
        return self.flops_per_param_token * self.params * self.tokens

    def hours(self, tflops_per_gpu: float, gpus: int, mfu: float) -> float:
        """Wall-clock hours on `gpus` cards of `tflops_per_gpu` dense TFLOPS at `mfu`."""
        return self.flops * self.time_factor / (tflops_per_gpu * 1e12 * gpus * mfu) / 3600


def active_params(query: EstimateQuery) -> int:
    """Parameters one token goes through: all of a dense model's; an MoE's shared part plus k of its E experts."""
    r = resolve(query)
    shape = r.shape
    if shape.num_experts <= 1:
        return r.params
    unused = f.expert_params(shape) * (1 - shape.experts_per_token / shape.num_experts)
    return round(r.params - unused)


def quantized_base(query: EstimateQuery) -> bool:
    return query.workload is Workload.QLORA or (query.workload is Workload.LORA and query.precision.quantized)


def training_work(estimate_or_query: Estimate | EstimateQuery, tokens: int) -> TrainingWork:
    """The compute of training on `tokens` tokens. Raises ValueError for an inference query."""
    query = estimate_or_query.query if isinstance(estimate_or_query, Estimate) else estimate_or_query
    if not query.workload.training:
        raise ValueError("training_work is for training workloads; inference is paced by decoding speed")
    k = FLOPS_PER_PARAM_TOKEN[query.workload]
    slow = QUANTIZED_BASE_TIME_FACTOR if quantized_base(query) else 1.0
    dtype = {Precision.FP32: None, Precision.FP16: "fp16"}.get(query.precision, "bf16")
    what = "full fine-tune: forward 2N + backward 4N" if k == 6 else "LoRA: forward 2N + activation gradients 2N"
    rule = f"FLOPs = {k:g}·N·tokens ({what})" + (
        f", × {slow:g} time for dequantising the quantised base" if slow > 1 else ""
    )
    return TrainingWork(tokens, active_params(query), k, slow, dtype, rule)
