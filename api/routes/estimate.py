from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response

from api.answers import estimate_answer
from api.query import EstimateParams
from api.routes.deps import json_response
from api.routes.responses import errors

router = APIRouter(tags=["estimate"])


@router.get("/estimate", responses=errors(422))
def estimate(params: Annotated[EstimateParams, Query()]) -> Response:
    """GPU memory a workload needs, in GiB (the unit cards are sold in): `model` (catalog name or
    Hugging Face id) or `params` (`7B`), `workload` (inference, lora, qlora, full_finetune),
    `precision`, `context`, `batch`, `gpus`, `zero`, `gradient_checkpointing`, `optimizer`,
    `lora_rank`, `engine`, and optional architecture overrides. The answer has the point estimate,
    the band (`low_gb`/`high_gb`), `per_gpu_gb`, a breakdown by component, `borderline` and every
    assumption made. See docs/estimator.md."""
    return json_response(estimate_answer(params))
