"""Benchmark: history, day snapshots and on-demand digests on a database with 1,000,000 observations.

The database is the one `benchmarks/api_cheapest.py` seeds (2,000 offers, 500 observations each,
one round every 525 minutes, about six months). Its observations all hang off one synthetic run; for
snapshots and digests each round of 2,000 observations is then given its own successful run per
provider (1,000 runs), as collection rounds would have produced them, and one offer in seven costs
5% more in every other block of three rounds (so digests have changes to find).

Each figure is the median wall time of answering through the real app in-process (FastAPI
TestClient: parameter parsing, query, JSON), with a new question each time so no cache helps.

    python benchmarks/history.py [--offers 2000] [--observations 1000000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_cheapest import seed  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from api.app import create_app  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore  # noqa: E402


def split_into_runs(db: Path, offers: int) -> tuple[str, str]:
    """One successful run per provider and round; returns the first and last observation day."""
    store = PriceStore(Settings(db=db))
    cur = store.cursor()
    cur.execute(
        f"""
        INSERT INTO runs (run_id, provider, scope, pricings, started_at, finished_at, status, error, quote_count,
                          rejected_count, rejected, notes, offline, stale_after_minutes)
        SELECT 100000 + o.rnd * 2 + p.idx, p.provider, 'all', ['on_demand', 'spot', 'monthly', 'reserved_1y',
               'reserved_3y'], o.ts - INTERVAL 1 MINUTE, o.ts, 'ok', NULL, {offers // 2}, 0, NULL, NULL, false, 2880
        FROM (SELECT DISTINCT (observation_id - 10000000) // {offers} AS rnd, observed_at AS ts FROM observations) o
        CROSS JOIN (VALUES ('aws', 0), ('azure', 1)) p(provider, idx)
        """
    )
    cur.execute(
        f"""UPDATE observations SET run_id = 100000 + ((observation_id - 10000000) // {offers}) * 2
                                      + CASE WHEN provider = 'aws' THEN 0 ELSE 1 END"""
    )
    cur.execute(
        f"""UPDATE observations SET price = price * 1.05, cny_per_hour = cny_per_hour * 1.05,
                   cny_per_gpu_hour = cny_per_gpu_hour * 1.05, cny_per_gb_hour = cny_per_gb_hour * 1.05
            WHERE ((observation_id - 10000000) // {offers} // 3) % 2 = 1
              AND ((observation_id - 10000000) % {offers}) % 7 = 0"""
    )
    first, last = cur.execute("SELECT min(observed_at)::DATE, max(observed_at)::DATE FROM observations").fetchone()
    runs = cur.execute("SELECT count(*) FROM runs WHERE run_id >= 100000").fetchone()[0]
    print(f"split the observations into {runs:,} runs ({first} … {last})")
    store.close()
    return str(first), str(last)


def timed(client: TestClient, urls: list[str]) -> tuple[float, int]:
    """Median milliseconds over `urls`, and the size of the last answer."""
    timings, size = [], 0
    for url in urls:
        start = time.perf_counter()
        response = client.get(url)
        timings.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.text
        size = len(response.content)
    return statistics.median(timings), size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        seed(db, args.offers, args.observations)
        first, last = split_into_runs(db, args.offers)
        settings = Settings(db=db, digest_time_zone="UTC")
        store = PriceStore(settings)
        n = args.repeat
        with TestClient(create_app(settings, store=store, schedule=False)) as client:
            cases = {
                "one offer, all 6 months (500 points)": [
                    f"/offers/history?provider=aws&region=region-{i}&sku=sku-0&pricing=on_demand&since={first}&until={last}"
                    for i in range(0, 2 * n, 2)
                ],
                "one region, 30 days (all its offers)": [
                    f"/offers/history?provider=azure&region=region-{i}&since=2026-01-01&until=2026-01-31"
                    for i in range(n)
                ],
                "one provider, 7 days (1,000 series)": [
                    f"/offers/history?provider=aws&since=2026-03-01&until=2026-03-07&limit={4000 + i}" for i in range(n)
                ],
                "snapshot of a day (/offers?date=)": [
                    f"/offers?date=2026-02-{10 + i:02d}&include_stale=true&limit=5000" for i in range(n)
                ],
                "digest of a day, built on demand": [f"/digest?date=2026-04-{10 + i:02d}" for i in range(n)],
            }
            print(f"{'question':<40}{'median ms':>10}{'answer bytes':>14}")
            for name, urls in cases.items():
                median, size = timed(client, urls)
                print(f"{name:<40}{median:>10.1f}{size:>14,}")
            digest = client.get("/digest?date=2026-04-10").json()
            print(f"digest of 2026-04-10: {digest['summary']} ({len(digest['cheapest'])} cheapest rows)")
        store.close()


if __name__ == "__main__":
    main()
