"""Benchmark: what `/healthz` costs once it also reads the last export attempt from `runs`.

`/healthz` answers `degraded` when the newest export attempt failed, which it finds with one
top-1 query over `runs`, run again only after a write (the store's version moves). A server
collecting every provider scope every hour or so piles up about 100,000 runs a year; this seeds
that many (every fifth one with a failed export, the newest ones written fine), then times
`/healthz` through the real app in-process (FastAPI TestClient) between writes, and what a
write makes it redo once: the last-export query, and (for scale, not new) the current offers.

    python benchmarks/healthz_runs.py [--runs 100000] [--repeat 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from api.app import create_app  # noqa: E402
from pricedb import clock  # noqa: E402
from pricedb.queries import current_offers, last_export  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore  # noqa: E402


def seed(store: PriceStore, runs: int) -> None:
    store.cursor().execute(
        """
        INSERT INTO runs (run_id, provider, scope, pricings, started_at, finished_at, status, error, quote_count,
                          rejected_count, rejected, notes, offline, stale_after_minutes, exported_at, export_error)
        SELECT i, 'p' || (i % 13), 'all', ['on_demand'], TIMESTAMP '2026-01-01' + INTERVAL (i * 5) MINUTE,
               TIMESTAMP '2026-01-01' + INTERVAL (i * 5 + 1) MINUTE, 'ok', NULL, 10, 0, NULL, NULL, false, 2880,
               TIMESTAMP '2026-01-01' + INTERVAL (i * 5 + 2) MINUTE,
               CASE WHEN i % 5 = 0 AND i < ? THEN 'price sheets not written to /x: Permission denied' END
        FROM range(1, ? + 1) t(i)
        """,
        [runs - 10, runs],
    )


def percentiles(seconds: list[float]) -> str:
    seconds = sorted(seconds)
    p99 = seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))]
    return f"median {statistics.median(seconds) * 1000:6.2f} ms   p99 {p99 * 1000:6.2f} ms"


def timed(call: Callable[[], object], repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(db=Path(folder) / "bench.duckdb", export_dir=Path(folder) / "exports")
        store = PriceStore(settings)
        seed(store, args.runs)
        app = create_app(settings, store=store, schedule=False)
        with TestClient(app) as client:
            health = client.get("/healthz").json()
            assert health["status"] == "ok" and health["exports"]["error"] is None, health

            def probe() -> None:
                assert client.get("/healthz").status_code == 200

            steady = timed(probe, args.repeat)
            query = timed(lambda: last_export(store.cursor()), args.repeat)
            offers = timed(lambda: current_offers(store.cursor(), clock.now_naive()), args.repeat)
        store.close()
    print(f"/healthz on a database with {args.runs:,} runs, {args.repeat} requests each:")
    print(f"  /healthz, no write between probes        {percentiles(steady)}")
    print(f"  after a write: the last-export query     {percentiles(query)}")
    print(f"  after a write: current offers (for scale) {percentiles(offers)}")


if __name__ == "__main__":
    main()
