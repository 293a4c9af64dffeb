"""The cost of the whole job: `/cheapest` by model with an amount of work (`tokens=`, or `epochs=` ×
`dataset_tokens=`) instead of wall-clock `hours` (docs/estimator.md "The cost of the whole job").

Each option gets its own hours, from its own cards:
- training: FLOPs = k·N·tokens (api/estimator/compute.py) over the cards' dense BF16 (FP16 with
  precision=fp16) TFLOPS × the GPUs the job uses × GPUPRICE_TRAINING_MFU;
- inference: tokens to generate / the configuration's decoding speed (`tokens_per_s`, memory-bandwidth
  bound, api/estimator/throughput.py).
Those hours are then billed under the offer's rule (per second/minute/hour, whole months, whole
reserved terms) by api.cheapest.job_cost, so a faster, pricier card wins when it finishes for less.
A card the table has no figure for gets no hours: its options are listed as unranked, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from api.cheapest import JobWork, card_of, no_card_figure
from api.estimator import Estimate, Throughput
from api.estimator.compute import TrainingWork, training_work
from pricedb.queries import Offer

INFERENCE_RULE = "hours = tokens / tokens_per_s / 3600 (tokens_per_s: this configuration's estimated decoding speed)"


@dataclass
class JobTimer:
    """Hours of one job on each offer's cards (training from FLOPs, inference from decoding speed)."""

    estimate: Estimate
    work: JobWork
    mfu: float
    gpus_used: Callable[[Offer], int]
    throughput: Callable[[Offer], Throughput | None]  # None: no bandwidth for the offer's card
    _training: TrainingWork | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.estimate.workload.training:
            self._training = training_work(self.estimate, self.work.tokens)

    def _tflops(self, offer: Offer) -> float | None:
        found = card_of(offer)
        if found is None or self._training is None or self._training.compute_dtype is None:
            return None
        return found.fp16_dense_tflops if self._training.compute_dtype == "fp16" else found.bf16_dense_tflops

    def unranked(self, offer: Offer) -> str | None:
        """Why the job's hours on `offer` cannot be estimated (never guessed); None when they can."""
        if self._training is None:
            if self.throughput(offer) is None:
                return f"{no_card_figure(offer, 'memory bandwidth')}: decoding speed unknown"
            return None
        if self._training.compute_dtype is None:
            return "precision=fp32: the card table has dense BF16/FP16 tensor figures only (give precision=bf16)"
        if self._tflops(offer) is None:
            dtype = self._training.compute_dtype.upper()
            return f"{no_card_figure(offer, f'dense {dtype} TFLOPS')}: the job's hours are unknown"
        return None

    def hours(self, offer: Offer) -> float:
        if self._training is not None:
            tflops = self._tflops(offer)
            assert tflops is not None  # unranked() said so first
            return self._training.hours(tflops, self.gpus_used(offer), self.mfu)
        tp = self.throughput(offer)
        assert tp is not None
        return self.work.tokens / tp.tokens_per_s / 3600

    def option_fields(self, offer: Offer) -> dict[str, Any]:
        hours = round(self.hours(offer), 4)
        if self._training is None:
            tp = self.throughput(offer)
            assert tp is not None
            return {"tokens": self.work.tokens, "tokens_per_s": round(tp.tokens_per_s, 2), "hours_needed": hours}
        return {
            "tokens": self.work.tokens,
            "flops": self._training.flops,
            "tflops_per_gpu": self._tflops(offer),
            "precision": self._training.compute_dtype,
            "gpus": self.gpus_used(offer),
            "mfu": self.mfu,
            "time_factor": self._training.time_factor,
            "hours_needed": hours,
        }

    def summary(self) -> dict[str, Any]:
        given = self.work.model_dump(exclude_none=True)
        if self._training is None:
            return {
                **given,
                "workload": self.estimate.workload.value,
                "rule": INFERENCE_RULE,
                "notes": [
                    "Tokens to generate at the decoding speed of one copy of the job on each option's GPUs; "
                    "prefill (reading the prompts) is not included."
                ],
            }
        work = self._training
        return {
            **given,
            "workload": self.estimate.workload.value,
            "params_per_token": work.params,
            "flops": work.flops,
            "mfu": self.mfu,
            "time_factor": work.time_factor,
            "rule": f"{work.rule}; hours = FLOPs × time_factor / (dense TFLOPS × 10^12 × GPUs × MFU) / 3600",
            "notes": [
                f"MFU {self.mfu:g} (GPUPRICE_TRAINING_MFU): the share of the cards' dense "
                f"{(work.compute_dtype or 'bf16').upper()} peak the model FLOPs achieve; recomputation and "
                "communication are what keep it below 1 (PaLM, Chowdhery et al. 2022: 46% for PaLM 540B, "
                "21–33% for GPT-3, Gopher, MT-NLG).",
                "Attention's own FLOPs (grow with context) are not in k·N·tokens; nor are data loading, "
                "evaluation or checkpoint saving.",
            ],
        }
