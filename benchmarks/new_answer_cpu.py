"""Benchmark (issue 14, in process): the CPU one new `/cheapest?mem=…&hours=…` answer costs in the
front door (api.answer_cache.from_memory: the memory look-up that misses, the question read, its answer
written and kept for repeats), beside the same in another checkout (the reference, e.g. `main`).

Each side runs in its own process over the same database (the every-card catalog of
benchmarks/every_question.py, one round of observations), fed blocks of new questions drawn as the
benchmark's wrk script draws them (random `mem`, `hours` with six decimals, one GPU model), the two
sides' blocks alternating so a change in the shared host's speed hits both. Each question is timed
in CPU (`time.process_time`); a block's figure is its median, the printed figure the median of the
blocks', and the ratio the median of the rounds' reference / ours.

    python benchmarks/new_answer_cpu.py --reference /tmp/main-tree [--offers 2000] [--rounds 9] [--block 3000]

`--reference` is a checkout of the code to compare with (`git archive main | tar -x -C DIR`); the
database is built under `--cache` the first time (one round of observations: a few seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMS = (16, 24, 40, 48, 60, 80, 96, 141, 160, 192, 320, 640)
GPUS_ASKED = ("A100", "H100", "L4", "A10G", "RTX4090", "L40S", "V100", "H200", "MI300X", "T4")


def database(cache: Path, offers: int) -> tuple[Path, datetime]:
    """The every-card catalog with one round of observations, built once under `cache`."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from every_question import NOW_FILE, build, offline_templates

    db = cache / f"offers-{offers}-one-round.duckdb"
    stamp = cache / f"{db.stem}.{NOW_FILE}"
    if not (db.exists() and stamp.exists()):
        build(db, offline_templates(cache), offers, offers)
    return db, datetime.fromisoformat(stamp.read_text().strip())


def questions(rng: random.Random, count: int) -> list[bytes]:
    return [
        f"mem={rng.choice(MEMS)}&hours={rng.random() * 2000:.6f}&gpu={rng.choice(GPUS_ASKED)}".encode()
        for _ in range(count)
    ]


def worker(db: Path, now: str) -> None:
    """Answer blocks of new questions read from stdin (`count seed` a line); print each block's figures."""
    from api.answer_cache import from_memory
    from api.answers import cheapest_answer
    from api.query import CheapestParams
    from api.state import AppState
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    moment = datetime.fromisoformat(now)
    settings = Settings(db=db, digest_time_zone="UTC")
    state = AppState(PriceStore(settings), settings, clock=lambda: moment)
    cheapest_answer(state, CheapestParams.model_validate({"mem": "60", "hours": "1"}))  # offers and columns loaded
    assert state.answers_from_memory()
    clock = time.process_time
    print(json.dumps({"code": str(Path(sys.modules["api"].__file__).parent.parent)}), flush=True)
    for line in sys.stdin:
        count, seed = (int(word) for word in line.split())
        asked = questions(random.Random(seed), count)
        timings = []
        started = clock()
        for query in asked:
            start = clock()
            found = from_memory(state, "/cheapest", query)
            timings.append(clock() - start)
            assert found is not None and found[1] == b"computed"
        total = clock() - started
        print(json.dumps({"median_ms": statistics.median(timings) * 1000, "mean_ms": total * 1000 / count}), flush=True)


class Side:
    def __init__(self, code: Path, db: Path, now: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(code), "PYTHONDONTWRITEBYTECODE": "1"}
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(db), now]
        self.process = subprocess.Popen(command, env=env, cwd=code, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)  # fmt: skip
        self.code = json.loads(self._line())["code"]

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the worker over {self.code if hasattr(self, 'code') else '?'} stopped")
        return line

    def block(self, count: int, seed: int) -> dict[str, float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{count} {seed}\n")
        self.process.stdin.flush()
        return json.loads(self._line())

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--cache", type=Path, default=Path("/var/tmp/new-answer-cpu"))
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--block", type=int, default=3000, help="new questions per block")
    parser.add_argument("--worker", nargs=2, metavar=("DB", "NOW"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker[0]), args.worker[1])
        return
    if args.reference is None:
        parser.error("--reference is required: a checkout of the code to compare with")
    args.cache.mkdir(parents=True, exist_ok=True)
    db, built_at = database(args.cache, args.offers)
    now = (built_at.replace(tzinfo=UTC) + timedelta(minutes=10)).replace(tzinfo=None).isoformat()
    copy = db.with_suffix(".reference.duckdb")  # one writer per database file: the reference reads its own copy
    shutil.copyfile(db, copy)
    ours, reference = Side(ROOT, db, now), Side(args.reference.resolve(), copy, now)
    try:
        ours.block(args.block, 0)  # warm both: every question's answer without hours worked out once
        reference.block(args.block, 0)
        rows = []
        for round_ in range(args.rounds):
            seed = round_ + 1  # the same questions on both sides in a round
            rows.append((ours.block(args.block, seed), reference.block(args.block, seed)))
    finally:
        ours.stop()
        reference.stop()
    median = statistics.median
    ours_ms = median(a["median_ms"] for a, _ in rows)
    reference_ms = median(b["median_ms"] for _, b in rows)
    ratio = median(b["median_ms"] / a["median_ms"] for a, b in rows)
    mean_ratio = median(b["mean_ms"] / a["mean_ms"] for a, b in rows)
    print(f"{args.offers:,} offers, {args.rounds} rounds of {args.block:,} new mem questions per side, interleaved")
    print(f"  ours      ({ours.code}): median {ours_ms:.4f} ms CPU, mean {median(a['mean_ms'] for a, _ in rows):.4f}")
    print(f"  reference ({reference.code}): median {reference_ms:.4f} ms CPU, "
          f"mean {median(b['mean_ms'] for _, b in rows):.4f}")  # fmt: skip
    each = ", ".join(f"{a['median_ms']:.4f}/{b['median_ms']:.4f}" for a, b in rows)
    print(f"  reference / ours: {ratio:.2f}× (medians), {mean_ratio:.2f}× (means); rounds (ours/reference): {each}")


if __name__ == "__main__":
    main()
