"""One collecting process and three read-only replicas, each a real `gpuprice serve` on loopback:
one replica reads the published folder, one reads it over HTTP from the standard library's static
file server, one reads SeaweedFS's S3 endpoint (a real object store, with credentials). The
collector publishes to the folder and to the bucket.

- After a run lands, every replica answers the new data within one poll interval + 1 s (its own
  `/healthz` says how long the snapshot took to arrive), with the collector's exact bytes for a
  fixed set of questions.
- The collector killed (SIGKILL) in the middle of a publish — new files uploaded, no manifest yet —
  never shows a replica a partial snapshot; the next collector's publish reaches them all.
- With every source down, the replicas keep answering and `/healthz` says how old their data is.
- `/metrics` of every process parses with prometheus-client's own parser.

The processes start once for the module; collection is offline, from a copy of the recordings whose
manual quotes sheet the test edits, and only FX and `manual` are collected (tests/support/collector_process.py)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from pricedb import tls
from pricedb.replication.manifest import Manifest
from pricedb.version import VERSION
from tests.conftest import FIXTURES
from tests.support.seaweedfs import ACCESS_KEY, SECRET_KEY, SeaweedFS, seaweedfs

pytestmark = pytest.mark.real_clock_peer  # SeaweedFS keeps the real clock (see pyproject's markers)

ROOT = Path(__file__).resolve().parents[2]
POLL_S = 2.0  # the bound is one poll + 1 s: a shorter poll leaves too little room on a loaded two-core machine
STALE_AFTER_S = 6.0
BUCKET, PREFIX = "prices", "gpuprice"
PUBLIC_URL = "http://prices.example.test"  # the Atom feed's links, the same from every process
QUESTIONS = [
    "/cheapest?mem=60GB&hours=200",
    "/cheapest?mem=40&pricing=monthly&include_stale=true",
    "/offers",
    "/offers/history?provider=manual&since=2020-01-01&until=2026-11-30",
    "/providers",
    "/export?format=csv",
    "/export?format=parquet",
    "/export/skypilot/azure/vms.csv",  # aws needs zones, which this manual-only round has not collected
    "/digest?date=2026-11-20&format=md",
    "/digest.atom",
]
MANUAL_OFFERS = "/offers?provider=manual&region=cn&pricing=on_demand"
_ISOLATED = ("GPUPRICE_", "AWS_", "ALIBABA_CLOUD_", "TENCENTCLOUD_", "VAST_", "RUNPOD_", "VERDA_")


def environment(**settings: object) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ISOLATED)}
    env.update(
        PYTHONPATH=str(ROOT),
        AWS_CONFIG_FILE="/nonexistent/aws-config",
        AWS_SHARED_CREDENTIALS_FILE="/nonexistent/aws-credentials",
        AWS_EC2_METADATA_DISABLED="true",
        GPUPRICE_PUBLIC_URL=PUBLIC_URL,
    )
    env.update({f"GPUPRICE_{k.upper()}": str(v) for k, v in settings.items()})
    return env


def wait_for(what: str, condition: Callable[[], Any], timeout_s: float = 120.0, every_s: float = 0.05) -> Any:
    """`condition()`'s first true value. The timeout only bounds a broken run: on a loaded machine
    (two cores shared) starting a process alone can take tens of seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = condition()
        except (httpx.HTTPError, OSError, ValueError):
            result = None
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every_s)


@dataclass
class Server:
    """A `gpuprice serve` process, found through the address file it writes."""

    name: str
    argv: list[str]
    env: dict[str, str]
    address_file: Path
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    url: str = ""

    @property
    def log(self) -> Path:
        return self.folder / f"{self.name}.log"

    def start(self) -> Server:
        self.address_file.unlink(missing_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, env=self.env, cwd=self.folder, stdout=out, stderr=out)
        return self

    def wait_up(self) -> Server:
        process = self.process
        assert process is not None

        def listening() -> bool:
            assert process.poll() is None, f"{self.name} ended:\n{self.log.read_text()[-3000:]}"
            address = json.loads(self.address_file.read_text())
            self.url = address["url"] if address["pid"] == process.pid else ""
            return bool(self.url)

        wait_for(f"{self.name} to listen", listening)
        return self

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10, verify=tls.client_context())  # ~50 ms CPU less a question

    def health(self) -> dict[str, Any]:
        return self.get("/healthz").json()

    def stop(self) -> None:
        stop_all([self])


def stop_all(servers: Iterable[Server]) -> None:
    """SIGTERM to every server still running, then wait for each: they shut down side by side."""
    running = [s.process for s in servers if s.process is not None and s.process.poll() is None]
    for process in running:
        process.send_signal(signal.SIGTERM)
    for process in running:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        return


@dataclass
class Cluster:
    folder: Path
    published: Path
    sheet: Path
    s3: SeaweedFS
    http: ThreadingHTTPServer
    replicas: dict[str, Server]
    collector_env: dict[str, str]
    started: list[Server]  # every process the cluster started, stopped together when the module ends
    collector: Server | None = None
    landed: dict[str, Any] = field(default_factory=dict)  # version and answers of the last landing
    runs: int = 0  # runs the collectors recorded so far: a start-up round is FX, then manual

    def start_collector(self, *launcher_options: str) -> Server:
        argv = [sys.executable, "-m", "tests.support.collector_process", "--providers", "manual", *launcher_options,
                "--", "serve", "--offline", "--db", str(self.folder / "collector.duckdb"), "--port", "0"]  # fmt: skip
        address = self.folder / "collector.duckdb.server.json"
        self.collector = Server("collector", argv, self.collector_env, address, self.folder).start()
        self.started.append(self.collector)
        return self.collector

    def manifests(self) -> dict[str, Manifest]:
        """The current manifest at each place the collector publishes to."""
        local = Manifest.model_validate_json((self.published / "manifest.json").read_bytes())
        body = self.s3.client().get_object(Bucket=BUCKET, Key=f"{PREFIX}/manifest.json")["Body"].read()
        return {"folder": local, "s3": Manifest.model_validate_json(body)}

    def wait_landed(self) -> int:
        """Wait until the collector's round has landed and is published; the version published."""
        collector = self.collector
        assert collector is not None
        collector.wait_up()

        def published_all() -> int | None:
            metrics = scrape(collector)
            runs = sum(metrics.get("gpuprice_runs_total", {}).values())
            manifests = self.manifests()
            versions = {m.version for m in manifests.values()}
            if runs == self.runs and all(m.last_run_id == runs for m in manifests.values()) and len(versions) == 1:
                health = collector.health()
                return versions.pop() if health["publish"]["version"] in versions else None
            return None

        return wait_for("the collector to publish every run", published_all)

    def wait_replicas_at(self, version: int) -> None:
        """Every replica serves `version`, and says it arrived within one poll interval + 1 s of its publish."""
        for replica in self.replicas.values():
            snapshot = wait_for(
                f"{replica.name} to load snapshot {version}",
                lambda r=replica: (s := r.health()["snapshot"])["version"] == version and s,
            )
            assert snapshot["loaded_after_s"] <= POLL_S + 1.0, (replica.name, snapshot)

    def assert_answers_like_the_collector(self) -> dict[str, bytes]:
        assert self.collector is not None
        servers = [self.collector, *self.replicas.values()]
        with ThreadPoolExecutor(len(servers)) as pool:  # each process answers its questions beside the others
            collector_answers, *replica_answers = pool.map(lambda s: [s.get(q) for q in QUESTIONS], servers)
        expected = dict(zip(QUESTIONS, collector_answers, strict=True))
        for question, answer in expected.items():
            assert answer.status_code == 200, (question, answer.text)
        for replica, answers in zip(self.replicas.values(), replica_answers, strict=True):
            for question, got in zip(QUESTIONS, answers, strict=True):
                assert (got.status_code, got.content) == (200, expected[question].content), (replica.name, question)
        return {q: a.content for q, a in expected.items()}

    def land(self) -> int:
        """Start the collector, let its first round land and reach every replica; the version."""
        self.start_collector()
        self.runs += 2
        version = self.wait_landed()
        self.wait_replicas_at(version)
        self.landed = {"version": version, "answers": self.assert_answers_like_the_collector()}
        return version

    def ensure_landed(self) -> None:
        if not self.landed:
            self.land()


def scrape(server: Server) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    response = server.get("/metrics")
    assert response.status_code == 200
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def checks(server: Server) -> float:
    """How many times a replica has looked at its source so far, whatever each look found."""
    return sum(scrape(server).get("gpuprice_snapshot_checks_total", {}).values())


def manual_price(server: Server) -> float:
    offers = server.get(MANUAL_OFFERS).json()["offers"]
    return next(o["price"] for o in offers if o["sku"] == "zhixingyun/A100-PCIE-40GB")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("replicas")
    published = folder / "published"
    published.mkdir()
    recordings = folder / "recordings"
    for provider in ("fx", "manual"):
        shutil.copytree(FIXTURES / provider, recordings / provider)
    s3 = {
        "s3_endpoint_url": "",  # filled once SeaweedFS listens
        "s3_access_key_id": ACCESS_KEY,
        "s3_secret_access_key": SECRET_KEY,
        "s3_region": "us-east-1",
        "s3_addressing_style": "path",
    }
    with ExitStack() as stack:
        store = stack.enter_context(seaweedfs(folder / "seaweedfs"))  # starting while the replicas start
        s3["s3_endpoint_url"] = store.endpoint
        http = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(published)))
        threading.Thread(target=http.serve_forever, daemon=True).start()
        stack.callback(http.server_close)
        stack.callback(http.shutdown)
        started: list[Server] = []
        stack.callback(stop_all, started)
        sources = {
            "folder": str(published),
            "http": f"http://127.0.0.1:{http.server_address[1]}",
            "s3": f"s3://{BUCKET}/{PREFIX}",
        }
        replicas = {}
        for name, source in sources.items():
            argv = [sys.executable, "-m", "api.cli", "serve", "--replica-of", source,
                    "--db", str(folder / f"{name}.duckdb"), "--port", "0"]  # fmt: skip
            env = environment(replica_poll_s=POLL_S, replica_stale_after_s=STALE_AFTER_S, **s3)
            address = folder / f"{name}-replica" / "replica.duckdb.server.json"
            replicas[name] = Server(f"replica-{name}", argv, env, address, folder).start()
            started.append(replicas[name])
        store.create_bucket(BUCKET)
        for replica in replicas.values():
            replica.wait_up()
        collector_env = environment(
            offline=1,
            fixtures_dir=recordings,
            publish_to=f"{published},s3://{BUCKET}/{PREFIX}",
            publish_retention_minutes=60,
            schedule_jitter_s=0,
            **s3,
        )
        cluster = Cluster(folder, published, recordings / "manual" / "manual_quotes.csv", store, http, replicas,
                          collector_env, started)  # fmt: skip
        yield cluster


def test_after_a_run_lands_every_replica_answers_like_the_collector(cluster: Cluster) -> None:
    for replica in cluster.replicas.values():  # nothing published yet: they answer, and say so
        health = replica.health()
        assert health["status"] == "degraded" and health["snapshot"]["version"] is None, health
        assert health["problems"][0].startswith("no snapshot loaded yet from ")
        assert replica.get("/offers").json()["count"] == 0
    version = cluster.land()  # within one poll interval + 1 s, the collector's exact answers
    for replica in cluster.replicas.values():
        health = replica.health()
        assert health["role"] == "replica" and health["snapshot"]["version"] == version
        assert manual_price(replica) == 8.5
    manifests = cluster.manifests()
    assert manifests["folder"].files == manifests["s3"].files  # one snapshot, two places


def test_a_collector_killed_mid_publish_never_shows_a_partial_snapshot(cluster: Cluster) -> None:
    cluster.ensure_landed()
    before = cluster.landed
    assert cluster.collector is not None
    cluster.collector.stop()
    sheet = cluster.sheet.read_text()
    cluster.sheet.write_text(sheet.replace(",on_demand,8.50,CNY,", ",on_demand,9.10,CNY,"))

    seen: list[tuple[str, int, bytes]] = []
    watching = threading.Event()

    def watch() -> None:  # what a client of each replica sees while the collector dies
        while not watching.is_set():
            for name, replica in cluster.replicas.items():
                version = replica.health()["snapshot"]["version"]
                seen.append((name, version, replica.get(MANUAL_OFFERS).content))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        dying = cluster.start_collector("--die-before-manifest")
        assert dying.process is not None
        assert dying.process.wait(timeout=60) == -signal.SIGKILL
        cluster.runs += 1  # FX had landed: its publish is the one that died
        # the replicas look again after it died: two looks each, so at least one began after the death
        looked = {name: checks(replica) for name, replica in cluster.replicas.items()}
        for name, replica in cluster.replicas.items():
            wait_for(f"{replica.name} to look again", lambda r=replica, n=name: checks(r) >= looked[n] + 2,
                     every_s=POLL_S / 8)  # fmt: skip
    finally:
        watching.set()
        watcher.join()
    manifests = cluster.manifests()
    assert {m.version for m in manifests.values()} == {before["version"]}  # no manifest was written
    listed = cluster.s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/data/")["Contents"]
    in_bucket = {item["Key"].removeprefix(f"{PREFIX}/") for item in listed}
    in_folder = {p.relative_to(cluster.published).as_posix() for p in (cluster.published / "data").rglob("*.parquet")}
    assert in_bucket - {f.path for f in manifests["s3"].files}, "the collector died before uploading to the bucket"
    assert in_folder - {f.path for f in manifests["folder"].files}, "the collector died before uploading to the folder"
    assert len(seen) > 3 and {version for _, version, _ in seen} == {before["version"]}
    for name in cluster.replicas:  # the same complete answer throughout
        assert len({body for seen_by, _, body in seen if seen_by == name}) == 1
    for replica in cluster.replicas.values():
        for question in QUESTIONS:
            assert replica.get(question).content == before["answers"][question], (replica.name, question)

    version = cluster.land()  # a collector started again publishes what the dead one could not
    assert version > before["version"]
    for replica in cluster.replicas.values():
        assert manual_price(replica) == 9.1
    local = {p.relative_to(cluster.published).as_posix() for p in (cluster.published / "data").rglob("*.parquet")}
    named = {f.path for n in (cluster.published / "snapshots").iterdir() for f in Manifest.model_validate_json(
        n.read_bytes()).files}  # fmt: skip
    assert local == named  # the dead collector's uploads are pruned


def test_with_every_source_down_replicas_keep_answering_and_say_how_old(cluster: Cluster) -> None:
    cluster.ensure_landed()
    collector = cluster.collector
    assert collector is not None
    processes = [collector, *cluster.replicas.values()]
    metrics = {server.name: scrape(server) for server in processes}
    version = cluster.landed["version"]
    assert metrics["collector"]["gpuprice_publish_version"][()] == version
    assert metrics["collector"]["gpuprice_publishes_total"][(("outcome", "published"),)] >= 1
    for name in cluster.replicas:
        replica = metrics[f"replica-{name}"]
        assert replica["gpuprice_snapshot_version"][()] == version
        assert replica["gpuprice_info"][(("role", "replica"), ("version", VERSION))] == 1
        assert replica["gpuprice_runs_total"] == metrics["collector"]["gpuprice_runs_total"]
        assert replica["gpuprice_snapshot_downloaded_bytes_total"][()] > 0

    collector.stop()
    cluster.http.shutdown()
    cluster.http.server_close()  # refused from now on, not accepted and left unanswered
    cluster.s3.stop()
    cluster.published.rename(cluster.published.with_name("published-gone"))
    answers = cluster.landed["answers"]
    for replica in cluster.replicas.values():
        health = wait_for(
            f"{replica.name} to say its snapshot is too old",
            lambda r=replica: (h := r.health())["status"] == "degraded" and h["snapshot"]["error"] and h,
            timeout_s=STALE_AFTER_S + 120,
        )
        snapshot = health["snapshot"]
        # the block rounds the age to 0.1 s; the problem is judged on the unrounded age (6.04 s → 6.0)
        assert snapshot["version"] == version and snapshot["age_s"] >= STALE_AFTER_S
        (problem,) = health["problems"]
        past = rf"past GPUPRICE_REPLICA_STALE_AFTER_S \({STALE_AFTER_S:g} s\)"
        said = rf"snapshot {version} is \d+ s old, {past}; the source: (.+)"
        assert (match := re.fullmatch(said, problem)) and match[1] == snapshot["error"]
        assert snapshot["error"].startswith(snapshot["source"])
        for question in QUESTIONS:
            assert replica.get(question).content == answers[question], (replica.name, question)
        after = scrape(replica)
        assert after["gpuprice_snapshot_age_seconds"][()] > STALE_AFTER_S
        assert after["gpuprice_snapshot_checks_total"][(("outcome", "failed"),)] >= 1
        assert SECRET_KEY not in replica.log.read_text() and SECRET_KEY not in json.dumps(health)
