"""A plain `/cheapest` question read by api.query_fast is the `CheapestParams` the model makes of
it, and whatever it does not read (or reads as wrong) is left to the model: random query strings,
valid and invalid, with repeated, empty, encoded and unknown parameters."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest

from api.estimator import memo as estimator_memo
from api.limits import limits_of
from api.query import CheapestParams, as_routed
from api.query_fast import ReusedQuestions, plain_given, plain_params, query_pairs
from pricedb.settings import Settings
from tests.helpers import freeze_survivors, read_both_ways, written_query

SETTINGS = Settings(max_limit=50)
VALUES = {
    "mem": ("60", "60GB", "60 GB", "40gib", "1TB", "0.5", ".5", "0", "-1", "abc", "", "100001", "1e3", "nan"),
    "hours": ("1", "0.5", "200", "1e3", "0", "-2", "nan", "inf", "87600", "87601", "", "abc", "24h"),
    "gpu": ("A100", "a100,H100", "A100, ,L4", "nope", "", ",", "H100,A100,H100"),
    "pricing": ("spot", "ON_DEMAND,spot", "monthly, reserved_1y", "cheap", ""),
    "provider": ("aws", "AWS,azure", "nowhere", "", "aws,aws"),
    "region": ("us-east-1", "US East 1,eastus", "bad/region", "", "x" * 70),
    "include_stale": ("true", "1", "no", "maybe", ""),
    "include_unavailable": ("yes", "off", "T", ""),
    "single_gpu": ("true", "false", "2"),
    "interruptible": ("false", "ON", ""),
    "limit": ("1", "10", "010", "50", "51", "0", " 5", "+5", "5.0", "abc", ""),
    "rank_by": ("total", "TOTAL", "per_mtoken", "job_total", ""),
    "model": ("llama-2-7b", ""),
    "tokens": ("2B",),
    "memory": ("60",),
}


def random_query(rng: random.Random) -> bytes:
    names = ["mem"] if rng.random() < 0.9 else []
    names += rng.sample(list(VALUES), rng.randint(0, 5))
    if rng.random() < 0.1:
        names.append(rng.choice(names or ["mem"]))  # a parameter given twice: the last one counts
    return written_query(rng, names, VALUES, safe=",")


def plain_reader(query: bytes) -> CheapestParams | None:
    return plain_params(query, SETTINGS)


@pytest.mark.parametrize("seed", range(4))
def test_plain_questions_read_as_the_model_reads_them(seed: int) -> None:
    rng = random.Random(seed)
    read_here = 0
    queries = (random_query(rng) for _ in range(1500))
    for query, fast, model in read_both_ways(queries, plain_reader, CheapestParams, SETTINGS):
        read_here += 1
        assert fast.model_dump() == model.model_dump(), query
        assert fast.model_dump_json() == model.model_dump_json(), query  # the answer cache's key
        assert fast.to_query() == model.to_query(), query
        assert fast.work is None and fast.estimate == model.estimate  # by model (VALUES' model): its estimate
    assert read_here > 100  # the plain path was exercised, not only the fallback


JOB_VALUES = {
    "model": ("llama-2-7b", "llama-2-70b", "qwen2.5-14b", "nope", " llama-2-13b "),
    "params": ("7B", "1.5b", "abc", "1"),
    "workload": ("inference", "lora", "qlora", "full_finetune", "serve", "cooking"),
    "precision": ("bf16", "fp32", "int4", "int8", "half", "fp64"),
    "context": ("1024", "4096", "0", "abc", "99999999"),
    "batch": ("1", "16", "-1"),
    "gpus": ("1", "2", "8", "0"),
    "zero": ("0", "3", "5"),
    "engine": ("vllm", "hf", "trt"),
    "kv_heads": ("4", "7"),
}


def random_job_query(rng: random.Random) -> bytes:
    names = rng.sample(["model", "model", "params", *JOB_VALUES], rng.randint(1, 5))
    names += rng.sample([n for n in VALUES if n not in ("mem", "model")], rng.randint(0, 3))
    parts = []
    for name in names:
        value = rng.choice(JOB_VALUES.get(name) or VALUES[name])
        parts.append(f"{name}={quote(value, safe=',')}")
    return "&".join(parts).encode()


@pytest.mark.parametrize("seed", range(3))
def test_plain_questions_by_model_read_as_the_model_reads_them(seed: int) -> None:
    """A question by model and workload read here has the model's own values and estimate; one the
    model refuses (an unknown model, a value the estimator refuses, single_gpu against gpus, an
    amount of work, …) is never read here, so its 422 is the model's."""
    rng = random.Random(seed)
    read_here = 0
    queries = (random_job_query(rng) for _ in range(1000))
    for query, fast, model in read_both_ways(queries, plain_reader, CheapestParams, SETTINGS):
        read_here += 1
        assert fast.model_dump() == model.model_dump(), query
        assert fast.model_fields_set == model.model_fields_set, query
        assert fast.model_dump_json() == model.model_dump_json(), query
        assert fast.to_query() == model.to_query(), query
        assert fast.estimate is not None and fast.estimate == model.estimate, query
        assert fast.estimator_values() == model.estimator_values(), query
    assert read_here > 60  # the plain path was exercised, not only the fallback


def test_query_strings_split_as_parse_qsl_splits_them() -> None:
    from urllib.parse import parse_qsl

    rng = random.Random(7)
    alphabet = "ab=&&%+20é;x=" + "\x00\xff"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        query = text.encode("latin-1")
        assert query_pairs(query) == dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True)), text
    for _ in range(300):
        query = random_query(rng)
        assert query_pairs(query) == dict(parse_qsl(query.decode("latin-1"), keep_blank_values=True)), query


MODEL_QUESTIONS = (
    "model=llama-2-7b&workload=inference",
    "model=llama-2-13b&workload=lora&context=4096&batch=2",
    "model=llama-2-70b&workload=inference&precision=int4&gpu=A100,H100&include_stale=true",
    "model=qwen2.5-14b&workload=inference&batch=8&single_gpu=true&limit=3",
    "model=llama-2-7b&workload=full_finetune&gpus=2&provider=aws,vast",
    "params=7B&workload=qlora&pricing=spot,on_demand",
    "mem=60&gpu=",  # an empty value: not a plain question, read by the model and kept
    "model=llama-2-7b&workload=inference&rank_by=per_mtoken",
)
REFUSED_TWICE = (
    "model=llama-2-7b&workload=lora&tokens=2B",  # an amount of work: hours are refused there
    "model=nope&workload=inference",
    "model=llama-2-7b&mem=60",
)


@pytest.mark.parametrize("seed", range(3))
def test_questions_asked_again_with_other_hours_answer_as_new_ones(seed: int) -> None:
    """A question asked before with other hours reuses its parameters and its judge's memo; each
    answer is still the reference's, byte for byte, over random offers."""
    from api.answers import cheapest_json
    from api.cheapest_fast import OfferColumns
    from pricedb.queries import CurrentOffers
    from tests.api.test_cheapest_fast import OBSERVED, random_offer

    rng = random.Random(seed)
    kept = ReusedQuestions(2**26)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(300))}.values(), key=lambda o: o.key)
    current = CurrentOffers(offers, OBSERVED, None)
    columns = OfferColumns.build(offers, SETTINGS)
    for _ in range(120):
        question = rng.choice(MODEL_QUESTIONS)
        if rng.random() < 0.8:
            question += f"&hours={rng.choice(('1', '24', '731', str(rng.uniform(0, 5000))))}"
        query = question.encode()
        reused = kept.params(query, SETTINGS)
        with limits_of(SETTINGS):
            model = CheapestParams.model_validate(as_routed(query))
        assert reused is not None, question
        assert reused.model_dump() == model.model_dump(), question
        assert reused.estimate == model.estimate, question
        reference = cheapest_json(model, current, SETTINGS, None)
        assert cheapest_json(reused, current, SETTINGS, columns) == reference, question
    for question in REFUSED_TWICE:
        for hours in ("", "&hours=2"):
            assert kept.params((question + hours).encode(), SETTINGS) is None


def _offers_and_columns(seed: int, count: int):
    from api.cheapest_fast import OfferColumns
    from pricedb.queries import CurrentOffers
    from tests.api.test_cheapest_fast import OBSERVED, random_offer

    rng = random.Random(seed)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(count))}.values(), key=lambda o: o.key)
    return CurrentOffers(offers, OBSERVED, None), OfferColumns.build(offers, SETTINGS)


MODEL_JOBS = [f"model={m}&workload={w}&context={c}&batch={b}" for m in ("llama-2-7b", "llama-2-70b", "qwen2.5-14b")
              for w in ("inference", "lora") for c in (1024, 4096) for b in (1, 16)]  # fmt: skip
MEM_JOBS = [f"mem={m}&gpu={g}" for m in (16, 24, 40, 60, 80, 160) for g in ("A100", "H100,L4", "L4", "A100,H100")]


@pytest.mark.parametrize("jobs", [MODEL_JOBS, MEM_JOBS], ids=["by model", "by mem"])
def test_questions_kept_for_reuse_are_charged_what_they_hold_and_stay_within_their_bound(jobs: list[str]) -> None:
    """Each kept question is charged at least what making and answering it allocated (its parameters,
    estimate and judge's memo, or by `mem` its answer without hours: measured with tracemalloc after
    the caches outside it are warm, while the estimator's memo keeps nothing, so that the question alone
    holds its estimate), and the questions kept never hold more than the bound, the least recently asked
    going first."""
    import gc
    import tracemalloc

    from api.answers import cheapest_json

    current, columns = _offers_and_columns(5, 400)
    roomy = ReusedQuestions(2**30)

    def ask(kept: ReusedQuestions, job: str, hours: str) -> None:
        params = kept.params(f"{job}&hours={hours}".encode(), SETTINGS)
        assert params is not None
        cheapest_json(params, current, SETTINGS, columns)
        kept.charge(params)

    # Every cache outside the questions (estimator, throughput, columns, pieces) warmed with what the
    # measured answers show (the options at each hours): a process-wide cache another test filled
    # could otherwise grow its table while a question is measured.
    for job in jobs:
        for hours in ("1", "24", "731"):
            ask(ReusedQuestions(2**30), job, hours)
    # What lives now was made before tracing, so none of it is counted; frozen, it is left out of the
    # collections below (a walk of a whole xdist worker's heap took ~0.2 s, 48 times: two thirds of
    # this test's CPU).
    freeze_survivors()
    estimator_bound = estimator_memo.max_bytes()
    estimator_memo.bound(0)
    try:
        for job in jobs:
            gc.collect()
            before_bytes, before = roomy.bytes, tracemalloc.start() or tracemalloc.get_traced_memory()[0]
            for hours in ("1", "24", "731"):
                ask(roomy, job, hours)
            gc.collect()
            allocated = tracemalloc.get_traced_memory()[0] - before
            tracemalloc.stop()
            charged = roomy.bytes - before_bytes
            assert allocated <= charged <= 2 * allocated, job
    finally:
        estimator_memo.bound(estimator_bound)

    bound = 12 * roomy.bytes // len(jobs)  # room for about twelve of them (one may take an eighth: ByteLRU)
    small = ReusedQuestions(bound)
    for round_ in range(2):
        for job in jobs:
            ask(small, job, str(round_ + 1))
            assert small.bytes <= bound
            assert 1 <= len(small) <= 18
    assert len(small) < len(jobs)  # some were let go


def _held_by_params(questions: list[dict[str, str]], read: Callable[[dict[str, str]], Any]) -> float:
    """What the parameters of each question hold, alone (tracemalloc; what was made before is not counted)."""
    import gc
    import tracemalloc

    freeze_survivors()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [read(given) for given in questions]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert all(params is not None for params in kept)
    return held / len(questions)


def test_a_question_s_parameters_are_charged_at_least_what_they_hold() -> None:
    """`Kept` charges a question's parameters: by model at least what they hold beside their estimate
    (shared with the estimator's memo) and, with ESTIMATE_BYTES, what they hold once they alone keep
    it; by `mem` at least what they hold — and not more than a third again (a small margin)."""
    from api.estimator.estimate import ESTIMATE_BYTES
    from api.query_fast import MEM_PARAMS_BYTES, PARAMS_BYTES

    def by_model(i: int) -> dict[str, str]:
        return {"model": ("llama-2-7b", "llama-2-70b", "qwen2.5-14b")[i % 3], "workload": ("inference", "lora")[i % 2],
                "context": str(1000 + i), "batch": str(1 + i % 16), "provider": "aws,gcp", "limit": "20"}  # fmt: skip

    def by_mem(i: int) -> dict[str, str]:
        return {"mem": f"{16 + i}GB", "gpu": "A100,H100", "provider": "aws,gcp", "pricing": "spot,on_demand",
                "region": "us-east-1", "single_gpu": "true", "limit": "20"}  # fmt: skip

    def model(given: dict[str, str]) -> CheapestParams:
        return CheapestParams.model_validate(given)

    before = estimator_memo.max_bytes()
    try:
        with limits_of(SETTINGS):
            estimator_memo.bound(2**30)
            for i in range(100):
                model(by_model(i))  # the estimates kept by the estimator's memo first
            beside = _held_by_params([by_model(i) for i in range(100)], model)
            estimator_memo.bound(0)
            alone = _held_by_params([by_model(i) for i in range(100)], model)
            plain = _held_by_params([by_mem(i) for i in range(100)], lambda given: plain_given(given, SETTINGS))
            validated = _held_by_params([by_mem(i) for i in range(100)], model)
    finally:
        estimator_memo.bound(before)
    assert beside <= PARAMS_BYTES <= 1.35 * beside
    assert alone <= PARAMS_BYTES + ESTIMATE_BYTES <= 1.35 * alone
    assert max(plain, validated) <= MEM_PARAMS_BYTES <= 1.35 * max(plain, validated)
