"""The viability block written from pieces (api.viability_json) is byte for byte the block the reference
writes with `dumps` — every kind of line (viable, too small, a split that cannot be made), any headroom,
`single_gpu`, `gpus` — and its layouts are charged at least what they hold."""

from __future__ import annotations

import gc
import random
import tracemalloc

import pytest

from api import viability_json
from api.byte_cache import ENTRY_OVERHEAD, size_of
from api.cheapest_estimate import EstimateJudge, JudgeMemo
from api.query import CheapestParams
from api.state import dumps
from api.viability_json import BlockLayout

COUNTS = (1, 2, 3, 4, 5, 8, 16)
MEMORIES = (1.0, 2, 8.0, 12, 16.0, 24.0, 40.0, 48, 80.0, 94.0, 141.0, 192.0, 288.0)

QUESTIONS = [
    {"model": "llama-2-70b", "workload": "inference"},
    {"model": "llama-2-13b", "workload": "inference", "engine": "vllm"},  # 40 heads: no split over 3, 16 GPUs
    {"model": "gpt2", "workload": "inference", "layers": "3"},  # no split over more than 3 GPUs
    {"model": "llama-2-7b", "workload": "lora", "gpus": "2"},  # only machines with two GPUs are judged
    {"model": "qwen2.5-14b", "workload": "qlora", "single_gpu": "true"},
    {"model": "llama-2-7b", "workload": "full_finetune", "zero": "0"},
]


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("headroom", [0.9, 0.85, 1.0, 0.333])
def test_a_written_block_is_the_reference_s(question: dict[str, str], headroom: float) -> None:
    params = CheapestParams.model_validate(question)
    assert params.estimate is not None
    gpus = params.estimate.gpus if "gpus" in question else None
    rng = random.Random(f"{sorted(question.items())}{headroom}")
    memo = JudgeMemo()
    kinds = set()
    for _ in range(6):
        configurations = rng.sample([(n, m) for n in COUNTS for m in MEMORIES], rng.randint(0, 40))
        judges = [
            EstimateJudge(params.estimate, headroom=headroom, single_gpu=params.single_gpu, gpus=gpus, memo=memo,
                          written=written)
            for written in (False, True)
        ]  # fmt: skip
        for judge in judges:
            judge.fits_each(configurations)
        reference = dumps(judges[0].summary()["viability"])
        assert judges[1].summary()["viability"] == reference
        kinds.update(
            line["reason"] is None or line["reason"][:5] for line in judges[0].summary()["viability"]["configurations"]
        )
    if question.get("engine") == "vllm" or "layers" in question:
        assert kinds >= {True, "needs", "vLLM " if "engine" in question else "canno"}  # every kind of line written


def test_a_layout_is_charged_at_least_what_it_holds() -> None:
    """A layout's entry (its key and the layout, as the LRU charges them) is charged at least what
    making it allocated, for the ~120 configurations of 50,000 offers."""
    asked = tuple((n, float(m)) for n in (1, 2, 3, 4, 8, 16) for m in range(8, 8 + 20 * 8, 8))
    kept = []
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for copy in range(10):
        key = (tuple((n, m + copy / 1000) for n, m in asked), False, 0.9)
        kept.append((key, BlockLayout.of(key[0], False, 0.9)))
    gc.collect()
    held = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    tracemalloc.stop()
    charged = size_of(kept[0][0]) + size_of(kept[0][1]) + ENTRY_OVERHEAD
    assert held <= charged <= 2 * held


def test_layouts_stay_within_their_bound() -> None:
    rng = random.Random(7)
    for _ in range(300):
        asked = tuple(rng.sample([(n, m + 0.5) for n in COUNTS for m in range(300)], 200))
        viability_json.block_layout(asked, rng.random() < 0.5, 0.9)
        assert viability_json._layouts.bytes <= viability_json.LAYOUTS_MAX_BYTES
