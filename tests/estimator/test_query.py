"""Query parsing and bad input: every error is a ValueError whose message or `loc` names the parameter."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from api.estimator import (
    EstimateQuery,
    EstimatorError,
    InvalidCombination,
    Precision,
    UnknownModel,
    Workload,
    error_details,
    estimate,
    parse_params,
    per_gpu_need,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7B", 7_000_000_000),
        ("7b", 7_000_000_000),
        ("1.5b", 1_500_000_000),
        ("13e9", 13_000_000_000),
        ("350M", 350_000_000),
        ("7 B", 7_000_000_000),
        ("7,000,000,000", 7_000_000_000),
        ("7_000_000_000", 7_000_000_000),
        ("0.5T", 500_000_000_000),
        (7e9, 7_000_000_000),
        (13_000_000_000, 13_000_000_000),
    ],
)
def test_parse_params(text, expected: int) -> None:
    assert parse_params(text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("7", "write 7B"),
        ("20T", "over 10T"),
        ("abc", "not a parameter count"),
        ("-7B", "not a parameter count"),
        (-5e9, "positive"),
        (0, "positive"),
        (True, "parameter count"),
        ("7X", "not a parameter count"),
    ],
)
def test_bad_params(text, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        EstimateQuery(params=text)
    (detail,) = error_details(info.value)
    assert detail["param"] == "params"
    assert words in detail["message"]


def test_enum_spellings_are_forgiving() -> None:
    q = EstimateQuery(model="llama-2-7b", workload="LoRA", precision="bfloat16", optimizer="AdamW", engine="vLLM")
    assert q.workload is Workload.LORA and q.precision is Precision.BF16
    assert EstimateQuery(model="x", workload="full-finetune").workload is Workload.FULL_FINETUNE
    assert EstimateQuery(model="x", precision="4bit").precision is Precision.INT4


def test_query_strings_from_a_url_are_coerced() -> None:
    q = EstimateQuery.model_validate(
        {"model": "llama-2-7b", "context": "4096", "batch": "8", "gradient_checkpointing": "false", "zero": "3"}
    )
    assert (q.context, q.batch, q.gradient_checkpointing, q.zero) == (4096, 8, False, 3)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("batch", 0),
        ("batch", -1),
        ("batch", 100_001),
        ("context", 0),
        ("context", 10_000_001),
        ("gpus", 0),
        ("zero", 4),
        ("zero", -1),
        ("lora_rank", 0),
        ("layers", -3),
        ("kv_heads", 0),
        ("workload", "pretrain"),
        ("precision", "fp8"),
        ("engine", "tgi"),
        ("optimizer", "lion"),
    ],
)
def test_out_of_range_values_name_the_parameter(field: str, value) -> None:
    with pytest.raises(ValidationError) as info:
        EstimateQuery(model="llama-2-7b", **{field: value})
    assert [d["param"] for d in error_details(info.value)] == [field]


def test_unknown_parameters_are_refused_by_name() -> None:
    with pytest.raises(ValidationError) as info:
        EstimateQuery(model="llama-2-7b", lora_r=16)
    assert error_details(info.value)[0]["param"] == "lora_r"


def test_neither_model_nor_params() -> None:
    with pytest.raises(EstimatorError) as info:
        estimate(EstimateQuery(workload="lora"))
    assert info.value.param == "model"
    assert "params" in str(info.value)


def test_unknown_model_is_a_value_error_naming_model() -> None:
    with pytest.raises(UnknownModel) as info:
        estimate(EstimateQuery(model="llama-2-13", workload="inference"))
    assert error_details(info.value) == [{"param": "model", "message": info.value.message}]
    assert "llama-2-13b" in info.value.suggestions


def test_qlora_with_fp32_is_impossible() -> None:
    with pytest.raises(InvalidCombination) as info:
        estimate(EstimateQuery(model="llama-2-7b", workload="qlora", precision="fp32"))
    assert info.value.param == "precision"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_full_finetune_of_quantized_weights_is_impossible(precision: str) -> None:
    with pytest.raises(InvalidCombination, match=r"^precision: full_finetune"):
        estimate(EstimateQuery(model="llama-2-7b", workload="full_finetune", precision=precision))


def test_zero3_on_one_gpu_is_allowed_but_called_pointless() -> None:
    est = estimate(EstimateQuery(model="qwen-1.8b", workload="full_finetune", zero=3, gpus=1))
    assert any("pointless" in w for w in est.warnings)
    assert est.zero == 3
    assert est.breakdown.overhead_gb > 1  # its buffers are counted


def test_inconsistent_architecture_names_the_parameter() -> None:
    with pytest.raises(EstimatorError) as info:
        estimate(EstimateQuery(model="llama-2-7b", kv_heads=64))
    assert info.value.param == "kv_heads"
    with pytest.raises(EstimatorError) as info:
        estimate(EstimateQuery(model="llama-2-7b", kv_heads=5))
    assert info.value.param == "kv_heads"


def test_impossible_tensor_parallel_split_names_gpus() -> None:
    q = EstimateQuery(model="llama-2-70b", engine="vllm", precision="int4", gpus=3)
    with pytest.raises(EstimatorError) as info:
        estimate(q)
    assert info.value.param == "gpus"
    assert per_gpu_need(q, 3) == float("inf")  # /cheapest: not viable rather than an error


def test_params_only_is_accepted() -> None:
    est = estimate(EstimateQuery(params="7B"))
    assert est.model is None and est.params == 7_000_000_000


def test_error_details_for_any_exception() -> None:
    assert error_details(RuntimeError("boom")) == [{"param": "query", "message": "boom"}]
