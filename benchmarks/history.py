"""Benchmark: history, day snapshots and on-demand digests on a database with 1,000,000 observations.

The database is the one `benchmarks/api_cheapest.py` seeds: the every-card catalog of
benchmarks/every_question.py's generator (the offline round's offers crossed with every card, 2,000
offers, 500 rounds over six months up to now, one successful run per provider and round, one offer
in seven 5% dearer in every other block of three rounds, so digests have changes to find).

Each figure is the median wall time of answering through the real app in-process (FastAPI
TestClient: parameter parsing, query, JSON), with a new question each time so no cache helps, beside
a trivial endpoint of the same app asked the same way (the reference, same run). Issue 6, which
brought history, snapshots and digests, sets no figure; the earlier runs' figures are the comparison.

    python benchmarks/history.py [--offers 2000] [--observations 1000000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_cheapest import load_average, seed  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from api.app import create_app  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore  # noqa: E402


def questions(store: PriceStore, n: int) -> dict[str, list[str]]:
    """`n` different questions per case, about offers, regions and days the database holds."""
    cur = store.cursor()
    first, last = cur.execute("SELECT min(observed_at)::DATE, max(observed_at)::DATE FROM observations").fetchone()
    offers = cur.execute(
        "SELECT provider, region, sku, pricing FROM offers ORDER BY observation_id LIMIT ?", [n]
    ).fetchall()
    regions = cur.execute(
        "SELECT provider, region FROM offers GROUP BY ALL ORDER BY count(*) DESC, provider, region LIMIT ?", [n]
    ).fetchall()
    provider, series = cur.execute(
        "SELECT provider, count(*) FROM offers GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1"
    ).fetchone()

    def day(k: int) -> str:
        return (first + timedelta(days=k)).isoformat()

    history = "/offers/history?"
    return {
        "one offer, all 6 months (500 points)": [
            history + urlencode({"provider": p, "region": r, "sku": s, "pricing": q, "since": first, "until": last})
            for p, r, s, q in offers
        ],
        "one region, 30 days (all its offers)": [
            history + urlencode({"provider": p, "region": r, "since": day(30), "until": day(60)}) for p, r in regions
        ],
        f"one provider, 7 days ({series:,} series)": [
            history + urlencode({"provider": provider, "since": day(90), "until": day(96), "limit": 4000 + i})
            for i in range(n)
        ],
        "snapshot of a day (/offers?date=)": [
            f"/offers?date={day(40 + i)}&include_stale=true&limit=5000" for i in range(n)
        ],
        "digest of a day, built on demand": [f"/digest?date={day(100 + i)}" for i in range(n)],
    }


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
        settings = Settings(db=db, digest_time_zone="UTC")
        store = PriceStore(settings)
        cases = questions(store, args.repeat)
        app = create_app(settings, store=store, schedule=False)

        @app.get("/bench/trivial")
        async def trivial() -> JSONResponse:
            return JSONResponse({"status": "ok", "answer": 42})

        with TestClient(app) as client:
            reference, _ = timed(client, ["/bench/trivial"] * args.repeat)
            print(f"{'question':<40}{'median ms':>10}{'÷ trivial':>10}{'answer bytes':>14}")
            print(f"{'trivial endpoint (reference)':<40}{reference:>10.2f}{1:>10.0f}{0:>14}")
            for name, urls in cases.items():
                median, size = timed(client, urls)
                print(f"{name:<40}{median:>10.1f}{median / reference:>10.0f}{size:>14,}")
            digest = client.get(cases["digest of a day, built on demand"][0]).json()
            print(f"digest of {digest['date']}: {digest['summary']} ({len(digest['cheapest'])} cheapest rows)")
        store.close()
    print(load_average())


if __name__ == "__main__":
    main()
