"""The estimator's question and answer as pydantic models.

`EstimateQuery` is what `/estimate` (and `/cheapest` with estimator inputs) accepts; field-level
problems raise `pydantic.ValidationError` whose `loc` is the parameter. `Estimate` is CONTRACT §4's
answer plus a few extra fields (see docs/estimator.md, "Answer").
"""

from __future__ import annotations

import math
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_PARAMS = 10e12  # 10T: larger than any model that exists
MIN_PARAMS = 1e6
MAX_CONTEXT = 10_000_000
MAX_BATCH = 100_000
MAX_GPUS = 65_536


class Workload(StrEnum):
    INFERENCE = "inference"
    LORA = "lora"
    QLORA = "qlora"
    FULL_FINETUNE = "full_finetune"

    @property
    def training(self) -> bool:
        return self is not Workload.INFERENCE


class Precision(StrEnum):
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"
    INT4 = "int4"

    @property
    def quantized(self) -> bool:
        return self in (Precision.INT8, Precision.INT4)


class Optimizer(StrEnum):
    ADAMW = "adamw"
    ADAMW8BIT = "adamw8bit"
    SGD = "sgd"


class Engine(StrEnum):
    HF = "hf"
    VLLM = "vllm"


class Attention(StrEnum):
    """How attention runs: FlashAttention or PyTorch SDPA keep no score matrix; eager attention
    (transformers' `attn_implementation="eager"`, its default before 4.36) materialises each layer's scores."""

    FLASH = "flash"
    EAGER = "eager"


class Logits(StrEnum):
    """Which prompt positions inference computes logits for: the last (transformers ≥ 4.45 `generate`,
    vLLM) or all of them (older transformers, and a plain forward pass), in fp32."""

    LAST = "last"
    ALL = "all"


_ALIASES = {
    "workload": {
        "infer": "inference",
        "serve": "inference",
        "serving": "inference",
        "full": "full_finetune",
        "finetune": "full_finetune",
        "full_fine_tune": "full_finetune",
        "fft": "full_finetune",
        "q_lora": "qlora",
    },
    "precision": {
        "float32": "fp32",
        "float16": "fp16",
        "half": "fp16",
        "bfloat16": "bf16",
        "8bit": "int8",
        "4bit": "int4",
        "nf4": "int4",
    },
    "optimizer": {"adam": "adamw", "adamw_8bit": "adamw8bit", "adam8bit": "adamw8bit", "paged_adamw_8bit": "adamw8bit"},
    "engine": {"transformers": "hf", "huggingface": "hf"},
    "attention": {"sdpa": "flash", "flash_attention_2": "flash", "flash_attention": "flash", "fa2": "flash"},
    "logits": {"last_token": "last", "every": "all", "full": "all"},
}

_PARAMS_RE = re.compile(r"^(?P<num>\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?)(?P<unit>[kmbt])?$")
_UNIT = {None: 1, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_params(value: Any) -> int:
    """`7B`, `1.5b`, `13e9`, `350M`, `7000000000` → a parameter count. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("must be a parameter count such as 7B, 13e9 or 1.5b")
    if isinstance(value, int | float):
        number = float(value)
    else:
        text = str(value).strip().lower().replace("_", "").replace(",", "").replace(" ", "")
        text = text.removesuffix("params").removesuffix("parameters")
        match = _PARAMS_RE.match(text)
        if not match:
            raise ValueError(f"{value!r} is not a parameter count; write it like 7B, 13e9 or 1.5b")
        number = float(match["num"]) * _UNIT[match["unit"]]
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{value!r} must be a positive parameter count such as 7B")
    if number < MIN_PARAMS:
        raise ValueError(f"{value!r} is under a million parameters; write 7B for seven billion")
    if number > MAX_PARAMS:
        raise ValueError(f"{value!r} is over 10T parameters, larger than any model that exists")
    return round(number)


class EstimateQuery(BaseModel):
    """What to estimate. `model` (catalog name or Hugging Face id) or `params`; explicit
    architecture fields override the catalog. None means "the default" (stated in the answer)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)

    model: str | None = Field(None, min_length=1, max_length=200, description="catalog name or Hugging Face id")
    params: int | None = Field(None, description="parameter count: 7B, 13e9, 1.5b, or a plain number")
    layers: int | None = Field(None, ge=1, le=1000)
    hidden: int | None = Field(None, ge=1, le=1_000_000)
    heads: int | None = Field(None, ge=1, le=10_000)
    kv_heads: int | None = Field(None, ge=1, le=10_000)
    head_dim: int | None = Field(None, ge=1, le=10_000)
    vocab: int | None = Field(None, ge=1, le=10_000_000)
    intermediate: int | None = Field(None, ge=1, le=10_000_000)
    workload: Workload = Workload.INFERENCE
    precision: Precision = Precision.BF16
    context: int | None = Field(None, ge=1, le=MAX_CONTEXT, description="tokens per sequence (prompt + output)")
    batch: int = Field(1, ge=1, le=MAX_BATCH, description="concurrent sequences (training: micro-batch per GPU)")
    gpus: int = Field(1, ge=1, le=MAX_GPUS)
    zero: int | None = Field(None, ge=0, le=3, description="ZeRO stage; unset = choose per GPU count")
    gradient_checkpointing: bool | None = None
    optimizer: Optimizer = Optimizer.ADAMW
    lora_rank: int = Field(64, ge=1, le=8192)
    engine: Engine = Engine.HF
    attention: Attention = Attention.FLASH
    logits: Logits = Logits.LAST

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, value: Any) -> int | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse_params(value)

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            return value or None
        return value

    @field_validator("workload", "precision", "optimizer", "engine", "attention", "logits", mode="before")
    @classmethod
    def _enum(cls, value: Any, info) -> Any:
        if isinstance(value, str):
            key = value.strip().lower().replace("-", "_").replace(" ", "_")
            return _ALIASES[info.field_name].get(key, key)
        return value

    def given(self, name: str) -> bool:
        """Whether the caller set `name` (as opposed to leaving the default)."""
        return name in self.model_fields_set and getattr(self, name) is not None


class Breakdown(BaseModel):
    """What one GPU holds, in GiB, at the point estimate. The six contract fields plus `adapter_gb`
    (LoRA/QLoRA adapter weights) and `margin_gb` (the training safety factor); they add up to
    `per_gpu_gb`."""

    weights_gb: float
    kv_cache_gb: float
    activations_gb: float
    gradients_gb: float
    optimizer_gb: float
    overhead_gb: float
    adapter_gb: float = 0.0
    margin_gb: float = 0.0


class Estimate(BaseModel):
    """CONTRACT §4's answer (`total_gb … assumptions`) and extra fields, all sizes in GiB."""

    total_gb: float = Field(description="memory of the whole job: per_gpu_gb × gpus")
    per_gpu_gb: float = Field(description="what each GPU must hold")
    low_gb: float = Field(description="low end of the band for total_gb")
    high_gb: float = Field(description="high end of the band for total_gb")
    borderline: bool = Field(
        description="the per-GPU band straddles a card size (or its 90% usable part): the A100's 40 and 80 GiB, "
        "or those of the cards named by gpu="
    )
    breakdown: Breakdown
    assumptions: list[str]
    # --- extra fields ---
    unit: str = "GiB"
    per_gpu_low_gb: float
    per_gpu_high_gb: float
    model: str | None = Field(description="catalog name, or None when only params were given")
    params: int
    params_b: float
    trainable_params: int
    workload: Workload
    precision: Precision
    engine: Engine
    context: int
    batch: int
    gpus: int
    zero: int | None = Field(description="ZeRO stage used (training), None for inference")
    gradient_checkpointing: bool | None
    strategy: str = Field(description="how the job is laid out on the GPUs")
    shardable: bool = Field(description="whether more GPUs lower the per-GPU need")
    borderline_cards_gb: list[int]
    kv_bytes_per_token: float = Field(description="KV cache bytes per token per sequence (all layers)")
    bytes_per_token_read: float | None = Field(
        description="inference: bytes read from GPU memory per generated token (weights + KV at this batch)"
    )
    weights_bytes: float = Field(description="the whole model's weights in bytes, unsharded")
    architecture: dict
    warnings: list[str]
    query: EstimateQuery = Field(description="the query as given (None = default), to re-estimate for other GPU counts")
