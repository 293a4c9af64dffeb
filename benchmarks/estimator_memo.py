"""Benchmark (in process): what the estimator's memos (api.estimator.memo) save a by-model question,
at their bound as served and beside keeping nothing or keeping everything (as the lru caches before
them did), in interleaved blocks of the same process.

Over a database of `--offers` current offers built as every_question.py builds them (one round of
observations), through the path a server takes before routing (api.answer_cache.answer_from_memory),
each block asks `--jobs` jobs never asked before (a random context), each followed by the same job
with a provider filter (a question the question memo has not seen: the estimator's memos may serve
it) and by the job asked 60 jobs earlier with another filter. Printed for each bound: the median CPU
(`time.process_time`) of each kind of question and its ratio to keeping everything (the median of the
blocks' ratios).

    python benchmarks/estimator_memo.py --cache /var/tmp/gpuprice-bench [--offers 50000] [--blocks 5] [--jobs 100]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from datetime import UTC, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("llama-2-7b", "llama-2-13b", "llama-2-70b", "qwen2.5-14b")  # every_question.MODELS_ASKED
KINDS = ("new job", "same job, a filter", "job 60 earlier, a filter")
EARLIER = 60


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True, help="folder keeping the generated databases")
    parser.add_argument("--offers", type=int, default=50_000)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    import every_question

    from api.answer_cache import answer_from_memory
    from api.answers import _columns
    from api.estimator import memo
    from api.state import AppState
    from pricedb import clock
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    db, built_at = every_question.database(args.cache, args.offers, args.offers)
    moment = (built_at + timedelta(minutes=10)).replace(tzinfo=UTC)
    clock.set_clock(lambda: moment)
    settings = Settings(db=db, digest_time_zone="UTC", answer_cache_mb=0)
    state = AppState(PriceStore(settings), settings)
    _columns(state, state.current())
    served = memo.max_bytes()
    bounds = {"none kept": 0, f"as served ({served / 2**20:g} MB)": served, "all kept (1 GB)": 2**30}
    rng = random.Random(13)

    def ask(query: str) -> float:
        start = time.process_time()
        assert answer_from_memory(state, f"{query}&hours={rng.uniform(0, 2000):.6f}".encode()) is not None
        return (time.process_time() - start) * 1000

    medians: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in bounds}
    every: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in bounds}
    for _ in range(args.blocks):
        for name, bound in bounds.items():
            memo.bound(bound)
            state.reused = type(state.reused)(state.reused._kept.max_bytes)  # no question kept
            spent: dict[str, list[float]] = {kind: [] for kind in KINDS}
            jobs: list[str] = []
            for i in range(args.jobs):
                job = (f"model={rng.choice(MODELS)}&workload={rng.choice(('inference', 'lora', 'qlora'))}"
                       f"&context={rng.randrange(500, 60000)}&batch={rng.randrange(1, 17)}")  # fmt: skip
                jobs.append(job)
                spent[KINDS[0]].append(ask(job))
                spent[KINDS[1]].append(ask(f"{job}&provider=aws,gcp,azure"))
                if i >= EARLIER:
                    spent[KINDS[2]].append(ask(f"{jobs[i - EARLIER]}&provider=lambda,runpod,vast"))
            for kind, values in spent.items():
                every[name][kind] += values
                medians[name][kind].append(statistics.median(values))
    memo.bound(served)
    reference = list(bounds)[-1]
    print(f"{args.offers:,} offers; {args.blocks} blocks of {args.jobs} new jobs; CPU per question, median")
    for name in bounds:
        parts = []
        for kind in KINDS:
            ratio = statistics.median(a / b for a, b in zip(medians[name][kind], medians[reference][kind], strict=True))
            parts.append(f"{kind} {statistics.median(every[name][kind]):.3f} ms ({ratio:.2f}x all kept)")
        print(f"  {name:22s} " + "; ".join(parts))


if __name__ == "__main__":
    main()
