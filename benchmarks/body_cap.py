"""Benchmark: a 200 MB answer body against the body cap (GPUPRICE_HTTP_MAX_BODY_MB).

Starts a local HTTP server that answers every request with 200 MB (in 1 MiB writes), then, in a
child process per case (so `ru_maxrss` is that run's own peak, imports included), runs one real
provider run (`collectors.runner.run_provider` for Lambda, its base URL pointed at the server) and
reports: the run's status and error, seconds, peak RSS, and the longest event-loop stall seen by a
10 ms ticker while the run went on. Cases:

- the default cap (64 MB), body without Content-Length (the cap is found while reading);
- the default cap, body with Content-Length (refused before reading);
- a cap of 1024 MB, i.e. the whole body read (what happened before the cap), for comparison.

Target: with the cap, the run fails with the reason and peak RSS stays under 300 MB.

    .venv/bin/python benchmarks/body_cap.py [--size-mb 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def serve(size: int, announce_length: bool) -> ThreadingHTTPServer:
    chunk = b"[" + b"0," * (2**19 - 1)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if announce_length:
                self.send_header("Content-Length", str(size))
            self.end_headers()
            sent = 0
            try:
                while sent < size:
                    piece = chunk[: min(len(chunk), size - sent)]
                    self.wfile.write(piece)
                    sent += len(piece)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def child(url: str, cap_mb: float | None) -> None:
    sys.path.insert(0, str(ROOT))
    from pydantic import SecretStr

    from collectors.lambda_ import LambdaCollector
    from collectors.runner import run_provider
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    folder = Path(tempfile.mkdtemp(prefix="gpuprice-bench-"))
    extra = {"http_max_body_mb": cap_mb} if cap_mb is not None else {}
    settings = Settings(
        db=folder / "bench.duckdb",
        export_dir=folder / "exports",
        base_urls={"lambda": url},
        lambda_api_key=SecretStr("benchmark-placeholder-key"),
        retry_attempts=1,
        **extra,
    )
    store = PriceStore(settings)
    collector = LambdaCollector(settings)

    async def main() -> tuple[object, float]:
        stall, stop = 0.0, False

        async def ticker() -> None:
            nonlocal stall
            while not stop:
                before = time.monotonic()
                await asyncio.sleep(0.01)
                stall = max(stall, time.monotonic() - before - 0.01)

        tick = asyncio.create_task(ticker())
        summary = await run_provider(collector, collector.scope(), store, settings)
        stop = True
        await tick
        return summary, stall

    started = time.monotonic()
    summary, stall = asyncio.run(main())
    store.close()
    print(
        json.dumps(
            {
                "cap_mb": settings.http_max_body_mb,
                "status": summary.status.value,
                "error": summary.error,
                "seconds": round(time.monotonic() - started, 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                "max_loop_stall_ms": round(stall * 1000, 1),
            }
        )
    )


def run_case(size: int, announce_length: bool, cap_mb: float | None) -> dict[str, object]:
    server = serve(size, announce_length)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        args = [sys.executable, __file__, "--child", url] + (["--cap-mb", str(cap_mb)] if cap_mb is not None else [])
        out = subprocess.run(args, capture_output=True, text=True, check=True, cwd=ROOT).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--child", metavar="URL")
    parser.add_argument("--cap-mb", type=float)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.cap_mb)
        return
    size = args.size_mb * 2**20
    print(f"answer body: {args.size_mb} MB of JSON-looking bytes from a local server; one Lambda run per case")
    cases = [
        ("default cap, no Content-Length", False, None),
        ("default cap, Content-Length sent", True, None),
        ("cap 1024 MB (body read whole)", False, 1024.0),
    ]
    for title, announce, cap in cases:
        result = run_case(size, announce, cap)
        failed_properly = result["status"] == "failed" and "body cap" in str(result["error"])
        print(
            f"{title:34s} status={result['status']:6s} seconds={result['seconds']:6.2f} "
            f"peak_rss={result['peak_rss_mb']:7.1f} MB max_loop_stall={result['max_loop_stall_ms']:7.1f} ms "
            f"failed_with_reason={'yes' if failed_properly else 'no'}"
        )
        print(f"    error: {result['error']}")


if __name__ == "__main__":
    main()
