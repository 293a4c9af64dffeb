"""Options that are the API's query parameters (`--rank-by` is `rank_by`): a command sends exactly
those it defines, so the CLI and the API take the same parameters and refuse the same mistakes."""

from __future__ import annotations

import argparse
from typing import Any


def parameter(parser: argparse.ArgumentParser, name: str, group: Any = None, **kwargs: Any) -> None:
    """`--name` (underscores as dashes), recorded as a parameter of `parser`'s command."""
    (group or parser).add_argument(f"--{name.replace('_', '-')}", dest=name, **kwargs)
    parser.set_defaults(parameters=(*(parser.get_default("parameters") or ()), name))


def flag(parser: argparse.ArgumentParser, name: str, help_text: str) -> None:
    """A true/false parameter: `--name` alone means true, `--name false` says so."""
    parameter(parser, name, nargs="?", const="true", default=None, metavar="BOOL", help=help_text)


def parameters(args: argparse.Namespace) -> dict[str, Any]:
    """The values of the command's parameters, by the API's names (None: not given)."""
    return {name: getattr(args, name) for name in getattr(args, "parameters", ())}


def offer_filters(parser: argparse.ArgumentParser) -> None:
    """The filters every offer question takes."""
    parameter(parser, "pricing", help="comma list: on_demand, spot, monthly, reserved_1y, reserved_3y")
    parameter(parser, "provider", help="comma list of provider slugs")
    parameter(parser, "region", help="comma list of regions")
    parameter(parser, "gpu", default=None, help="comma list of GPU models, any case: A100,H100 (default: every card)")
    flag(parser, "include_unavailable", "include sold-out offers")
    flag(parser, "include_stale", "include offers of providers whose last run failed or is old")


ARCHITECTURE = "architecture override"
# api.query's EstimatorFields, in its order (tests/api/test_estimate_endpoint.py holds them equal): named
# here so that building the parser, which every `gpuprice` start does, does not import the API's models
ESTIMATOR_OPTIONS = {
    "model": "catalog name or Hugging Face id (llama-2-13b, Qwen/Qwen2.5-14B)",
    "params": "parameter count instead of a model: 7B, 13e9",
    "layers": ARCHITECTURE,
    "hidden": ARCHITECTURE,
    "heads": ARCHITECTURE,
    "kv_heads": ARCHITECTURE,
    "head_dim": ARCHITECTURE,
    "vocab": ARCHITECTURE,
    "intermediate": ARCHITECTURE,
    "workload": "inference (default), lora, qlora, full_finetune",
    "precision": "fp32, bf16 (default), fp16, int8, int4",
    "context": "tokens per sequence (prompt + output)",
    "batch": "concurrent sequences (training: micro-batch per GPU)",
    "gpus": "GPUs the job runs on (cheapest: only machines with that many)",
    "zero": "ZeRO stage 0-3 (training; default: chosen per GPU count)",
    "gradient_checkpointing": "true/false (training; default true)",
    "optimizer": "adamw (default), adamw8bit, sgd",
    "lora_rank": "LoRA rank (default 64)",
    "engine": "hf (default) or vllm (inference)",
    "attention": "flash (default: FlashAttention/SDPA) or eager (its s² scores in memory)",
    "logits": "inference with engine hf: last (default, transformers >= 4.45) or all prompt positions",
}


def estimator_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the job to estimate (instead of --mem)")
    for name, help_text in ESTIMATOR_OPTIONS.items():
        parameter(parser, name, group, help=help_text)


def snapshot_date(parser: argparse.ArgumentParser) -> None:
    parameter(parser, "date", help="the market at the end of this UTC day (YYYY-MM-DD) instead of now")
