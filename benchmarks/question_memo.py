"""Benchmark (issue 14, memory): what the question memo holds for the benchmark's by-model jobs.

The 768 jobs `every_question.py` asks by model and workload (its NEW_MODEL_QUESTION: four models,
three workloads, four contexts, sixteen batch sizes), answered in this process through the path a
server takes before routing (api.answer_cache.answer_from_memory) over a database of `--offers`
current offers built as every_question.py builds them (one round of observations: only the current
offers matter here). Printed:

- per job, what answering it three times (three hours) allocated and stayed allocated (tracemalloc,
  after every cache outside the memo is warm) against what the memo charges it (`ReusedQuestions`);
- the memo after every job was asked twice in a random order: bytes charged, jobs kept, and the
  process's RSS, peak RSS and Python's allocated blocks before and after;
- CPU per answer (`time.process_time`, medians): a job asked for the first time, and a job kept.

Run it against another checkout (`--code /work/main`) for the reference, in the same session:

    python benchmarks/question_memo.py --cache /var/tmp/gpuprice-bench [--code DIR] [--memo-mb 96]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import random
import statistics
import sys
import time
import tracemalloc
from datetime import UTC, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = ("inference", "lora", "qlora")
CONTEXTS = (1024, 2048, 4096, 8192)
BATCHES = range(1, 17)
MODELS = ("llama-2-7b", "llama-2-13b", "llama-2-70b", "qwen2.5-14b")  # every_question.MODELS_ASKED


def jobs() -> list[str]:
    return [f"model={m}&workload={w}&context={c}&batch={b}"
            for m, w, c, b in itertools.product(MODELS, WORKLOADS, CONTEXTS, BATCHES)]  # fmt: skip


def rss_mb() -> tuple[float, float]:
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, required=True, help="folder keeping the generated databases")
    parser.add_argument("--code", type=Path, help="the checkout whose api/ and pricedb/ answer (default: this one)")
    parser.add_argument("--offers", type=int, default=50_000)
    parser.add_argument("--memo-mb", type=float, help="GPUPRICE_QUESTION_MEMO_MB (default: the checkout's)")
    parser.add_argument("--traced", type=int, default=24, help="jobs measured with tracemalloc")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if args.code is not None:
        sys.path.insert(0, str(args.code.resolve()))
    import every_question  # the database as the benchmark builds it

    if args.code is not None:  # every_question put this checkout first: the one asked for goes before it
        sys.path.insert(0, str(args.code.resolve()))
        for name in [n for n in sys.modules if n.split(".")[0] in ("api", "pricedb", "collectors")]:
            del sys.modules[name]
    import api
    from api.answer_cache import answer_from_memory
    from api.answers import _columns
    from api.state import AppState
    from pricedb import clock
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    db, built_at = every_question.database(args.cache, args.offers, args.offers)
    moment = (built_at + timedelta(minutes=10)).replace(tzinfo=UTC)
    clock.set_clock(lambda: moment)
    given = {} if args.memo_mb is None else {"question_memo_mb": args.memo_mb}
    # No answer cache: it would hold each answer (new hours each time: never asked again), which is not the memo's.
    settings = Settings(db=db, digest_time_zone="UTC", answer_cache_mb=0, **given)
    state = AppState(PriceStore(settings), settings)  # its clock: the one pinned above
    _columns(state, state.current())
    print(f"code: {Path(api.__file__).parent.parent}; {args.offers:,} offers; memo bound "
          f"{settings.question_memo_mb:g} MB")  # fmt: skip
    rng = random.Random(14)

    def ask(job: str) -> float:
        query = f"{job}&hours={rng.uniform(0, 2000):.6f}".encode()
        start = time.process_time()
        body = answer_from_memory(state, query)
        spent = time.process_time() - start
        assert body is not None, job
        return spent * 1000

    every = jobs()
    memo = type(state.reused)
    # Every cache outside the memo (estimates, throughput, offer pieces) warmed with every job once,
    # with no room in the memo (what the questions make is let go).
    state.reused = memo(0)
    for job in every:
        ask(job)
    gc.collect()
    rss_before, _ = rss_mb()
    state.reused = memo(int(settings.question_memo_mb * 2**20))
    new, again = [], []
    for round_ in range(2):
        order = every[:]
        rng.shuffle(order)
        for job in order:
            (new if round_ == 0 else again).append(ask(job))
    gc.collect()
    rss_after, peak = rss_mb()
    median = statistics.median
    print(f"every job asked twice, in a random order each time: memo {state.reused.bytes / 2**20:.1f} MB charged, "
          f"{len(state.reused)} of {len(every)} jobs kept; RSS {rss_before:.0f} -> {rss_after:.0f} MB "
          f"(+{rss_after - rss_before:.1f}), peak {peak:.0f} MB")  # fmt: skip
    print(f"CPU per answer: first round (every job new) median {median(new):.3f} ms; second round (kept or "
          f"let go) median {median(again):.3f} ms")  # fmt: skip

    state.reused = memo(2**40)
    try:  # the estimator's memos, bounded (a share of the question memo's): none keep anything while measured,
        from api.estimator import memo as estimator_memo  # so each question alone holds what it uses

        estimator_memo.bound(0)
    except ImportError:  # code from before them: their lru caches were warmed above with every job
        pass
    traced = rng.sample(every, args.traced)
    allocated, charged = [], []
    gc.collect()
    gc.freeze()  # what lives now is left out of the collections below
    for job in traced:
        gc.collect()
        tracemalloc.start()
        before, before_charged = tracemalloc.get_traced_memory()[0], state.reused.bytes
        for _ in range(3):
            ask(job)
        gc.collect()
        allocated.append(tracemalloc.get_traced_memory()[0] - before)
        tracemalloc.stop()
        charged.append(state.reused.bytes - before_charged)
    gc.unfreeze()
    ratios = [c / a for c, a in zip(charged, allocated, strict=True)]
    print(f"per job ({len(traced)} jobs, three hours each, tracemalloc): allocated median "
          f"{median(allocated) / 1024:.1f} KB (min {min(allocated) / 1024:.1f}, max {max(allocated) / 1024:.1f}); "
          f"charged median {median(charged) / 1024:.1f} KB; charged / allocated median {median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
