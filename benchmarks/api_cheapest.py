"""Benchmark: `/cheapest?mem=60GB&hours=200` over real HTTP, beside a trivial endpoint; and the
same endpoint asked by model and workload (the estimator), cold and repeated.

Machines here are noisy, so the figure that matters is a ratio measured in the same run: the
cheapest endpoint's requests/s against a trivial FastAPI endpoint that returns a fixed small JSON
answer from the same server (uvicorn, one worker). Load comes from `wrk` (Debian package `wrk`)
at 1 and at 8 connections. The database holds 2,000 current offers and 1,000,000 observations.

Targets (issue 2): p50 ≤ 2 ms at one connection; at 8 connections at least half the trivial
endpoint's requests/s. Estimator queries (issue 5) go through the same caches: the estimate is made
once per uncached question and each GPU count is planned once, not once per offer. The cost of a whole
job (issue 11, `tokens=`) times each option once per distinct card and GPU count. Without `wrk` the
uncached answers are still measured and the load runs are skipped.

    python benchmarks/api_cheapest.py [--seconds 10] [--offers 2000] [--observations 1000000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pricedb.models import FxRate, Pricing, RunStatus  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore, RunRecord, utc_naive  # noqa: E402

CHEAPEST = "/cheapest?mem=60GB&hours=200"
BY_MODEL = "/cheapest?model=llama-2-70b&workload=inference&precision=int4&batch=16&context=4096&hours=200"
BY_WORK = "/cheapest?model=qwen2.5-7b&workload=full_finetune&tokens=2000000000"
TRIVIAL = "/bench/trivial"


def seed(db: Path, offers: int, observations: int) -> None:
    settings = Settings(db=db)
    store = PriceStore(settings)
    now = datetime.now(UTC)
    day = now.date()
    store.record_fx(
        RunRecord("fx", "daily", frozenset(), now, now, RunStatus.OK, False, 2880),
        [FxRate(date=day, currency=c, rate=r, source="bench") for c, r in (("USD", 1.05), ("CNY", 7.6))],
    )
    providers = ["aws", "azure"]
    per_provider = offers // len(providers)
    cur = store.cursor()
    for index, provider in enumerate(providers):
        record = RunRecord(provider, "all", frozenset(Pricing), now, now, RunStatus.OK, False, 2880)
        run_id = store._insert_run(cur, record, per_provider)
        # Synthetic but plausible rows: 8×40GB / 8×80GB / 1×80GB machines across many regions.
        cur.execute(
            f"""
            INSERT INTO offers
            SELECT i + {index * per_provider}, {run_id}, '{provider}', 'region-' || (i % 250), 'sku-' || (i // 250),
                   'A100', CASE WHEN i % 3 = 0 THEN 40.0 ELSE 80.0 END, CASE WHEN i % 5 = 0 THEN 1 ELSE 8 END,
                   'SXM4', 'NVLink', CASE WHEN i % 2 = 0 THEN 'on_demand' ELSE 'spot' END,
                   5.0 + (i % 97) * 0.37, 'USD', 'hour', NULL, 1, 60, 'available', NULL, NULL, NULL, NULL,
                   'https://example.test/', TIMESTAMP '{utc_naive(now).isoformat()}', false,
                   7.6 / 1.05, DATE '{day.isoformat()}', NULL, NULL, NULL, NULL,
                   CASE WHEN i % 5 = 0 THEN 24 ELSE 96 END, CASE WHEN i % 5 = 0 THEN 220.0 ELSE 1152.0 END,
                   NULL, NULL
            FROM range({per_provider}) t(i)
            """
        )
    cur.execute(
        """UPDATE offers SET cny_per_hour = price * fx_rate, cny_per_gpu_hour = price * fx_rate / gpu_count,
                  cny_per_gb_hour = price * fx_rate / (gpu_count * gpu_memory_gb)"""
    )
    start = utc_naive(now - timedelta(days=365))
    cur.execute(
        f"""
        INSERT INTO observations
        SELECT 10000000 + i, 1, provider, region, sku, gpu_model, gpu_memory_gb, gpu_count, form_factor,
               interconnect, pricing, price * (0.9 + (i % 20) / 100.0), currency, unit, term_hours,
               billing_increment_s, billing_minimum_s, availability, list_price, tax_included, price_steps, notes,
               source_url, TIMESTAMP '{start.isoformat()}' + to_minutes(CAST(i // {offers} * 525 AS BIGINT)),
               offline, fx_rate, fx_date, fx_note, cny_per_hour, cny_per_gpu_hour, cny_per_gb_hour, vcpus, memory_gib,
               gpu_partition, gpu_fraction
        FROM range({observations}) t(i) JOIN offers o ON o.observation_id = i % {offers}
        """
    )
    counts = cur.execute("SELECT (SELECT count(*) FROM offers), (SELECT count(*) FROM observations)").fetchone()
    print(f"seeded {counts[0]:,} current offers and {counts[1]:,} observations in {db}")
    store.close()


def serve(db: Path, port: int) -> None:
    """Server process: the real app plus one trivial endpoint, one uvicorn worker."""
    import uvicorn
    from fastapi.responses import JSONResponse

    from api.app import create_app

    app = create_app(Settings(db=db), schedule=False)

    @app.get(TRIVIAL)
    async def trivial() -> JSONResponse:
        return JSONResponse({"status": "ok", "answer": 42})

    uvicorn.run(app, host="127.0.0.1", port=port, workers=1, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("server did not start")


def _to_ms(value: str) -> float:
    number, unit = re.match(r"([\d.]+)(us|ms|s)", value).groups()
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def wrk(url: str, connections: int, seconds: int) -> tuple[float, float]:
    """(requests/s, p50 latency in ms)."""
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = _to_ms(re.search(r"50%\s+(\S+)", out).group(1))
    if "Non-2xx" in out:
        raise SystemExit(f"errors during the run:\n{out}")
    return rps, p50


def cold_answers(base: str, count: int = 30) -> list[float]:
    """Milliseconds per uncached answer: each question is new, so it is computed over all offers."""
    import httpx

    timings = []
    with httpx.Client() as client:
        client.get(base + CHEAPEST).raise_for_status()  # loads current offers once
        for extra in range(count):
            start = time.perf_counter()
            client.get(f"{base}/cheapest?mem=60GB&hours={201 + extra}").raise_for_status()
            timings.append((time.perf_counter() - start) * 1000)
    return timings


def cold_estimator_answers(base: str, count: int = 30) -> tuple[float, list[float]]:
    """Milliseconds for the first estimator question the server ever sees (the estimator's own caches
    cold too), then per uncached answer to the same job with other hours (a miss of the answer cache)."""
    import httpx

    with httpx.Client() as client:
        start = time.perf_counter()
        client.get(base + BY_MODEL).raise_for_status()
        first = (time.perf_counter() - start) * 1000
        timings = []
        for extra in range(count):
            start = time.perf_counter()
            client.get(base + BY_MODEL.replace("hours=200", f"hours={201 + extra}")).raise_for_status()
            timings.append((time.perf_counter() - start) * 1000)
    return first, timings


def cold_work_answers(base: str, count: int = 30) -> list[float]:
    """Milliseconds per uncached answer to the cost of a whole job (each with another amount of work)."""
    import httpx

    timings = []
    with httpx.Client() as client:
        client.get(base + BY_WORK).raise_for_status()
        for extra in range(count):
            start = time.perf_counter()
            client.get(
                base + BY_WORK.replace("tokens=2000000000", f"tokens={2_000_000_001 + extra}")
            ).raise_for_status()
            timings.append((time.perf_counter() - start) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--serve", nargs=2, metavar=("DB", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]))
        return
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        seed(db, args.offers, args.observations)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(db), str(port)], env=env)
        try:
            wait_until_up(port)
            base = f"http://127.0.0.1:{port}"
            misses = cold_answers(base)
            print(f"uncached answers (distinct questions, median of {len(misses)}): {statistics.median(misses):.2f} ms")
            first, by_model = cold_estimator_answers(base)
            print(f"by model, first question (estimator cold): {first:.2f} ms")
            print(f"by model, uncached answers (median of {len(by_model)}): {statistics.median(by_model):.2f} ms")
            by_work = cold_work_answers(base)
            print(
                f"by work (tokens=), uncached answers (median of {len(by_work)}): {statistics.median(by_work):.2f} ms"
            )
            if shutil.which("wrk") is None:
                print("wrk not found (apt-get install wrk): load runs skipped")
                return
            print(f"wrk, {args.seconds} s per run, one uvicorn worker, {os.cpu_count()} CPUs")
            print(f"{'endpoint':<34}{'conns':>6}{'req/s':>10}{'p50 ms':>9}   (by model = {BY_MODEL})")
            results = {}
            for connections in (1, 8):
                for name, path in (("trivial", TRIVIAL), ("cheapest", CHEAPEST), ("by model", BY_MODEL)):
                    rps, p50 = wrk(base + path, connections, args.seconds)
                    results[(name, connections)] = (rps, p50)
                    print(f"{path[:34]:<34}{connections:>6}{rps:>10,.0f}{p50:>9.3f}")
            c1, c8 = results[("cheapest", 1)], results[("cheapest", 8)]
            t8 = results[("trivial", 8)]
            print(f"cheapest p50 at 1 connection: {c1[1]:.3f} ms (target ≤ 2 ms)")
            print(f"cheapest/trivial req/s at 8 connections: {c8[0] / t8[0]:.2f} (target ≥ 0.50)")
            m1, m8 = results[("by model", 1)], results[("by model", 8)]
            print(f"by model p50 at 1 connection: {m1[1]:.3f} ms; by model/trivial at 8: {m8[0] / t8[0]:.2f}")
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
