"""The model catalog: coverage of shared/reference/models.json, lookup by any name, suggestions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.estimator import UnknownModel, all_models, closest_by_params, lookup, suggest
from api.estimator.formulas import count_params, kv_bytes_per_token

# A copy of the project's reference architecture facts (shared/reference/models.json), kept in the
# repository so the check runs wherever the suite runs.
REFERENCE = Path(__file__).resolve().parents[1] / "data" / "models_reference.json"


def _reference() -> dict:
    data = json.loads(REFERENCE.read_text())
    data.pop("_meta")
    return data


def test_catalog_covers_every_reference_model_with_its_facts_and_source() -> None:
    for name, ref in _reference().items():
        spec = lookup(name)
        assert spec.display_name == name
        assert spec.hf_id == ref["hf_id"]
        for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate", "max_context"):
            assert getattr(spec, field) == ref[field], (name, field)
        assert spec.params == ref["params_computed"]
        assert kv_bytes_per_token(spec.shape) == ref["kv_bytes_per_token_fp16"]
        assert spec.source[0] == f"shared/reference/models.json ({name})"
        assert set(ref["src"]) <= set(spec.source)


def test_catalog_has_the_families_the_issue_names() -> None:
    families = {spec.family for spec in all_models()}
    assert {"Llama-2", "Llama-3", "Mistral", "Mixtral", "Qwen2", "Qwen2.5", "Yi", "Baichuan2", "ChatGLM3"} <= families
    assert {"DeepSeek-LLM", "Gemma-2", "Phi-3", "Falcon", "BERT", "GPT-2"} <= families
    names = {spec.name for spec in all_models()}
    assert {"mistral-7b-v0.1", "yi-34b", "deepseek-llm-7b", "qwen2.5-14b", "llama-3-8b"} <= names


def test_every_entry_has_a_source_and_consistent_params() -> None:
    for spec in all_models():
        assert spec.source, spec.name
        assert count_params(spec.shape) == spec.params, spec.name
        if spec.published_params_b:
            # Falcon-40B's card says 41.8B; its dimensions give 41.3B (models.json agrees).
            assert spec.params / 1e9 == pytest.approx(spec.published_params_b, rel=0.015), spec.name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("llama-2-13b", "llama-2-13b"),
        ("LLAMA-2-13B", "llama-2-13b"),
        ("meta-llama/Llama-2-13b-hf", "llama-2-13b"),
        ("META-LLAMA/LLAMA-2-13B-HF", "llama-2-13b"),
        ("Llama-2-13b-hf", "llama-2-13b"),
        ("meta-llama/Llama-2-13b-chat-hf", "llama-2-13b"),
        ("Qwen/Qwen2.5-14B-Instruct", "qwen2.5-14b"),
        ("qwen2.5-14b-instruct", "qwen2.5-14b"),
        ("  qwen2.5-14b ", "qwen2.5-14b"),
        ("gpt2", "gpt-2"),
        ("openai-community/gpt2", "gpt-2"),
        ("mistral-7b", "mistral-7b-v0.1"),
        ("mixtral-8x7b", "mixtral-8x7b-v0.1"),
        ("THUDM/chatglm3-6b", "chatglm3-6b"),
        ("google/gemma-2-9b-it", "gemma-2-9b"),
        ("Qwen/Qwen-7B-Chat", "qwen-7b"),
        ("deepseek-ai/deepseek-llm-7b-base", "deepseek-llm-7b"),
    ],
)
def test_lookup(name: str, expected: str) -> None:
    assert lookup(name).name == expected


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(UnknownModel) as info:
        lookup("lama-2-13b")
    err = info.value
    assert err.param == "model"
    assert "llama-2-13b" in err.suggestions
    assert str(err).startswith("model: unknown model 'lama-2-13b'; did you mean llama-2-13b")
    assert isinstance(err, ValueError)


def test_suggestions_for_a_family_name() -> None:
    assert "qwen2.5-14b" in suggest("qwen2.5")
    assert suggest("llama-3-70")[0].startswith("llama-3")
    assert suggest("zzzzzz") == []


def test_unknown_model_without_suggestions_still_explains() -> None:
    with pytest.raises(UnknownModel, match="give params"):
        lookup("zzzzzz")


def test_closest_by_params_picks_a_decoder_of_similar_size() -> None:
    assert closest_by_params(13e9).name == "llama-2-13b"
    assert closest_by_params(70e9).params == pytest.approx(70e9, rel=0.02)
    assert closest_by_params(300e6).causal  # BERT-large is never a proxy
