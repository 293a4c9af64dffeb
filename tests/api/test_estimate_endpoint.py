"""`/estimate` and `gpuprice estimate`: every workload answers with a breakdown and a band; bad
input for every parameter is a 422 in the one error shape, naming the parameter."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from api.cli.options import ESTIMATOR_OPTIONS
from api.estimator import EstimateQuery
from api.query import EstimatorFields
from pricedb.store import PriceStore
from tests.conftest import make_settings
from tests.helpers import assert_422_naming

CONTRACT_FIELDS = {"total_gb", "per_gpu_gb", "low_gb", "high_gb", "borderline", "breakdown", "assumptions"}
CONTRACT_BREAKDOWN = {"weights_gb", "kv_cache_gb", "activations_gb", "gradients_gb", "optimizer_gb", "overhead_gb"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, _migrated_db: Path) -> Iterator[TestClient]:
    """/estimate needs no prices: one app over an empty store (a copy of the migrated one) answers the
    module's questions (an app and a store per test cost ~60 ms CPU each, 48 times)."""
    settings = make_settings(tmp_path_factory.mktemp("estimate"))
    shutil.copyfile(_migrated_db, settings.db)
    store = PriceStore(settings)
    try:
        with TestClient(create_app(settings, store=store, schedule=False)) as test_client:
            yield test_client
    finally:
        store.close()


def test_the_parameters_are_the_estimators() -> None:
    assert set(EstimatorFields.model_fields) == set(EstimateQuery.model_fields)
    assert list(ESTIMATOR_OPTIONS) == list(EstimatorFields.model_fields)  # the CLI's options, in the API's order


WORKLOADS = [
    # (query, components that must be present, components that must be absent)
    ("model=llama-2-13b&workload=inference&batch=4&context=2048", {"weights_gb", "kv_cache_gb"}, {"gradients_gb"}),
    ("model=qwen2.5-14b&workload=lora&context=4096", {"adapter_gb", "activations_gb", "margin_gb"}, {"kv_cache_gb"}),
    ("model=Qwen/Qwen2.5-7B-Instruct&workload=qlora", {"adapter_gb", "optimizer_gb"}, {"kv_cache_gb"}),
    ("params=7B&workload=full_finetune&gpus=8&zero=3", {"gradients_gb", "optimizer_gb", "weights_gb"}, {"adapter_gb"}),
]


@pytest.mark.parametrize(("query", "present", "absent"), WORKLOADS)
def test_every_workload_has_a_breakdown_and_a_band(client: TestClient, query: str, present: set, absent: set) -> None:
    response = client.get(f"/estimate?{query}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= CONTRACT_FIELDS and set(body["breakdown"]) >= CONTRACT_BREAKDOWN
    assert body["unit"] == "GiB" and "GiB" in body["assumptions"][0]
    parts = body["breakdown"]
    assert all(parts[name] > 0 for name in present), parts
    assert all(parts[name] == 0 for name in absent), parts
    assert sum(parts.values()) == pytest.approx(body["per_gpu_gb"], abs=0.05)
    assert body["total_gb"] == pytest.approx(body["per_gpu_gb"] * body["gpus"], abs=0.05)
    assert body["low_gb"] < body["total_gb"] < body["high_gb"]
    assert body["per_gpu_low_gb"] < body["per_gpu_gb"] < body["per_gpu_high_gb"]
    assert body["high_gb"] >= 1.2 * body["total_gb"] - 0.01  # the band is at least +20%


def test_full_finetune_on_eight_gpus_is_sharded(client: TestClient) -> None:
    one = client.get("/estimate?params=7B&workload=full_finetune&zero=3").json()
    eight = client.get("/estimate?params=7B&workload=full_finetune&zero=3&gpus=8").json()
    # ZeRO-3 divides weights, gradients and optimizer states by the GPU count.
    for part in ("weights_gb", "gradients_gb", "optimizer_gb"):
        assert eight["breakdown"][part] == pytest.approx(one["breakdown"][part] / 8, abs=0.02)
    assert eight["strategy"].startswith("ZeRO-3 over 8 GPUs")


def test_zero3_on_one_gpu_is_allowed_but_said_to_be_pointless(client: TestClient) -> None:
    response = client.get("/estimate?model=llama-2-7b&workload=full_finetune&zero=3&gpus=1")
    assert response.status_code == 200
    assert any("zero=3 with gpus=1 is pointless" in w for w in response.json()["warnings"])


def test_url_spellings_are_understood(client: TestClient) -> None:
    body = client.get("/estimate?params=7B&workload=LoRA&precision=bfloat16&context=4096").json()
    understood = (body["params"], body["workload"], body["precision"], body["context"])
    assert understood == (7_000_000_000, "lora", "bf16", 4096)


BAD = [
    ("model=llama-9", "model", "did you mean"),
    ("workload=inference", "model", "give model"),
    ("params=abc", "params", "not a parameter count"),
    ("params=20T", "params", "over 10T"),
    ("params=5", "params", "under a million"),
    ("model=llama-2-7b&layers=0", "layers", "greater than or equal to 1"),
    ("model=llama-2-7b&hidden=wide", "hidden", "valid integer"),
    ("model=llama-2-7b&heads=0", "heads", "greater than or equal to 1"),
    ("model=llama-2-7b&heads=32&kv_heads=7", "kv_heads", "must divide"),
    ("model=llama-2-7b&kv_heads=64", "kv_heads", "more than the 32 attention heads"),
    ("model=llama-2-7b&head_dim=0", "head_dim", "greater than or equal to 1"),
    ("model=llama-2-7b&vocab=-1", "vocab", "greater than or equal to 1"),
    ("model=llama-2-7b&intermediate=99999999", "intermediate", "less than or equal to"),
    ("model=llama-2-7b&workload=pretrain", "workload", "Input should be"),
    ("model=llama-2-7b&precision=fp8", "precision", "Input should be"),
    ("model=llama-2-7b&workload=qlora&precision=fp32", "precision", "qlora keeps the base model in 4-bit"),
    ("model=llama-2-7b&workload=full_finetune&precision=int4", "precision", "full_finetune cannot update int4"),
    ("model=llama-2-7b&context=0", "context", "greater than or equal to 1"),
    ("model=llama-2-7b&context=20000000", "context", "less than or equal to 10000000"),
    ("model=llama-2-7b&batch=-1", "batch", "greater than or equal to 1"),
    ("model=llama-2-7b&batch=1000000", "batch", "less than or equal to 100000"),
    ("model=llama-2-7b&gpus=0", "gpus", "greater than or equal to 1"),
    ("model=llama-2-70b&engine=vllm&gpus=3", "gpus", "divides the 64 attention heads"),
    ("model=llama-2-7b&zero=4", "zero", "less than or equal to 3"),
    ("model=llama-2-7b&gradient_checkpointing=maybe", "gradient_checkpointing", "valid boolean"),
    ("model=llama-2-7b&optimizer=lion", "optimizer", "Input should be"),
    ("model=llama-2-7b&lora_rank=0", "lora_rank", "greater than or equal to 1"),
    ("model=llama-2-7b&engine=tgi", "engine", "Input should be"),
    ("model=llama-2-7b&lora_r=8", "lora_r", "unknown parameter"),
]


@pytest.mark.parametrize(("query", "parameter", "message"), BAD)
def test_bad_input_is_a_422_naming_the_parameter(client: TestClient, query: str, parameter: str, message: str) -> None:
    assert_422_naming(client.get(f"/estimate?{query}"), parameter, message)


def test_unknown_model_suggests_close_names(client: TestClient) -> None:
    problem = client.get("/estimate?model=qwen2.5-15b").json()["errors"][0]
    assert problem["parameter"] == "model" and problem["value"] == "qwen2.5-15b"
    assert "qwen2.5-14b" in problem["message"]


@pytest.mark.parametrize(
    "query",
    ["model=%00", "params=nan", "params=inf", "params=-7B", "context=1e9&model=gpt2", "batch=1.5&model=gpt2",
     "model=gpt2&heads=7", "model=gpt2&workload=", "hidden=1&heads=1&params=1B",
     "model=mixtral-8x7b&engine=vllm&gpus=7"],
)  # fmt: skip
def test_junk_is_never_a_500(client: TestClient, query: str) -> None:
    assert client.get(f"/estimate?{query}").status_code in (200, 422)


def test_cli_estimate_prints_the_api_json(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    api = client.get("/estimate?model=qwen2.5-14b&workload=lora&context=4096").json()
    assert cli(["estimate", "--model", "qwen2.5-14b", "--workload", "lora", "--context", "4096", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == api
    assert cli(["estimate", "--model", "qwen2.5-14b", "--workload", "lora", "--context", "4096"]) == 0
    table = capsys.readouterr().out
    assert "49.86" in table and "37.32–60.09" in table and "assumptions" in table


def test_cli_estimate_bad_input_names_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["estimate", "--model", "llama-2-7b", "--workload", "qlora", "--precision", "fp32"]) == 2
    assert "--precision: qlora keeps the base model in 4-bit" in capsys.readouterr().err
    assert cli(["estimate", "--model", "llama-2-7b", "--lora-rank", "0"]) == 2
    assert "--lora-rank:" in capsys.readouterr().err
