"""Benchmark: what a `gpuprice` command costs to start, in CPU seconds of the whole process (the
command's imports are most of it; the test suite starts the CLI as a process dozens of times).

Each command runs `--runs` times as `python -m api.cli …` from the checkout given (default: this
one), and the median CPU time (user + system, of the child) is printed beside the median of a bare
`python -c pass`, measured in the same run, and as a multiple of it. Another checkout (e.g. main
before the change) can be measured the same way with `--root`, so a before/after pair comes from one
run on one machine state:

    python benchmarks/cli_start.py [--runs 7] [--root /path/to/other/checkout ...]

With several checkouts, each command gets PASS when the last one's median is at most 0.8x the
first one's (round 4: a command imports only what it needs), else MISS.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_of(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def commands(db: Path) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "estimate --model llama-2-13b": ["estimate", "--model", "llama-2-13b", "--json"],
        "collect --offline lambda": ["collect", "--offline", "--db", str(db), "lambda"],
        "providers": ["providers", "--json", "--db", str(db)],
        "cheapest --mem 60GB": ["cheapest", "--mem", "60GB", "--json", "--db", str(db)],
        "history": ["history", "--json", "--db", str(db)],
    }


def measure(root: Path, runs: int, folder: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUPRICE_")}
    env.update(PYTHONPATH=str(root), GPUPRICE_EXPORT_DIR=str(folder / "exports"))
    db = folder / "bench.duckdb"
    db.unlink(missing_ok=True)
    python = [sys.executable]
    subprocess.run([*python, "-m", "api.cli", "collect", "--offline", "--db", str(db), "lambda"], env=env, cwd=root,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # fmt: skip
    figures = {"python -c pass": statistics.median(cpu_of([*python, "-c", "pass"], env, root) for _ in range(runs))}
    for name, argv in commands(db).items():
        figures[name] = statistics.median(cpu_of([*python, "-m", "api.cli", *argv], env, root) for _ in range(runs))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--root", type=Path, action="append", help="a checkout to measure (default: this one)")
    args = parser.parse_args()
    roots = args.root or [ROOT]
    folder = Path(tempfile.mkdtemp(prefix="gpuprice-cli-start-"))
    try:
        results = {root: measure(root, args.runs, folder) for root in roots}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"CPU seconds per start, median of {args.runs} (load average {os.getloadavg()[0]:.1f})")
    names = list(results[roots[0]])
    header = "".join(f"{str(root)[-28:]:>30}" for root in roots)
    print(f"{'command':32}{header}")
    for name in names:
        bare = [results[root]["python -c pass"] for root in roots]
        cells = []
        for root, base in zip(roots, bare, strict=True):
            value = results[root][name]
            cells.append(f"{value:8.3f} s ({value / base:5.1f}x bare)".rjust(30))
        verdict = ""
        if len(roots) > 1 and name != "python -c pass":
            first, last = results[roots[0]][name], results[roots[-1]][name]
            verdict = "  PASS" if last <= 0.8 * first else "  MISS"
        print(f"{name:32}{''.join(cells)}{verdict}")


if __name__ == "__main__":
    main()
