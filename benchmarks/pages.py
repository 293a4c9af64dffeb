"""Benchmark: the market page for 2,000 offers — server time and bytes.

Each figure is the median (and p95) of repeated runs, in-process (no network), for two views of
the page:
- render, new view: the page from the `/offers` answer, already built as after any `/offers`
  question, once another view with the same columns, currency and language has been shown since
  the data changed (its rows are then written: the filters, the order of rows, the template, gzip);
- render, cold: the same with nothing shown since the data changed (every row written);
- first view: the answer built too (the first request after a run lands; building the answer is
  what `/offers` itself costs);
- served: a whole GET through the app (middleware, routing) once the page is cached, as every
  repeated view is until the data changes.
Times are wall-clock and CPU (this thread's): on a shared machine the CPU time is the steadier.
The target (issue 13) is ≤ 20 ms server time and < 200 KB transferred per page.

    python benchmarks/pages.py [--offers 2000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from api.answers import offers_answer  # noqa: E402
from api.app import create_app  # noqa: E402
from api.limits import limits_of  # noqa: E402
from api.state import AppState  # noqa: E402
from api.web import market as market_view  # noqa: E402
from api.web.html import Page, Rendered  # noqa: E402
from api.web.pages import market_page  # noqa: E402
from benchmarks.api_cheapest import seed  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore  # noqa: E402


def timed(work: Callable[[], object], repeat: int, prepare: Callable[[], object] | None = None) -> str:
    """Median and p95 of `repeat` runs of `work` (each after `prepare`, untimed), in milliseconds of
    wall-clock time and of this thread's CPU time (on a shared machine the second is the steadier)."""
    walls, cpus = [], []
    for _ in range(repeat):
        if prepare is not None:
            prepare()
        started, cpu = time.perf_counter(), time.thread_time()
        work()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
    figures = []
    for name, times in (("wall", walls), ("cpu", cpus)):
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        figures.append(f"{name} median {statistics.median(times):6.1f} ms, p95 {p95:6.1f} ms")
    return "; ".join(figures)


def measure_view(name: str, page: Page, store: PriceStore, settings: Settings, args: argparse.Namespace) -> None:
    holder: dict[str, AppState] = {"state": AppState(store, settings)}

    other = Page(page.path, [*page.items, ("desc", "true")], page.lang, page.lang_given)  # the other way round

    def fresh(answered: bool, shown: bool = False) -> None:
        holder["state"] = AppState(store, settings)
        with limits_of(settings):
            if shown:
                market_page(holder["state"], other)
            if answered:
                found = market_view.market(holder["state"], page)
                assert found.params is not None
                offers_answer(holder["state"], found.params)

    def render() -> tuple[Rendered, int]:
        with limits_of(settings):
            return market_page(holder["state"], page)

    rendered, status = render()
    assert status == 200 and rendered.body.count(b"<tr data-k=") == args.offers
    print(f"{name}: {args.offers:,} rows, {len(rendered.body):,} bytes, {len(rendered.compressed):,} gzip")
    few = max(3, args.repeat // 4)
    print(f"  render, new view: {timed(render, args.repeat, lambda: fresh(True, shown=True))}")
    print(f"  render, cold:     {timed(render, args.repeat, lambda: fresh(True))}")
    print(f"  first view:       {timed(render, few, lambda: fresh(False))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "pages.duckdb"
        seed(db, offers=args.offers, observations=args.offers)
        settings = Settings(db=db, export_dir=Path(folder) / "exports")
        store = PriceStore(settings)
        every_column = market_view.market(AppState(store, settings), Page("/", [], "en", False)).columns
        views = {
            "default view (CNY, 13 columns)": [],
            f"USD, sorted by region, all {len(every_column)} columns": [
                ("cur", "USD"), ("sort", "region"), ("cols", ",".join(c.key for c in every_column)),
            ],
        }  # fmt: skip
        for name, items in views.items():
            measure_view(name, Page("/", items, "zh", False), store, settings, args)
        app = create_app(settings, store=store, schedule=False)
        with TestClient(app) as client:
            headers = {"accept": "text/html", "accept-encoding": "gzip"}
            answer = client.get("/", headers=headers)
            served = timed(lambda: client.get("/", headers=headers), args.repeat)
            size = int(answer.headers["content-length"])
            print(f"served from the page cache (a whole GET, default view): {served}, {size:,} bytes transferred")
        store.close()


if __name__ == "__main__":
    main()
