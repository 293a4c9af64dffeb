"""Benchmark (issue 14): every new question fast, at every-GPU scale. One script, every target, each
figure printed beside its reference measured in the same run, with the ratio and PASS/MISS.

Data. Offers are drawn in the real distribution of providers, regions, pricings, billing rules,
currencies, GPU counts and host shapes: the 356 offers of the recorded provider responses
(`gpuprice collect --offline`) are the templates, crossed with the card table's 67 cards
(pricedb.cards, uniformly: no source gives how many offers each card has), each template's price
scaled by the card's rental band against the A100's (geometric means of the bands). Observations are
rounds of those offers, one successful run per provider and round, six months up to the build
moment (2,000 offers × 500 rounds = 1M; 50,000 × 200 = 10M); one offer in seven costs 5% more in
every other block of three rounds, so digests have changes to find. The databases take a while to
build, so they are kept under `--cache` and reused (the server's clock is pinned to the build
moment plus ten minutes, so nothing reads stale whenever the cache is reused).

Serving. The real app, uvicorn, one worker, plus a trivial endpoint returning a fixed small JSON
(the reference for requests/s and latency); load from `wrk` (Debian package `wrk`) driven by a Lua
script that asks a different question on every request (random `mem`, `hours` with six decimals,
GPU, or model, workload, context and batch), so the answer cache never helps.

References in the same run:
- trivial endpoint: p50 at 1 connection and requests/s at 8 (wrk, as the questions); for history, each
  question is asked right after a trivial request by the same client (httpx), and the figure's ratio is
  the median of those pairs' ratios; one offer's history is asked compressed and not in alternation,
  each way its own new offers, with the history files in the page cache (said before the rows), then
  once more from the disk (see `in_page_cache`);
- gpuhunt: gpuhunt's own filter (`constraints.matches` with `min_total_gpu_memory`, `gpu_name`) and
  sort by price over gpuprice's gpuhunt export (`/export/gpuhunt/<provider>.csv`, read by gpuhunt's
  `storage.load`), in memory in this process, no HTTP, on the same question mix, in 2 s blocks
  alternating with 2 s of new questions over HTTP, seven rounds: the ratio is the median of the
  rounds' ratios, so a change in the shared host's speed hits both sides.

    python benchmarks/every_question.py --cache /var/tmp/gpuprice-bench [--seconds 8] [--skip-history]
    python benchmarks/every_question.py --cache /var/tmp/gpuprice-bench --history-only  # 50,000 and 2,000 offers, 10M

gpuhunt is a test dependency of gpuprice (`pip install -e '.[test]'`); numpy comes with gpuprice.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_cheapest import free_port, wait_until_up  # noqa: E402

from pricedb.cards import CARDS  # noqa: E402

TRIVIAL = "/bench/trivial"
SIX_MONTHS = timedelta(days=182)
SERVER_CLOCK = timedelta(minutes=10)  # the server's clock: the build moment plus this
NOW_FILE = "built_at.txt"  # beside each database: the moment it was built (the server's clock)
GPUS_ASKED = ("A100", "H100", "L4", "A10G", "RTX4090", "L40S", "V100", "H200", "MI300X", "T4")
# Market page views after the history questions: the first visit, a filtered view sorted by moment, a sort.
MARKET_VIEWS = ("/", "/?gpu=H100&sort=observed_at", "/?sort=cny_per_hour&desc=true", "/?lang=en")
MODELS_ASKED = ("llama-2-7b", "llama-2-13b", "llama-2-70b", "qwen2.5-14b")


# ----- data ------------------------------------------------------------------------------------
def offline_templates(cache: Path) -> Path:
    """The recorded providers' offers, collected once offline into `cache`."""
    db = cache / "offline-templates.duckdb"
    if not db.exists():
        env = {**os.environ, "GPUPRICE_DB": str(db), "GPUPRICE_EXPORT_DIR": str(cache / "offline-exports")}
        subprocess.run([sys.executable, "-m", "api.cli", "collect", "--offline"], env=env, cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)  # fmt: skip
    return db


def _band_mid(band: tuple[float, float]) -> float:
    return math.sqrt(band[0] * band[1])


def build(db: Path, templates_db: Path, offers: int, observations: int) -> datetime:
    """A database of `offers` current offers and about `observations` observations (whole rounds)."""
    import duckdb

    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    rounds = max(1, observations // offers)
    built_at = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    start = built_at - SIX_MONTHS
    step_s = SIX_MONTHS.total_seconds() / rounds
    partial = db.with_suffix(".building")
    partial.unlink(missing_ok=True)
    PriceStore(Settings(db=partial)).close()  # the real schema, every migration
    con = duckdb.connect(str(partial))
    con.execute("SET enable_progress_bar = false")
    con.execute(f"ATTACH '{templates_db}' AS rec (READ_ONLY)")
    con.execute("INSERT INTO fx_rates SELECT * FROM rec.fx_rates")
    con.execute("CREATE TEMP TABLE templates AS SELECT row_number() OVER (ORDER BY provider, region, sku, pricing) - 1 "
                "AS t, * FROM rec.offers")  # fmt: skip
    con.execute("CREATE TEMP TABLE schedules AS SELECT provider, max(stale_after_minutes) AS stale_after "
                "FROM rec.runs WHERE provider <> 'fx' GROUP BY provider")  # fmt: skip
    a100 = _band_mid(next(c.usd_per_gpu_hour for c in CARDS if c.model == "A100"))
    con.execute("CREATE TEMP TABLE cards (c INTEGER, model VARCHAR, memory DOUBLE, form_factor VARCHAR, "
                "interconnect VARCHAR, scale DOUBLE)")  # fmt: skip
    con.executemany(
        "INSERT INTO cards VALUES (?, ?, ?, ?, ?, ?)",
        [[i, c.model, c.memory_gb, c.form_factor, c.interconnect, _band_mid(c.usd_per_gpu_hour) / a100]
         for i, c in enumerate(CARDS)],
    )  # fmt: skip
    n_templates = con.execute("SELECT count(*) FROM templates").fetchone()[0]
    # Offer i: template i mod T, card i mod C (T and C coprime: every pair once per T × C offers).
    con.execute(
        f"""
        CREATE TEMP TABLE catalog AS
        SELECT i, t.provider, t.region,
               t.sku || ' ~ ' || c.model || ' ' || c.memory::INTEGER || 'GB ' || c.form_factor || ' copy '
                   || (i // ({n_templates} * {len(CARDS)})) AS sku,
               c.model AS gpu_model, c.memory AS gpu_memory_gb, t.gpu_count, c.form_factor, c.interconnect, t.pricing,
               t.price * c.scale AS price, t.currency, t.unit, t.term_hours, t.billing_increment_s,
               t.billing_minimum_s, t.availability, t.list_price * c.scale AS list_price, t.tax_included,
               t.price_steps, t.notes, t.source_url, t.offline, t.fx_rate, t.fx_date, t.fx_note,
               t.cny_per_hour * c.scale AS cny_per_hour, coalesce(t.vcpus, 8 * t.gpu_count) AS vcpus,
               coalesce(t.memory_gib, 64.0 * t.gpu_count) AS memory_gib
        FROM range({offers}) r(i)
        JOIN templates t ON t.t = i % {n_templates}
        JOIN cards c ON c.c = i % {len(CARDS)}
        """
    )  # fmt: skip
    providers = [p for (p,) in con.execute("SELECT DISTINCT provider FROM catalog ORDER BY 1").fetchall()]
    index = {p: k for k, p in enumerate(providers)}
    con.execute("CREATE TEMP TABLE provider_index (provider VARCHAR, k INTEGER)")
    con.executemany("INSERT INTO provider_index VALUES (?, ?)", [[p, k] for p, k in index.items()])
    per_statement = max(1, 500_000 // offers)  # rounds written per statement, in round order
    for first_round in range(0, rounds, per_statement):
        span = [first_round, min(rounds, first_round + per_statement)]
        moments = f"TIMESTAMP '{start.isoformat()}' + to_microseconds(CAST((r + 1) * {int(step_s * 1e6)} AS BIGINT))"
        con.execute(
            f"""
            INSERT INTO runs (run_id, provider, scope, pricings, started_at, finished_at, status, error, quote_count,
                              rejected_count, rejected, notes, offline, stale_after_minutes)
            SELECT r * 100 + k + 1, p.provider, 'all', ['monthly', 'on_demand', 'reserved_1y', 'reserved_3y', 'spot'],
                   {moments} - INTERVAL 2 MINUTE, {moments} + INTERVAL 1 MINUTE, 'ok', NULL, 0, 0, NULL, NULL,
                   false, s.stale_after
            FROM range(?, ?) rr(r), provider_index p JOIN schedules s USING (provider)
            ORDER BY r, k
            """,
            span,
        )
        bump = "CASE WHEN i % 7 = 0 AND (r // 3) % 2 = 1 THEN 1.05 ELSE 1.0 END"
        con.execute(
            f"""
            INSERT INTO observations
            SELECT r * {offers} + i, r * 100 + p.k + 1, c.provider, region, sku, gpu_model, gpu_memory_gb, gpu_count,
                   form_factor, interconnect, pricing, price * {bump}, currency, unit, term_hours, billing_increment_s,
                   billing_minimum_s, availability, list_price, tax_included, price_steps, notes, source_url,
                   {moments}, offline, fx_rate, fx_date, fx_note, cny_per_hour * {bump},
                   cny_per_hour * {bump} / gpu_count, cny_per_hour * {bump} / (gpu_count * gpu_memory_gb),
                   vcpus, memory_gib, NULL, NULL
            FROM range(?, ?) rr(r), catalog c JOIN provider_index p USING (provider) ORDER BY r, i
            """,
            span,
        )
        print(f"  {db.name}: {span[1]}/{rounds} rounds", flush=True)
    last = rounds - 1
    con.execute(f"INSERT INTO offers SELECT * FROM observations WHERE observation_id >= {last * offers}")
    con.execute("UPDATE runs SET quote_count = (SELECT count(*) FROM observations o WHERE o.run_id = runs.run_id)")
    counts = con.execute("SELECT (SELECT count(*) FROM offers), (SELECT count(*) FROM observations)").fetchone()
    con.close()
    partial.rename(db)
    (db.parent / f"{db.stem}.{NOW_FILE}").write_text(built_at.isoformat())
    print(f"built {db}: {counts[0]:,} offers, {counts[1]:,} observations ({rounds} rounds to {built_at:%Y-%m-%d})")
    return built_at


def laid_out(db: Path, now: datetime) -> None:
    """The history laid out by offer and the answers about past days built ahead, as `serve` does
    after each daily digest (pricedb.history_layout, api.day_answers; the digests' zone is the
    server's, UTC); opening the store also runs any migration the cached database has not seen."""
    from api.day_answers import build_day_answers
    from api.history_frames import write_history_frames
    from pricedb.history_files import PointFiles
    from pricedb.history_layout import read_layout
    from pricedb.settings import Settings
    from pricedb.store import PriceStore

    settings = Settings(db=db, digest_time_zone="UTC")
    store = PriceStore(settings)
    try:
        behind = (
            store.cursor()
            .execute(
                "SELECT (SELECT compacted_upto FROM history_layout) < (SELECT max(observation_id) FROM observations)"
            )
            .fetchone()[0]
        )
        if behind:
            start = time.monotonic()
            store.compact_history()
            print(f"  {db.name}: history laid out by offer in {time.monotonic() - start:.1f} s", flush=True)
        layout = read_layout(store.cursor())
        if PointFiles.open(db, layout.compacted_upto, len(layout.keys) - 1, layout.laid_out_points) is None:
            start = time.monotonic()  # a database laid out before the files existed (or without them)
            store.write_history_files()
            print(f"  {db.name}: the layout's files written in {time.monotonic() - start:.1f} s", flush=True)
        start = time.process_time()
        if write_history_frames(store):  # as the compaction job does (a no-op when they are there)
            print(f"  {db.name}: its series compressed ahead (frames), {time.process_time() - start:.1f} s CPU")
        start = time.monotonic()
        built = build_day_answers(store, settings, now)
        if built:
            print(f"  {db.name}: {built} answers about past days built ahead in {time.monotonic() - start:.1f} s")
    finally:
        store.close()


def database(cache: Path, offers: int, observations: int) -> tuple[Path, datetime]:
    db = cache / f"offers-{offers}-observations-{observations}.duckdb"
    stamp = cache / f"{db.stem}.{NOW_FILE}"
    if db.exists() and stamp.exists():
        built_at = datetime.fromisoformat(stamp.read_text().strip())
    else:
        print(f"building {db.name} (cached for later runs) …", flush=True)
        built_at = build(db, offline_templates(cache), offers, observations)
    laid_out(db, built_at + SERVER_CLOCK)
    return db, built_at


# ----- serving ---------------------------------------------------------------------------------
def app_with_trivial(db: Path, warm: bool = False) -> Any:
    """The real app over `db` plus one trivial endpoint (the reference every figure is set beside);
    `warm`: with the warm-up a scheduled server runs when data lands (api.web.warm)."""
    from fastapi.responses import JSONResponse

    from api.app import create_app
    from pricedb.settings import Settings

    app = create_app(Settings(db=db, digest_time_zone="UTC"), schedule=False, warm=warm)

    @app.get(TRIVIAL)
    async def trivial() -> JSONResponse:
        return JSONResponse({"status": "ok", "answer": 42})

    return app


def serve(db: Path, port: int, now: str, warm: bool) -> None:
    """Server process: the real app plus one trivial endpoint, one uvicorn worker, the clock pinned."""
    import uvicorn

    from api.process_memory import give_large_blocks_back
    from pricedb import clock

    moment = datetime.fromisoformat(now).replace(tzinfo=UTC)
    clock.set_clock(lambda: moment)
    give_large_blocks_back()  # as `gpuprice serve` does
    app = app_with_trivial(db, warm)
    uvicorn.run(app, host="127.0.0.1", port=port, workers=1, log_level="warning", access_log=False)


class Server:
    def __init__(self, db: Path, built_at: datetime, warm: bool = False) -> None:
        self.db = db
        self.port = free_port()
        now = (built_at + SERVER_CLOCK).isoformat()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", str(db), str(self.port), now, str(warm)],
                                        env=env)  # fmt: skip
        wait_until_up(self.port, timeout=300)
        self.base = f"http://127.0.0.1:{self.port}"

    def memory_mb(self) -> tuple[float, float]:
        """(RSS now, peak RSS) of the server process, MB."""
        found = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0]) / 1024
        return found["VmRSS"], found["VmHWM"]

    def cpu_s(self) -> float:
        """CPU seconds the server process has used (user + system)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait_idle(self, quiet_s: float = 0.5, timeout_s: float = 120) -> float:
        """Wait until the server spends no CPU for `quiet_s` (its warm-up done: api.web.warm); seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < timeout_s:
            before = self.cpu_s()
            time.sleep(quiet_s)
            if self.cpu_s() - before < 0.02:
                break
        return time.monotonic() - start

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


# A different question on every request: wrk's Lua, seeded per run (so no run repeats another's).
NEW_MEM_QUESTION = """
local gpus = {%(gpus)s}
local mems = {16, 24, 40, 48, 60, 80, 96, 141, 160, 192, 320, 640}
init = function(args) math.randomseed(tonumber(args[1])) end
request = function()
  return wrk.format("GET", string.format("/cheapest?mem=%%d&hours=%%.6f&gpu=%%s",
    mems[math.random(#mems)], math.random() * 2000, gpus[math.random(#gpus)]))
end
"""
NEW_MODEL_QUESTION = """
local models = {%(models)s}
local workloads = {"inference", "inference", "lora", "qlora"}
local contexts = {1024, 2048, 4096, 8192}
init = function(args) math.randomseed(tonumber(args[1])) end
request = function()
  return wrk.format("GET", string.format("/cheapest?model=%%s&workload=%%s&context=%%d&batch=%%d&hours=%%.6f",
    models[math.random(#models)], workloads[math.random(#workloads)], contexts[math.random(#contexts)],
    math.random(16), math.random() * 2000))
end
"""


def lua(template: str, folder: Path, name: str) -> Path:
    path = folder / f"{name}.lua"
    quoted = {"gpus": ", ".join(f'"{g}"' for g in GPUS_ASKED), "models": ", ".join(f'"{m}"' for m in MODELS_ASKED)}
    path.write_text(template % quoted)
    return path


_SEED = [int(time.time())]


class Run(NamedTuple):
    rps: float
    p50_ms: float
    cpu_ms: float  # the server's CPU time per request (user + system): what a loaded machine disturbs least


def wrk(server: Server, path: str, connections: int, seconds: int, script: Path | None = None) -> Run:
    """One wrk run against `server`; refuses a run with errors."""
    url = server.base + path
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script is not None:
        _SEED[0] += 1
        command += ["-s", str(script), url, "--", str(_SEED[0])]
    else:
        command.append(url)
    cpu_before = server.cpu_s()
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    cpu = server.cpu_s() - cpu_before
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"errors during the run:\n{out}")
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"50%\s+([\d.]+)(us|ms|s|m)\b", out)
    count = re.search(r"(\d+) requests in", out)
    if rps is None or p50 is None or count is None:
        raise SystemExit(f"wrk said something unexpected:\n{out}")
    p50_ms = float(p50.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[p50.group(2)]
    return Run(float(rps.group(1)), p50_ms, cpu * 1000 / max(1, int(count.group(1))))


# ----- gpuhunt, the reference ------------------------------------------------------------------
def gpuhunt_items(base: str) -> list:
    """gpuprice's gpuhunt export, every provider's file, read by gpuhunt's own reader."""
    import io

    import httpx
    from gpuhunt._internal import storage

    from pricedb.cards import MODEL_FACTS
    from pricedb.formats.gpuhunt import gpuhunt_name

    items = []
    with httpx.Client(base_url=base, timeout=120) as client:
        for state in client.get("/providers").json()["providers"]:
            if state["offers"]:
                name = gpuhunt_name(state["provider"])
                for model in MODEL_FACTS:  # the export, like every offer question, is about one GPU model
                    text = client.get(f"/export/gpuhunt/{name}.csv", params={"gpu": model}).raise_for_status().text
                    items.extend(storage.load(io.StringIO(text), provider=name))
    return items


def gpuhunt_ms(items: list, questions: list[tuple[float, str]], seconds: float | None = None) -> tuple[float, float]:
    """Median ms (wall clock, CPU) of gpuhunt's filter and sort (by price) over `items`, one question at a time;
    with `seconds`, the questions asked in turn (again from the first) until that long has passed."""
    from gpuhunt._internal.constraints import matches
    from gpuhunt._internal.models import QueryFilter

    timings, cpu = [], []
    until = None if seconds is None else time.perf_counter() + seconds
    for asked in itertools.count():
        done = asked == len(questions) if until is None else asked >= 20 and time.perf_counter() >= until
        if done:
            break
        mem, gpu = questions[asked % len(questions)]
        start, start_cpu = time.perf_counter(), time.process_time()
        query = QueryFilter(min_total_gpu_memory=mem, gpu_name=[gpu])
        found = sorted((i for i in items if matches(i, query)), key=lambda i: i.price)
        timings.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        assert found is not None
    return statistics.median(timings), statistics.median(cpu)


class SideBySide(NamedTuple):
    ours_ms: float  # median over the rounds of our p50 over HTTP
    hunt_ms: float  # median over the rounds of gpuhunt's median
    ratio: float  # median of the rounds' gpuhunt / ours
    ours_cpu: float  # median of the rounds' server CPU per request
    hunt_cpu: float
    cpu_ratio: float
    rounds: list[tuple[float, float]]  # each round's (ours, gpuhunt), ms


def side_by_side(server: Server, items: list, questions: list[tuple[float, str]], script: Path, rounds: int,
                 block_s: int) -> SideBySide:  # fmt: skip
    """gpuprice's new questions over HTTP (wrk, one connection, `block_s` seconds) and gpuhunt's filter+sort
    in memory (as long), in alternate blocks, `rounds` times: a change in the shared host's speed hits
    both, so the median of the rounds' ratios holds still where two figures measured apart did not."""
    ours, hunt, ratios, cpu_ratios, ours_cpu, hunt_cpu = [], [], [], [], [], []
    for _ in range(rounds):
        run = wrk(server, "", 1, block_s, script)
        wall, cpu = gpuhunt_ms(items, questions, seconds=block_s)
        ours.append(run.p50_ms)
        hunt.append(wall)
        ratios.append(wall / run.p50_ms)
        ours_cpu.append(run.cpu_ms)
        hunt_cpu.append(cpu)
        cpu_ratios.append(cpu / run.cpu_ms)
    median = statistics.median
    return SideBySide(median(ours), median(hunt), median(ratios), median(ours_cpu), median(hunt_cpu),
                      median(cpu_ratios), list(zip(ours, hunt, strict=True)))  # fmt: skip


# ----- report ----------------------------------------------------------------------------------
ROWS: list[tuple[str, str, str, str, str]] = []


def report(target: str, figure: float, unit: str, reference: str, ratio: float | None, met: bool | None) -> None:
    """One row; `met` None: a figure shown for comparison, no target of its own."""
    ratio_text = "" if ratio is None else f"{ratio:.2f}×"
    verdict = "—" if met is None else "PASS" if met else "MISS"
    ROWS.append((target, f"{figure:,.2f} {unit}", reference, ratio_text, verdict))
    print(f"  {target}: {figure:,.2f} {unit} | {reference} | {ratio_text} | {verdict}", flush=True)


def median_ms(client, urls: list, headers: dict[str, str] | None = None) -> float:
    """Median ms; a question the server refused (503: over its budget) counts as infinitely slow."""
    timings = []
    for url in urls:
        start = time.perf_counter()
        response = client.get(url, headers=headers)
        timings.append((time.perf_counter() - start) * 1000 if response.status_code == 200 else math.inf)
        if response.status_code != 200:
            print(f"  {response.status_code} after {time.perf_counter() - start:.1f} s: {url}", flush=True)
    return statistics.median(timings)


def cheapest_at(db: Path, built_at: datetime, offers: int, seconds: int, folder: Path, memory: bool) -> Server:
    server = Server(db, built_at, warm=True)  # as `gpuprice serve` runs: the market page written ahead
    try:
        server.wait_idle()  # its memory counts; its CPU is not the questions'
        measure(server, offers, seconds, folder, memory)
    except BaseException:
        server.stop()
        raise
    return server


def measure(server: Server, offers: int, seconds: int, folder: Path, memory: bool) -> None:
    import random

    base = server.base
    rng = random.Random(offers)
    import httpx

    with httpx.Client(base_url=base, timeout=120) as client:
        client.get("/cheapest?mem=60&hours=1").raise_for_status()  # loads the offers and builds the columns
        items = gpuhunt_items(base)
    questions = [(rng.choice((16, 24, 40, 48, 60, 80, 96, 141, 160, 192, 320, 640)), rng.choice(GPUS_ASKED))
                 for _ in range(300)]  # fmt: skip
    new_mem, new_model = lua(NEW_MEM_QUESTION, folder, "mem"), lua(NEW_MODEL_QUESTION, folder, "model")
    trivial1 = wrk(server, TRIVIAL, 1, seconds)
    trivial8 = wrk(server, TRIVIAL, 8, seconds)
    mem1 = wrk(server, "", 1, seconds, new_mem)
    mem8 = wrk(server, "", 8, seconds, new_mem)
    model1 = wrk(server, "", 1, seconds, new_model)
    repeat1 = wrk(server, "/cheapest?mem=60GB&hours=200", 1, seconds)
    both = side_by_side(server, items, questions, new_mem, rounds=7, block_s=2)  # after the runs above, as mem1
    print(f"\n{offers:,} offers ({len(items):,} of them in the gpuhunt export: hourly pricings with a host shape); "
          f"wrk {seconds} s per run, one uvicorn worker, {os.cpu_count()} CPUs (shared)")  # fmt: skip
    print(f"  trivial endpoint: p50 {trivial1.p50_ms:.3f} ms at 1 connection, {trivial8.rps:,.0f} req/s at 8; "
          f"server CPU {trivial1.cpu_ms:.3f} ms per request")  # fmt: skip
    print(f"  /cheapest, the same question repeated (answer cache): p50 {repeat1.p50_ms:.3f} ms at 1 connection")
    print(f"  gpuhunt filter+sort in memory, same question mix, in {len(both.rounds)} rounds alternating with new mem "
          f"questions over HTTP (2 s each): median {both.hunt_ms:.3f} ms ({both.hunt_cpu:.3f} ms CPU); "
          f"rounds (ours, gpuhunt) ms: {', '.join(f'({a:.3f}, {b:.3f})' for a, b in both.rounds)}")  # fmt: skip
    print(f"  server CPU per request: new mem question {mem1.cpu_ms:.3f} ms, new by-model question "
          f"{model1.cpu_ms:.3f} ms (trivial {trivial1.cpu_ms:.3f} ms)")  # fmt: skip
    limit = 1.0 if offers <= 2000 else 3.0
    report(f"new /cheapest?mem question p50 ({offers:,} offers) ≤ {limit:g} ms", mem1.p50_ms, "ms",
           f"trivial p50 {trivial1.p50_ms:.3f} ms", mem1.p50_ms / trivial1.p50_ms, mem1.p50_ms <= limit)  # fmt: skip
    report(f"new mem questions req/s at 8 conns ({offers:,}) ≥ 0.3× trivial", mem8.rps, "req/s",
           f"trivial {trivial8.rps:,.0f} req/s", mem8.rps / trivial8.rps, mem8.rps / trivial8.rps >= 0.3)  # fmt: skip
    report(f"new question over HTTP vs gpuhunt in memory ({offers:,}) ≥ 3× faster (interleaved rounds)", both.ours_ms,
           "ms", f"gpuhunt {both.hunt_ms:.3f} ms; ratio: median of {len(both.rounds)} rounds' ratios", both.ratio,
           both.ratio >= 3)  # fmt: skip
    report(f"  the same in CPU: server CPU per request vs gpuhunt's CPU ({offers:,}) ≥ 3×", both.ours_cpu, "ms CPU",
           f"gpuhunt {both.hunt_cpu:.3f} ms CPU", both.cpu_ratio, both.cpu_ratio >= 3)  # fmt: skip
    model_met = model1.p50_ms <= 3.0 if offers > 2000 else True
    report(f"new by-model question p50 ({offers:,} offers){' ≤ 3 ms' if offers > 2000 else ''}", model1.p50_ms, "ms",
           f"trivial p50 {trivial1.p50_ms:.3f} ms", model1.p50_ms / trivial1.p50_ms, model_met)  # fmt: skip
    if memory:
        rss, peak = server.memory_mb()
        report("memory under the new-question load ≤ 400 MB", peak, "MB peak RSS", f"RSS now {rss:.0f} MB", None,
               peak <= 400)  # fmt: skip


def history_on(server: Server, built_at: datetime, repeat: int, scale: str) -> None:
    import httpx

    with httpx.Client(base_url=server.base, timeout=300) as client:
        trivial = median_ms(client, [TRIVIAL] * 50)
        keys = client.get("/offers?limit=500&sort=provider").json()["offers"]
        questions = history_questions(keys, built_at, repeat)
        offers = history_questions(keys, built_at, 3 * OFFER_QUESTIONS)["offer"]
        cached = in_page_cache(server.db)
        offer, plain = interleaved(server, client, offers[: 2 * OFFER_QUESTIONS], [None, PLAIN])
        evicted = out_of_page_cache(server.db)
        (cold,) = interleaved(server, client, offers[2 * OFFER_QUESTIONS :], [None])
        points = len(client.get(offers[0]).json()["series"][0]["points"])
        snapshot_ms = median_ms(client, questions["snapshot"])
        built_ms = median_ms(client, questions["snapshot_built"])
        digest_ms = median_ms(client, questions["digest"])
        for page in MARKET_VIEWS:  # a visitor's market page too: a server answers every kind
            client.get(page).raise_for_status()
        rss, peak = server.memory_mb()
    print(f"\nhistory over HTTP at {scale}, median of {repeat} new questions each, {OFFER_QUESTIONS} for one offer's "
          f"history (trivial endpoint: {trivial:.2f} ms)")  # fmt: skip
    print(f"  the history files were {cached} in the page cache before the questions; {evicted} when the "
          f"offers asked from the disk were")  # fmt: skip
    offer.report(f"one offer's six months ({points} points, {scale})")
    plain.report(f"  the same asked without compression ({PLAIN_WHY}; {points} points, {scale})", limit=None)
    cold.report(f"  the same, its records read from the disk ({COLD_WHY}; {points} points, {scale})", limit=None)
    report(f"a day's snapshot /offers?date= ({scale}) ≤ 20 ms", snapshot_ms, "ms", f"trivial {trivial:.2f} ms",
           snapshot_ms / trivial, snapshot_ms <= 20)  # fmt: skip
    report(f"  (the same days sorted by cny_per_hour: not kept, built on demand ({scale}))", built_ms, "ms",
           f"trivial {trivial:.2f} ms", built_ms / trivial, None)  # fmt: skip
    report(f"a digest built on demand ({scale}) ≤ 50 ms", digest_ms, "ms", f"trivial {trivial:.2f} ms",
           digest_ms / trivial, digest_ms <= 50)  # fmt: skip
    report("memory after the mixed load (new /cheapest questions, history, market pages) ≤ 400 MB", peak,
           "MB peak RSS", f"RSS now {rss:.0f} MB; aim ≤ 380", None, peak <= 400)  # fmt: skip


def with_a_day_of_runs(db: Path, built_at: datetime, folder: Path) -> tuple[Path, datetime, int]:
    """A copy of `db` and its history files in `folder` with one day of collection runs landed after
    the compaction, as the schedule would land them (collectors.schedule.planned_runs: each provider
    scope every interval, its current offers observed again with new observation ids), which is the
    state production is in most of the day; returns the copy, its build moment (the last run's day
    end) and how many observations landed. Only `observations` grows: what history reads."""
    import duckdb

    from collectors.schedule import planned_runs
    from pricedb.history_files import files_folder
    from pricedb.settings import Settings

    copy = folder / db.name
    shutil.copyfile(db, copy)
    shutil.copytree(files_folder(db), files_folder(copy))
    con = duckdb.connect(str(copy))
    columns = [name for (name, *_) in con.execute("DESCRIBE observations").fetchall()]
    next_id, run_id = con.execute("SELECT max(observation_id) + 1, max(run_id) + 1 FROM observations").fetchone()
    landed = 0
    for plan in planned_runs(Settings()):
        for k in range(max(1, 24 * 60 // plan.interval_minutes)):
            at = built_at + timedelta(minutes=1 + k * plan.interval_minutes)
            values = {"observation_id": f"{next_id} + row_number() OVER (ORDER BY provider, region, sku, pricing) - 1",
                      "run_id": str(run_id), "observed_at": f"TIMESTAMP '{at.isoformat()}'"}  # fmt: skip
            pricings = sorted(p.value for p in plan.scope.pricings)
            inserted = con.execute(
                f"INSERT INTO observations SELECT {', '.join(values.get(c, c) for c in columns)} FROM offers "
                f"WHERE provider = ? AND pricing IN ({', '.join('?' for _ in pricings)})",
                [plan.collector.name, *pricings],
            ).fetchone()[0]
            next_id, run_id, landed = next_id + inserted, run_id + 1, landed + inserted
    con.close()
    return copy, built_at + timedelta(days=1), landed


def history_since_compaction(db: Path, built_at: datetime, repeat: int, scale: str) -> None:
    """One offer's six months with a day of runs landed since the compaction, over HTTP: the first
    question after they landed (it reads them into memory, pricedb.history_recent) and the median."""
    import httpx

    with tempfile.TemporaryDirectory(dir=db.parent) as folder:
        start = time.monotonic()
        copy, later, landed = with_a_day_of_runs(db, built_at, Path(folder))
        os.sync()  # the copy's 2 GB written back before timing, not while
        print(f"\n  {landed:,} observations of a day's runs landed on a copy in {time.monotonic() - start:.1f} s")
        server = Server(copy, later, warm=True)  # as a scheduled server: runs land, the warm-up reads them
        try:
            warm_s = server.wait_idle()  # the warm-up reads the day's runs (api.web.warm), not the first question
            with httpx.Client(base_url=server.base, timeout=300) as client:
                trivial = median_ms(client, [TRIVIAL] * 50)
                keys = client.get("/offers?limit=500&sort=provider").json()["offers"]
                urls = history_questions(keys, later, 2 * OFFER_QUESTIONS + 1)["offer"]
                first_ms = median_ms(client, urls[:1])
                in_page_cache(server.db)
                offer, plain = interleaved(server, client, urls[1:], [None, PLAIN])
                points = len(client.get(urls[1]).json()["series"][0]["points"])
                rss, peak = server.memory_mb()
        finally:
            server.stop()
    report(f"  (the first question after the runs landed and the warm-up ({warm_s:.1f} s) read them ({scale}))",
           first_ms, "ms", f"trivial {trivial:.2f} ms", first_ms / trivial, None)  # fmt: skip
    offer.report(f"one offer's six months with a day of runs since the compaction ({points} points, {scale})")
    plain.report(f"  the same asked without compression ({PLAIN_WHY}; {points} points, {scale})", limit=None)
    report(f"  (memory, the day's runs held ({scale}))", peak, "MB peak RSS", f"RSS now {rss:.0f} MB", None, None)


OFFER_QUESTIONS = 45  # named offers asked about each way, each once: the median of 9 moved with one slow moment
# httpx asks `gzip, deflate, br, zstd`, as Chromium and Firefox do, and a history answer goes compressed
# (api.json_encoding); a client asking for none (curl without --compressed) still gets it as it is.
PLAIN = {"accept-encoding": "identity"}
PLAIN_WHY = "Accept-Encoding: identity, as curl asks; before round 9 every client got this"
COLD_WHY = "new offers again, the history files dropped from the page cache first, as after a reboot"


# Whether an offer's records are in the page cache decides its answer's cost: from the cache the
# event loop writes it at once (api.history_answer_at_once), from the disk a worker thread waits for
# the read. A server that has answered holds its history files (~360 MB at 10M observations) in the
# page cache, as the compaction that wrote them left them, unless something else on the host pushed
# them out: before round 10 the 2,000-offer rows read after the 50,000-offer pass had copied 2 GB
# (history_since_compaction) and other work had pushed about a third of them out, so the compressed
# row, asked first, read the disk, and the uncompressed row asked the same offers again from the
# cache (11-12 against 6-7 ms, the encodings' difference it seemed to show). So the rows now say
# where the records were: the encodings alternate over offers of their own from the page cache, and
# a third set of new offers is asked with the files dropped from it.
def history_files_of(db: Path) -> list[Path]:
    from pricedb.history_files import files_folder

    return sorted(files_folder(db).glob("points-*.bin"))


def in_page_cache(db: Path) -> str:
    """Read the history files into the page cache (as their compaction left them); how much of them
    was there before."""
    before = resident(db)
    for path in history_files_of(db):
        with path.open("rb", buffering=0) as file:
            while file.read(8 << 20):
                pass
    return before


def out_of_page_cache(db: Path) -> str:
    """Drop the history files from the page cache (POSIX_FADV_DONTNEED: nothing is written); how much
    of them is left there."""
    for path in history_files_of(db):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return resident(db)


def resident(db: Path) -> str:
    """The share of the history files in the page cache, as util-linux's `fincore` reads it."""
    files = history_files_of(db)
    if not files or shutil.which("fincore") is None:
        return "(unknown: no fincore)"
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES,SIZE", *map(str, files)],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    held, size = (sum(int(line.split()[k]) for line in out.splitlines()) for k in (0, 1))
    return f"{held / max(1, size):.0%}"


class Interleaved(NamedTuple):
    ms: float  # median over the questions, wall clock, client included (httpx, as the trivial reference's)
    trivial_ms: float  # median of the trivial requests, each sent right before a question
    ratio: float  # median of each (question, trivial request before it) pair's ratio
    cpu_ms: float  # the server's CPU per answer, the same questions asked again in a block
    trivial_cpu_ms: float

    def report(self, target: str, limit: float | None = 5) -> None:
        """The figure and its server CPU; `limit` None: shown for comparison, no target of its own."""
        met = None if limit is None else self.ms <= limit
        report(f"{target}{'' if limit is None else f' ≤ {limit:g} ms'}", self.ms, "ms",
               f"trivial {self.trivial_ms:.2f} ms, interleaved", self.ratio, met)  # fmt: skip
        report(f"  (the same: the server's CPU per answer, {target.strip()})", self.cpu_ms, "ms CPU",
               f"trivial {self.trivial_cpu_ms:.2f} ms CPU", self.cpu_ms / self.trivial_cpu_ms, None)  # fmt: skip


def interleaved(server: Server, client: Any, urls: list[str], ways: list[dict[str, str] | None]) -> list[Interleaved]:
    """Each way (the requests' headers) asks questions of its own: question k goes the way k mod
    len(ways), each right after a trivial request (the same client and headers), so a change in the
    shared host's speed, or in what the page cache holds, hits every way and its reference alike;
    then, per way, the server's CPU per answer over its questions asked again in a block (four times
    each), and per trivial request over as many."""
    pairs: list[list[tuple[float, float]]] = [[] for _ in ways]  # (trivial, question) ms
    for k, url in enumerate(urls):
        headers = ways[k % len(ways)]
        trivial = median_ms(client, [TRIVIAL], headers)
        pairs[k % len(ways)].append((trivial, median_ms(client, [url], headers)))
    found = []
    median = statistics.median
    for w, headers in enumerate(ways):
        asked = urls[w :: len(ways)]
        cpu = []
        for block in (asked * 4, [TRIVIAL] * len(asked) * 4):  # the server's CPU is counted in 10 ms ticks
            before = server.cpu_s()
            median_ms(client, block, headers)
            cpu.append((server.cpu_s() - before) * 1000 / len(block))
        way = pairs[w]
        found.append(
            Interleaved(median(q for _, q in way), median(t for t, _ in way), median(q / t for t, q in way), *cpu)
        )
    return found


def history_questions(keys: list[dict], built_at: datetime, repeat: int) -> dict[str, list[str]]:
    """The history questions of one run: `repeat` named offers' six months, days' snapshots and digests."""
    first = (built_at - SIX_MONTHS).date()
    days = [first + timedelta(days=20 + 5 * k) for k in range(repeat)]
    chosen = keys[:: max(1, len(keys) // repeat)][:repeat]
    one = [
        "/offers/history?" + urlencode({"provider": o["provider"], "region": o["region"], "sku": o["sku"],
                                        "pricing": o["pricing"], "since": str(first), "until": str(built_at.date())})
        for o in chosen
    ]  # fmt: skip
    return {
        "offer": one,
        "snapshot": [f"/offers?date={d}" for d in days],
        # The same days in another order: not the question kept per day (api.day_answers), built on demand.
        "snapshot_built": [f"/offers?date={d}&sort=cny_per_hour" for d in days],
        "digest": [f"/digest?date={d}" for d in days],
    }


def history_cpu(db: Path, built_at: datetime, repeat: int, scale: str) -> None:
    """The same history questions in this process, through the app without a socket: CPU time per
    answer (`time.process_time`, every thread of the process), which a loaded machine disturbs less
    than wall time. Run it from a checkout of an older commit for the before figures."""
    from fastapi.testclient import TestClient

    from pricedb import clock

    moment = (built_at + SERVER_CLOCK).replace(tzinfo=UTC)
    clock.set_clock(lambda: moment)
    with TestClient(app_with_trivial(db)) as client:
        keys = client.get("/offers?limit=500&sort=provider").json()["offers"]
        questions = {"trivial": [TRIVIAL] * repeat, **history_questions(keys, built_at, repeat)}
        cpu: dict[str, float] = {}
        for kind, urls in questions.items():
            timings = []
            for url in urls:
                start = time.process_time()
                response = client.get(url)
                spent = (time.process_time() - start) * 1000
                timings.append(spent if response.status_code == 200 else math.inf)  # 503: over the budget
                if response.status_code != 200:
                    print(f"  {response.status_code} after {spent:,.0f} ms CPU: {url}", flush=True)
            cpu[kind] = statistics.median(timings)
    print(f"\nhistory in process at {scale}: CPU ms per answer, median of {repeat} new questions each")
    reference = f"trivial {cpu['trivial']:.2f} ms CPU (the same client)"
    for kind, limit in (("offer", 5), ("snapshot", 20), ("snapshot_built", None), ("digest", 50)):
        met = None if limit is None else cpu[kind] <= limit
        report(f"{kind} CPU in process ({scale}){'' if limit is None else f' ≤ {limit} ms'}", cpu[kind], "ms CPU",
               reference, cpu[kind] / cpu["trivial"], met)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="folder keeping the generated databases (required)")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--small", type=int, default=2000, help="offers of the small catalog (1M observations)")
    parser.add_argument("--offers", type=int, default=50_000)
    parser.add_argument("--observations", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=9, help="history questions per kind")
    parser.add_argument("--skip-history", action="store_true")
    parser.add_argument("--skip-day-of-runs", action="store_true", help="not the day of runs landed on a copy")
    parser.add_argument(
        "--history-only",
        action="store_true",
        help="only the history targets: at --offers and at --small offers, each with --observations",
    )
    parser.add_argument(
        "--history-cpu",
        action="store_true",
        help="with --history-only: CPU per answer in this process instead of over HTTP",
    )
    parser.add_argument("--serve", nargs=4, metavar=("DB", "PORT", "NOW", "WARM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(Path(args.serve[0]), int(args.serve[1]), args.serve[2], args.serve[3] == "True")
        return
    if args.cache is None:
        parser.error("--cache is required: the folder that keeps the generated databases")
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install -y wrk")
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.history_only:
        for offers in (args.offers, args.small):
            db, built_at = database(args.cache, offers, args.observations)
            scale = f"{offers:,} offers, {args.observations:,} observations"
            if args.history_cpu:
                history_cpu(db, built_at, args.repeat, scale)
                continue
            server = Server(db, built_at, warm=True)
            try:
                server.wait_idle()
                history_on(server, built_at, args.repeat, scale)
            finally:
                server.stop()
            history_since_compaction(db, built_at, args.repeat, scale)
        print_rows()
        return
    small, small_at = database(args.cache, args.small, 1_000_000)
    big, big_at = database(args.cache, args.offers, args.observations)
    with tempfile.TemporaryDirectory() as folder:
        cheapest_at(small, small_at, args.small, args.seconds, Path(folder), memory=False).stop()
        server = cheapest_at(big, big_at, args.offers, args.seconds, Path(folder), memory=True)
        try:
            if not args.skip_history:
                history_on(server, big_at, args.repeat, f"{args.offers:,} offers, {args.observations:,} observations")
        finally:
            server.stop()
        if not args.skip_history and not args.skip_day_of_runs:
            scale = f"{args.offers:,} offers, {args.observations:,} observations"
            history_since_compaction(big, big_at, args.repeat, scale)
    print_rows()


def print_rows() -> None:
    print("\ntarget | figure | reference (same run) | ratio | verdict")
    for row in ROWS:
        print(" | ".join(row))
    print(f"(figures from a 2-CPU machine shared with other work: absolute timings are noisy; run {date.today()})")


if __name__ == "__main__":
    main()
