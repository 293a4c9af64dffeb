"""Benchmark: does the API stay responsive while heavy questions run, and does its memory stay bounded?

1. Liveness under load. The database `benchmarks/api_cheapest.py` seeds (2,000 offers of every card,
   1,000,000 observations) behind a real server (uvicorn, one worker, loopback). 8 clients ask the heaviest
   history question there is, `/offers/history?since=2000-01-01&limit=500` (500 series × 500
   points), over and over, while a prober asks `/healthz` every 50 ms. Printed: `/healthz` latency
   (p50 / p99 / max) while the heavy questions ran, and what the heavy questions got (status,
   latency): 200, 422 (too broad) or 503 (over the per-request budget), never a frozen server.
   Run twice: with the default settings (250,000 points are more than `GPUPRICE_API_MAX_POINTS`
   allows, so the answer is a quick 422 saying how to narrow it), and with that bound raised so
   every heavy question is computed in full.
2. Memory of the answer cache. A fresh server answers 4,000 distinct large `/cheapest` questions
   (every A100 option, `limit=500`, a different `hours` each); the server's RSS is read before and
   after, against the cache's byte bound (`GPUPRICE_ANSWER_CACHE_MB`).

    python benchmarks/api_under_load.py [--seconds 20] [--answers 4000] [--cache-mb 64]

Settings given in the environment (`GPUPRICE_API_BUDGET_S`, `GPUPRICE_API_MAX_POINTS`, …) reach the
server, so a setting's effect can be measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_cheapest import free_port, load_average, seed, wait_until_up  # noqa: E402

SCRIPT = __file__
HEAVY = "/offers/history?since=2000-01-01&limit=500"
PROBE_EVERY_S = 0.05


def serve(db: Path, port: int) -> None:
    """Server process: the real app, one uvicorn worker, no scheduler."""
    import uvicorn

    from api.app import create_app
    from pricedb.settings import Settings

    uvicorn.run(create_app(Settings(db=db), schedule=False), host="127.0.0.1", port=port, log_level="warning")


class Server:
    def __init__(self, db: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
        self.process = subprocess.Popen([sys.executable, SCRIPT, "--serve", str(db), str(self.port)], env=environment)
        wait_until_up(self.port)
        self.base = f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def idle_probes(server: Server, count: int = 200) -> list[float]:
    """The reference: `/healthz` milliseconds on the same server with nothing else asked."""
    probes = []
    with httpx.Client(base_url=server.base, timeout=60) as client:
        for _ in range(count):
            start = time.monotonic()
            client.get("/healthz").raise_for_status()
            probes.append((time.monotonic() - start) * 1000)
            time.sleep(PROBE_EVERY_S)
    return probes


def under_load(server: Server, clients: int, seconds: float) -> None:
    idle = idle_probes(server)
    stop = threading.Event()
    heavy: list[tuple[int, float]] = []
    probes: list[float] = []
    busy = threading.Semaphore(0)  # released once per heavy request sent, so probes count only under load
    lock = threading.Lock()

    def heavy_client() -> None:
        with httpx.Client(base_url=server.base, timeout=600) as client:
            while not stop.is_set():
                busy.release()
                start = time.monotonic()
                status = client.get(HEAVY).status_code
                with lock:
                    heavy.append((status, time.monotonic() - start))

    def prober() -> None:
        with httpx.Client(base_url=server.base, timeout=600) as client:
            busy.acquire()  # the first heavy question is on its way
            while not stop.is_set():
                start = time.monotonic()
                response = client.get("/healthz")
                elapsed = time.monotonic() - start
                assert response.status_code == 200, response.text
                probes.append(elapsed * 1000)
                time.sleep(max(0.0, PROBE_EVERY_S - elapsed))

    threads = [threading.Thread(target=heavy_client) for _ in range(clients)]
    threads.append(threading.Thread(target=prober))
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    print(f"{clients} clients asking {HEAVY} for {seconds:g} s; /healthz every {PROBE_EVERY_S * 1000:g} ms")
    p99 = percentile(probes, 0.99)
    print(
        f"/healthz under load: {len(probes)} probes, p50 {statistics.median(probes):.1f} ms, "
        f"p99 {p99:.1f} ms, max {max(probes):.1f} ms (target p99 < 100 ms): {'PASS' if p99 < 100 else 'MISS'}"
    )
    print(
        f"/healthz idle, same server (reference): p50 {statistics.median(idle):.1f} ms, p99 "
        f"{percentile(idle, 0.99):.1f} ms; p99 under load ÷ idle {p99 / percentile(idle, 0.99):.1f}; {load_average()}"
    )
    outcomes = Counter(status for status, _ in heavy)
    for status, count in sorted(outcomes.items()):
        took = [t for s, t in heavy if s == status]
        print(f"heavy answers {status}: {count}, median {statistics.median(took):.2f} s, max {max(took):.2f} s")


def cache_memory(server: Server, answers: int, cache_mb: str) -> None:
    with httpx.Client(base_url=server.base, timeout=120) as client:
        client.get("/cheapest?mem=1&limit=500&hours=1").raise_for_status()  # current offers loaded
        before = server.rss_mb()
        sizes = []
        start = time.monotonic()
        for index in range(answers):
            response = client.get(f"/cheapest?mem=1&limit=500&hours={2 + index}")
            response.raise_for_status()
            sizes.append(len(response.content))
        took = time.monotonic() - start
        after = server.rss_mb()
    total = sum(sizes) / 2**20
    print(
        f"{answers:,} distinct /cheapest answers of {statistics.median(sizes) / 1024:.0f} KB "
        f"({total:,.0f} MB in all) in {took:.0f} s"
    )
    print(
        f"server RSS {before:.0f} MB before, {after:.0f} MB after (+{after - before:.0f} MB; "
        f"GPUPRICE_ANSWER_CACHE_MB={cache_mb})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--answers", type=int, default=4000)
    parser.add_argument("--cache-mb", default=os.environ.get("GPUPRICE_ANSWER_CACHE_MB", "64"))
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--observations", type=int, default=1_000_000)
    parser.add_argument("--serve", nargs=2, metavar=("DB", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]))
        return
    print(f"{os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        seed(db, args.offers, args.observations)
        for label, env in (
            ("default settings", {}),
            (
                "GPUPRICE_API_MAX_POINTS=300000: the heavy questions computed in full",
                {"GPUPRICE_API_MAX_POINTS": "300000"},
            ),
        ):
            print(f"--- {label}")
            server = Server(db, env)
            try:
                under_load(server, args.clients, args.seconds)
            finally:
                server.stop()
        if args.answers:
            print("--- answer cache")
            server = Server(db, {"GPUPRICE_ANSWER_CACHE_MB": args.cache_mb})
            try:
                cache_memory(server, args.answers, args.cache_mb)
            finally:
                server.stop()


if __name__ == "__main__":
    main()
