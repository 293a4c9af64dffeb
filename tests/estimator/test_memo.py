"""The estimator's memos (api.estimator.memo): each entry is charged at least what it holds, the memos
never hold more than their bound however many distinct jobs clients ask, their answers are the
estimator's own, and a server's bound is its share of GPUPRICE_QUESTION_MEMO_MB."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from api.cheapest_estimate import THROUGHPUT_MEMO_BYTES, _throughput
from api.estimator import EstimateQuery, memo, per_gpu_plan
from api.estimator.catalog import all_models
from api.estimator.estimate import ESTIMATE_BYTES, _cached_build, cached_estimate
from api.estimator.resolution import _ARCH_FIELDS, RESOLVED_BYTES, _Architecture, _resolve
from tests.helpers import freeze_survivors

MODELS = [spec.name for spec in all_models()]
WORKLOADS = ("inference", "lora", "qlora", "full_finetune")
ENTRIES = 120  # new entries measured together: the memo's table grows by steps, shared among them


@pytest.fixture
def roomy() -> Iterator[None]:
    """Memos that keep everything while a test measures them, then the bound they had."""
    before = memo.max_bytes()
    memo.bound(2**40)
    yield
    memo.bound(before)


def _query(i: int, workload: str, **given: Any) -> EstimateQuery:
    return EstimateQuery(model=MODELS[i % len(MODELS)], workload=workload, context=1000 + i, **given)


def _held_per_entry(arguments: list[tuple[Any, ...]], keep: Callable[..., Any]) -> float:
    """What the memo holds for each new entry `keep(*arguments)` makes, its key's objects included:
    the arguments are made before tracing and dropped before the count, so only what the memo keeps
    of them counts."""
    freeze_survivors()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for args in arguments:
        keep(*args)
    del args
    arguments.clear()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held / ENTRIES


def _charge(entry_bytes: int) -> int:
    """What the memo's ByteLRU charges an entry at least (its overhead, beyond `entry_bytes`)."""
    from api.byte_cache import ENTRY_OVERHEAD

    return entry_bytes + ENTRY_OVERHEAD


@pytest.mark.parametrize("workload", WORKLOADS)
def test_an_estimate_is_charged_at_least_what_it_holds(roomy: None, workload: str) -> None:
    for i in range(ENTRIES):  # the architectures are kept first: an estimate's entry alone is measured
        _resolve(_Architecture(MODELS[i % len(MODELS)], None, *(None for _ in _ARCH_FIELDS)))
    builds = [(q, frozenset(q.model_fields_set), 0.9, ()) for q in (_query(i, workload) for i in range(ENTRIES))]
    assert _held_per_entry(builds, _cached_build) <= _charge(ESTIMATE_BYTES)


def test_an_architecture_and_a_throughput_are_charged_at_least_what_they_hold(roomy: None) -> None:
    by_params = [(_Architecture(None, 7_000_000_000 + i, *(None for _ in _ARCH_FIELDS)),) for i in range(ENTRIES)]
    assert _held_per_entry(by_params, _resolve) <= _charge(RESOLVED_BYTES)
    overridden = [(_Architecture(MODELS[i % len(MODELS)], None, 40 + i, *(None for _ in _ARCH_FIELDS[1:])),)
                  for i in range(ENTRIES)]  # fmt: skip
    assert _held_per_entry(overridden, _resolve) <= _charge(RESOLVED_BYTES)
    for gpus in (1, 8):
        cards = [(_query(i, "inference"), gpus, 80.0, "SXM4", "NVLink", "A100") for i in range(ENTRIES)]
        held = _held_per_entry(cards, lambda *card: _throughput(*card, bandwidth_gb_s=2039.0))
        assert held <= _charge(THROUGHPUT_MEMO_BYTES)


def _answers(i: int) -> tuple[Any, ...]:
    """What a new job's question works out through the memos: estimate, plans, a throughput."""
    query = _query(i, WORKLOADS[i % 3], batch=1 + i % 7)
    found = cached_estimate(query)
    plans = [per_gpu_plan(found, gpus) for gpus in (1, 2, 8)]
    speed = _throughput(query, 1, 80.0, "SXM4", None, "A100", bandwidth_gb_s=2039.0) if i % 3 == 0 else None
    return found.model_dump_json(), plans, speed


def test_the_memos_stay_within_their_bound_under_many_distinct_jobs_and_answer_as_the_estimator_does() -> None:
    before = memo.max_bytes()
    try:
        memo.bound(0)  # nothing kept: every answer is the estimator's own
        plain = [_answers(i) for i in range(40)]
        bound = 64 * 1024
        memo.bound(bound)
        for i in range(600):  # distinct jobs, as clients may ask them: a few hundred kilobytes' worth
            _answers(i)
            assert 0 < memo.held_bytes() <= bound
        assert [_answers(i) for i in range(40)] == plain  # again: answers unchanged, kept or not
        assert [_answers(i) for i in range(560, 600)] == [_answers(i) for i in range(560, 600)]  # kept ones
    finally:
        memo.bound(before)


def test_a_server_bounds_the_memos_by_their_share_of_the_question_memo(tmp_path: Any) -> None:
    from api.state import ESTIMATOR_MEMO_SHARE, AppState
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    before = memo.max_bytes()
    settings = Settings(question_memo_mb=8, db=str(tmp_path / "memo.duckdb"))
    store = PriceStore(settings, settings.db)
    try:
        state = AppState(store, settings)
        share = 8 * 2**20 // ESTIMATOR_MEMO_SHARE
        assert memo.max_bytes() == share and state.reused._kept.max_bytes == 8 * 2**20 - share
    finally:
        store.close()
        memo.bound(before)
