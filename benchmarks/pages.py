"""Benchmark: the market page for 2,000 offers — server time per kind of view, and bytes.

Each figure is the median (and p95) of repeated runs, in-process (no network), wall-clock and CPU
(this thread's; on a shared machine the CPU time is the steadier, and PASS/MISS reads it). The
target (issues 13 and 14) is ≤ 20 ms server time and < 200 KB transferred per page. Kinds of view:
- new view: a sort of the default 13 columns (CNY) not shown before, once the data is warm (each
  run another column or direction; with its `/offers` answer when the sort is one of the API's);
- cold: the very first request after a new data version lands (a real write: the USD rates are
  revised, so every answer and memo is dropped and the offers are loaded again), once the
  warm-up the server then runs in a worker thread (api.web.warm) is done; for the page a browser's
  first visit asks for (as the route serves it: the warm-up kept it), and a currency, language
  and column set shown for the first time, and all 37 columns (rendered): sorted by region (zstd,
  brotli, gzip) and on the default sort by price, the likeliest and worst-compressing. The warm-up's own time
  is printed too (a worker thread's, no request waits for it);
- cold, no warm-up: a request that comes when no warm-up runs (it loads the offers itself);
- cold, during the warm-up: a request that comes as the warm-up starts, in this thread while the
  warm-up runs in another (it waits for the offers and the answers the warm-up is building, and
  writes only what it needs that the warm-up has not written yet: its CPU is its own share);
- all columns, new view: USD, all 37 columns, a sort not shown before;
- cached: a whole GET through the app (middleware, routing) of a page shown before, as every
  repeated view is until the data changes.
Each figure is also given as a share of the plain rendering of a default view (every row written,
the answer's JSON parsed: what the tests hold the fast page to), measured just before and just after
it (the mean of the two), which stays steadier than milliseconds when other work shares the CPUs.
Each view's time includes compressing it as a browser takes it: zstd (Chromium and Firefox send
`zstd` in Accept-Encoding); the new views are timed for clients taking brotli but not zstd (Safari)
and for gzip-only clients too, each followed by its page's compression alone (the rest of the view's
time is rendering it). Each line ends with the view's share of the plain rendering and PASS/MISS
against RATIO_AIM.
Then each kind of view's size as served, zstd, brotli and gzip (PASS: under 200,000 bytes; the
goal for zstd and brotli is 180,000, with room for more offers), and the size of the largest page
(all 37 columns) compressed by zstd, brotli (quality 4 with a 1 MB window is served, 3 over 500 KB), zlib-ng
(level 3 is served, 4 over 1.5 MB) and zlib, at each level, with the CPU time each takes.

    python benchmarks/pages.py [--offers 2000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import brotli  # noqa: E402
import zstandard  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from isal import igzip  # noqa: E402
from zlib_ng import gzip_ng  # noqa: E402

from api.app import create_app  # noqa: E402
from api.limits import limits_of  # noqa: E402
from api.state import AppState  # noqa: E402
from api.web import market as market_view  # noqa: E402
from api.web.gzip_pieces import (  # noqa: E402
    HELPERS,
    MIN_SPARE,
    PIECE_BYTES,
    PIECES_PER_THREAD,
    gzip_in_pieces,
    pieces_for,
    spare_cores,
)
from api.web.html import (  # noqa: E402
    BROTLI_FAST_QUALITY,
    BROTLI_LARGE_PAGE_BYTES,
    BROTLI_QUALITY,
    BROTLI_QUALITY_LARGE,
    BROTLI_WINDOW,
    FAST_ENOUGH_BYTES,
    FAST_FROM_BYTES,
    GZIP_FAST_LEVEL,
    GZIP_LEVEL,
    GZIP_LEVEL_LARGE,
    ZSTD_LEVEL,
    Page,
    Rendered,
)
from api.web.pages import market_page  # noqa: E402
from api.web.warm import warm_market  # noqa: E402
from benchmarks.api_cheapest import seed  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore  # noqa: E402

BUDGET_MS = 20.0
# Every view's CPU median as a share of the plain rendering's in the same run: 20 ms is 0.15 of it on
# a slow host (plain 120 ms), so a view within this share passes there with room, and the share
# judges a run on any host's speed.
RATIO_AIM = 0.15
BUDGET_BYTES = 200_000  # transferred per page
GOAL_BYTES = 180_000  # zstd and brotli: the budget with room for more offers and longer notes
ENCODINGS = ("zstd", "br", "gzip")


def timed(
    work: Callable[[], object],
    repeat: int,
    prepare: Callable[[], object] | None = None,
    every_thread: bool = False,
) -> tuple[float, str]:
    """The CPU median of `repeat` runs of `work` (each after `prepare`, untimed), and a line of
    wall-clock and CPU medians and p95s, in milliseconds. The CPU is this thread's; `every_thread`,
    every thread's of the process too (which the median is then of): gzip compresses a large page in
    pieces on other threads too (api.web.gzip_pieces), whose CPU this thread's would leave out."""
    walls, cpus, all_cpus = [], [], []
    for _ in range(repeat):
        if prepare is not None:
            prepare()
        started, cpu, all_cpu = time.perf_counter(), time.thread_time(), time.process_time()
        work()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.thread_time() - cpu) * 1000)
        all_cpus.append((time.process_time() - all_cpu) * 1000)
    figures = []
    clocks = [("wall", walls), ("cpu", cpus)] + ([("cpu, all threads,", all_cpus)] if every_thread else [])
    for name, times in clocks:
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        figures.append(f"{name} median {statistics.median(times):6.1f} ms, p95 {p95:6.1f} ms")
    return statistics.median(all_cpus if every_thread else cpus), "; ".join(figures)


class Reference:
    """The plain rendering's CPU median, measured again after each view: a view's share is of the
    mean of the measures just before and just after it, as a shared host's speed moves within a run
    (by 1.5× between two minutes, seen with other work on the machine)."""

    def __init__(self, measure: Callable[[], float]) -> None:
        self.measure = measure
        self.last = measure()

    def around(self) -> float:
        before, self.last = self.last, self.measure()
        return (before + self.last) / 2


REFERENCE: list[Reference] = []


def report(kind: str, figures: tuple[float, str], judged: bool = True) -> None:
    """A line of figures: PASS/MISS for the CPU median against the budget, then its share of the
    plain rendering (measured around it), PASS/MISS against RATIO_AIM (the same judgement on any
    host's speed)."""
    cpu, line = figures
    verdict = ("PASS" if cpu <= BUDGET_MS else "MISS") if judged else "    "
    ratio = ""
    if REFERENCE:
        plain = REFERENCE[0].around()
        share = cpu / plain
        aim = ("PASS" if share <= RATIO_AIM else "MISS") if judged else "    "
        ratio = f" = {share:5.2f} × plain ({plain:5.1f} ms) {aim}"
    print(f"  {verdict} {kind:<44} {line}{ratio}")


class Market:
    """A store with `offers` offers, one app state over it, and a way to land a new data version."""

    def __init__(self, folder: Path, offers: int) -> None:
        db = folder / "pages.duckdb"
        seed(db, offers=offers, observations=offers)
        self.settings = Settings(db=db, export_dir=folder / "exports")
        self.store = PriceStore(self.settings)
        self.state = AppState(self.store, self.settings)
        self.landed = 0
        self.warm_up: threading.Thread | None = None

    def land(self) -> None:
        """New data lands: the USD rates revised a little (a committed write, so the store's version moves)."""
        self.landed += 1
        factor = 1 + (-1) ** self.landed * 1e-6
        self.store.write_with(
            lambda cur: cur.execute("UPDATE fx_rates SET rate = rate * ? WHERE currency = 'USD'", [factor])
        )

    def page(self, page: Page, fast: bool = True, encoding: str | None = "zstd") -> Callable[[], Rendered]:
        """The page rendered, and compressed as `encoding` (as the route sends it to a browser)."""

        def render() -> Rendered:
            with limits_of(self.settings):
                rendered, status = market_page(self.state, page, fast)
            assert status == 200
            rendered.encoded_as(encoding)
            return rendered

        return render

    def served(self, page: Page) -> Callable[[], bytes]:
        """The page as the route serves it: from the answer cache, else rendered and kept there."""

        def serve() -> bytes:
            rendered, _ = self.state.cached_value(page.cache_key, lambda _: (self.page(page)(), 200))
            return rendered.encoded_as("zstd")

        return serve

    def new_views(
        self,
        items: list[tuple[str, str]],
        columns: Sequence[str],
        shown: list[tuple[Rendered, str]] | None = None,
        encoding: str = "zstd",
    ) -> Callable[[], Rendered]:
        """Each call another view not shown before: sorted by the next column, each way round (each
        one kept in `shown` with its sort, to measure its sizes after)."""
        views = iter(
            [Page("/", [*items, ("sort", c), ("desc", d)], "zh", False) for d in ("true", "false") for c in columns]
        )

        def view() -> Rendered:
            page = next(views)
            rendered = self.page(page, encoding=encoding)()
            if shown is not None:
                shown.append((rendered, ",".join(v for k, v in page.items if k in ("sort", "desc"))))
            return rendered

        return view

    def warmed(self) -> None:
        self.land()
        warm_market(self.state)

    def warming(self) -> None:
        """New data lands and the warm-up starts in its worker thread (the one before it is done)."""
        if self.warm_up is not None:
            self.warm_up.join()
        self.land()
        self.warm_up = threading.Thread(target=warm_market, args=(self.state,))
        self.warm_up.start()


def compress(body: bytes, encoding: str) -> bytes:
    """`body` compressed as the route compresses it for `encoding`."""
    return Rendered(body).encoded_as(encoding)


def compression_table(body: bytes, repeat: int) -> None:
    print(f"compression of the all-columns page, USD, default sort ({len(body):,} bytes): size, CPU median")
    print(
        f"  (served: zstd {ZSTD_LEVEL}; brotli {BROTLI_QUALITY}, {BROTLI_QUALITY_LARGE} over "
        f"{BROTLI_LARGE_PAGE_BYTES // 1000} KB, window 2**{BROTLI_WINDOW}; zlib-ng {GZIP_LEVEL}, "
        f"{GZIP_LEVEL_LARGE} over 1.5 MB; over {FAST_FROM_BYTES // 1000} KB brotli {BROTLI_FAST_QUALITY} "
        f"or igzip {GZIP_FAST_LEVEL} where they write "
        f"< {FAST_ENOUGH_BYTES:,} bytes by the probe)"
    )
    compressors = [
        (f"zstd {level}", lambda b, level=level: zstandard.ZstdCompressor(level=level).compress(b))
        for level in range(1, 7)
    ]
    compressors += [
        (
            f"brotli {quality}",
            lambda b, quality=quality: brotli.compress(b, mode=brotli.MODE_TEXT, quality=quality, lgwin=BROTLI_WINDOW),
        )
        for quality in range(1, 7)
    ]
    compressors += [
        (f"zlib-ng {level}", lambda b, level=level: gzip_ng.compress(b, level, mtime=0)) for level in range(1, 7)
    ]
    compressors += [
        (f"zlib {level}", lambda b, level=level: gzip.compress(b, level, mtime=0)) for level in range(1, 10)
    ]
    compressors += [(f"igzip {level}", lambda b, level=level: igzip.compress(b, level, mtime=0)) for level in range(4)]
    for name, compress in compressors:
        size = len(compress(body))
        cpu, _ = timed(lambda compress=compress: compress(body), max(3, repeat // 4))
        print(f"  {name:<10} {size:>9,} bytes {cpu:6.1f} ms")
    # zlib-ng in pieces at once (as served over 500 KB), against one stream, interleaved: wall and every thread's CPU
    pieces = (HELPERS + 1) * PIECES_PER_THREAD
    print(
        f"  zlib-ng in {pieces} pieces at once (served from {2 * PIECE_BYTES // 1024} KB while the load average "
        f"leaves {MIN_SPARE:g} core spare: {spare_cores():.1f} now, so {pieces_for(len(body))} piece(s)) "
        "and in one stream:"
    )
    for level in (GZIP_LEVEL, GZIP_LEVEL_LARGE):
        ways = {
            f"zlib-ng {level}, {pieces} pieces": lambda level=level: gzip_in_pieces(body, level, pieces),
            f"zlib-ng {level}, one stream": lambda level=level: gzip_ng.compress(body, level, mtime=0),
        }
        lines: dict[str, list[str]] = {name: [] for name in ways}
        for _ in range(max(3, repeat // 4)):
            for name, compress in ways.items():
                lines[name].append(timed(compress, 3, every_thread=True)[1])
        for name, compress in ways.items():
            print(f"    {name:<22} {len(compress()):>9,} bytes; {lines[name][len(lines[name]) // 2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; PASS: CPU median ≤ {BUDGET_MS:g} ms")
    with tempfile.TemporaryDirectory() as folder:
        m = Market(Path(folder), args.offers)
        with limits_of(m.settings):
            every = ",".join(c.key for c in market_view.market(m.state, Page("/", [], "en", False)).columns)
        first_visit = Page("/", [], "zh", False)
        usd_english = Page("/", [("cur", "USD"), ("lang", "en"), ("sort", "region")], "en", True)
        chosen_columns = Page("/", [("cur", "EUR"), ("cols", "provider,sku,price,cny_per_gb_hour,vcpus")], "zh", False)
        all_columns = Page("/", [("cur", "USD"), ("sort", "region"), ("cols", every)], "zh", False)
        # the likeliest all-columns view: the column picker's "all" on the default sort (by price), whose
        # rows interleave providers and so compress worse than a sort by region
        all_by_price = Page("/", [("cols", every)], "zh", False)
        few = max(3, args.repeat // 4)

        m.warmed()
        widest, default = m.page(all_columns)(), m.page(first_visit)()
        print(
            f"{args.offers:,} offers: default view {len(default.body):,} bytes, "
            f"{len(default.encoded_as('zstd')):,} zstd, {len(default.compressed):,} gzip; "
            f"all {every.count(',') + 1} columns (sort=region) {len(widest.body):,} bytes, "
            f"{len(widest.encoded_as('zstd')):,} zstd, {len(widest.compressed):,} gzip"
        )
        plain_page = m.page(Page("/", [("sort", "region")], "zh", False), fast=False)
        report("reference: plain rendering, default columns", timed(plain_page, few), False)
        # the figures below as a share of it, measured around each: steadier than ms on a busy machine
        REFERENCE.append(Reference(lambda: timed(plain_page, 3)[0]))
        default_shown: list[tuple[Rendered, str]] = []
        every_shown: list[tuple[Rendered, str]] = []
        report(
            "new view, default columns, zstd",
            timed(m.new_views([], market_view.DEFAULT_COLUMNS, default_shown), args.repeat),
        )
        usd_every = [("cur", "USD"), ("cols", every)]
        report(
            "all 37 columns, new view (USD), zstd",
            timed(m.new_views(usd_every, every.split(","), every_shown), args.repeat),
        )
        # other views than those above, so new ones: brotli (clients without zstd), then gzip
        other_views = (("br", "INR", [("cur", "INR")]), ("gzip", "EUR", [("cur", "EUR"), ("lang", "en")]))
        for encoding, name, views in other_views:
            label = "brotli" if encoding == "br" else encoding
            for kind, items, columns in (
                ("new view, default columns", views, market_view.DEFAULT_COLUMNS),
                (f"all 37 columns, new view ({name})", [*views, ("cols", every)], every.split(",")),
            ):
                shown: list[tuple[Rendered, str]] = []
                pieces = encoding == "gzip"  # compressed in pieces on other threads too: their CPU counts
                new_view = m.new_views(items, columns, shown, encoding)
                report(f"{kind}, {label}", timed(new_view, args.repeat, every_thread=pieces))
                # what the view's time is made of: its page compressed alone, the rest is rendering it
                body = shown[-1][0].body
                alone = timed(lambda body=body, encoding=encoding: compress(body, encoding), few, every_thread=pieces)
                report(f"  of which {label} alone ({len(body):,} bytes)", alone, False)
        report("cold: the first visit's page (/), as served", timed(m.served(first_visit), args.repeat, m.warmed))
        report("cold: first USD view, English (lang in URL)", timed(m.page(usd_english), args.repeat, m.warmed))
        report("cold: first view of chosen columns, EUR", timed(m.page(chosen_columns), args.repeat, m.warmed))
        report("cold: first view of all 37 columns (USD)", timed(m.page(all_columns), args.repeat, m.warmed))
        report(
            "cold: first view of all 37 columns, brotli",
            timed(m.page(all_columns, encoding="br"), args.repeat, m.warmed),
        )
        report(
            "cold: first view of all 37 columns, gzip",
            timed(m.page(all_columns, encoding="gzip"), args.repeat, m.warmed, every_thread=True),
        )
        print(f"  (gzip in pieces while the load average leaves {MIN_SPARE:g} core spare: {spare_cores():.1f} now)")
        for encoding, label in (("zstd", "zstd"), ("br", "brotli"), ("gzip", "gzip")):
            report(
                f"cold: first view of all 37 columns, default sort (price), {label}",
                timed(m.page(all_by_price, encoding=encoding), args.repeat, m.warmed, every_thread=encoding == "gzip"),
            )
        report("warm-up after a run lands (worker thread)", timed(lambda: warm_market(m.state), few, m.land), False)
        report("cold, no warm-up: the first visit's page", timed(m.page(first_visit), few, m.land), False)
        report("cold, no warm-up: all 37 columns (USD)", timed(m.page(all_columns), few, m.land), False)
        report("cold, during the warm-up: first visit's page", timed(m.served(first_visit), few, m.warming), False)
        report("cold, during the warm-up: all 37 columns", timed(m.page(all_columns), few, m.warming), False)
        m.warmed()

        app = create_app(m.settings, store=m.store, schedule=False)
        with TestClient(app) as client:
            headers = {"accept": "text/html", "accept-encoding": "gzip, deflate, br, zstd", "accept-language": "zh"}
            answer = client.get("/", headers=headers)
            report(
                "cached: a whole GET of a page shown before",
                timed(lambda: client.get("/", headers=headers), args.repeat),
            )
            encoding = answer.headers["content-encoding"]
            print(f"  transferred: {int(answer.headers['content-length']):,} bytes (default view, {encoding})")
        print(
            "transferred, as served zstd (Chromium, Firefox) | brotli (Safari, curl with brotli) | gzip (the rest); "
            f"PASS: < {BUDGET_BYTES:,} bytes (goal for zstd and brotli: < {GOAL_BYTES:,})"
        )
        sorted_view = Page("/", [("sort", "cny_per_hour"), ("desc", "true")], "zh", False)
        views = [
            ("the first visit's page (/)", first_visit),
            ("default columns sorted by ¥/h, descending", sorted_view),
            ("USD, English", usd_english),
            ("chosen columns, EUR", chosen_columns),
            ("all 37 columns (USD)", all_columns),
            (
                "all 37 columns, native, English, default sort",
                Page("/", [("cur", "native"), ("cols", every)], "en", False),
            ),
        ]
        for name, page in views:
            rendered = m.page(page)()
            sizes = [len(rendered.encoded_as(encoding)) for encoding in ENCODINGS]
            verdicts = " | ".join("PASS" if size < BUDGET_BYTES else "MISS" for size in sizes)
            figures = " | ".join(f"{size:>7,}" for size in sizes)
            print(f"  {verdicts} {name:<44} {figures} bytes ({len(rendered.body):,} plain)")
        for name, shown in (("new views, default columns", default_shown), ("new views, all 37 columns", every_shown)):
            print(f"  {name}, {len(shown)} sorts:")
            for encoding in ENCODINGS:
                sizes = [(len(rendered.encoded_as(encoding)), sort) for rendered, sort in shown]
                over = sum(size >= BUDGET_BYTES for size, _ in sizes)
                largest, sort = max(sizes)
                goal = f", {sum(s >= GOAL_BYTES for s, _ in sizes)} over {GOAL_BYTES:,}" if encoding != "gzip" else ""
                verdict = "PASS" if not over else "MISS"
                print(f"    {verdict} {encoding:<4} largest {largest:>9,} ({sort}), {over} over {BUDGET_BYTES:,}{goal}")
        compression_table(m.page(Page("/", usd_every, "zh", False))().body, args.repeat)
        m.store.close()


if __name__ == "__main__":
    main()
