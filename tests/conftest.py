"""Shared test helpers. No test touches the network: HTTP goes to respx mocks, to the offline
replay transport, or to a local replay server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import fcntl
import gc
import os
import pickle
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from collectors.base import Collector, Fetched, RawResponse
from collectors.http import Http, make_client
from collectors.replay import Replay
from collectors.runner import RunSummary, collect
from pricedb import clock, redact
from pricedb.fx import FxTable
from pricedb.models import FxRate
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.faketime_site import sitecustomize as faketime_site

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OBSERVED = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)


if faketime_site.UNDER_FAKETIME:  # the date-proof run: Python processes that tests start need the mends too
    site = str(Path(faketime_site.__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))


def fixture_bytes(provider: str, name: str) -> bytes:
    return (FIXTURES / provider / name).read_bytes()


def raw_fixture(provider: str, name: str, url: str, label: str = "", fetched_at: datetime = OBSERVED) -> RawResponse:
    """A recorded body as `fetch` would have returned it."""
    return RawResponse(url=url, fetched_at=fetched_at, body=fixture_bytes(provider, name), label=label)


def fetched_of(*raws: RawResponse) -> Fetched:
    return Fetched(list(raws))


def fetch_now(collector: Collector, transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    """`collector.fetch` for its whole scope, through the real `Http` wrapper (retries, base URLs)."""

    async def go() -> Fetched:
        async with make_client(collector.settings, transport) as client:
            return await collector.fetch(Http(client, collector.name, collector.settings), collector.scope())

    return asyncio.run(go())


def recorded_answer(provider: str, request: httpx.Request, strip_prefix: str = "") -> httpx.Response:
    """What fixtures/<provider>/replay.json answers to `request` (a respx side effect), matched by the
    manifest's own rules; `strip_prefix` removes a mirror's base path first."""
    url = request.url.copy_with(path=request.url.path.removeprefix(strip_prefix))
    route = Replay.load(FIXTURES, provider).find(request.method, str(url), request.content)
    assert route is not None, f"no recorded {provider} answer for {request.method} {request.url}"
    return httpx.Response(route.status, content=route.file.read_bytes(), headers={"content-type": "application/json"})


_LOOPBACK = ("127.0.0.1", "::1", "localhost")
_real_connect = socket.socket.connect


def _loopback_only(sock: socket.socket, address: object) -> None:
    """No test may touch the network: connections go to local test servers or nowhere."""
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and host not in _LOOPBACK and not host.startswith("/"):
        raise OSError(f"tests must not touch the network (tried to connect to {address!r})")
    _real_connect(sock, address)


def _isolate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    for name in list(os.environ):
        if name.startswith(("GPUPRICE_", "AWS_", "ALIBABA_CLOUD_", "TENCENTCLOUD_", "VAST_", "RUNPOD_", "VERDA_")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tests never see the developer's GPUPRICE_* settings or cloud credentials, nor the credentials
    an earlier test taught the redaction point (which would mask words in this test's texts)."""
    _isolate(monkeypatch)
    yield
    redact.forget_all()


def make_settings(folder: Path, **overrides: object) -> Settings:
    return Settings(
        db=folder / "test.duckdb",
        export_dir=folder / "exports",
        retry_base_delay_s=0.0,
        retry_max_delay_s=0.0,
        http_timeout_s=2.0,
        schedule_jitter_s=0,
        **overrides,
    )


_CLOCK_ORIGIN = "TESTS_CLOCK_ORIGIN_MONOTONIC"

# The files that take longest, longest first: each file's wall time in a whole xdist run (setup,
# call and teardown of its tests summed, its module and session fixtures included). With `--dist
# loadfile --no-loadscope-reorder` (pyproject) each worker takes the next file of this order when it
# runs low, so a long file never starts last and runs on alone while the other worker idles. Files
# not named here follow in collection order. The schemathesis file goes first and the history files
# second: the first needs the offline round (`offline_round`, built once under a lock), the second
# does not, so one worker builds the round while the other works rather than waits for it.
LONGEST_FIRST = (
    "tests/fault_matrix/test_api.py",
    "tests/api/test_history_files.py",
    "tests/web/test_browser.py",
    "tests/replication/test_replicas.py",
    "tests/fault_matrix/test_storage.py",
    "tests/api/test_day_answers.py",
    "tests/web/test_market_memo.py",
    "tests/api/test_cheapest_fast.py",
    "tests/end_to_end/test_wheel_install.py",
    "tests/formats/test_skypilot_readback.py",
    "tests/api/test_front.py",
    "tests/fault_matrix/test_collectors.py",
    "tests/store/test_snapshot_sql.py",
    "tests/replication/test_snapshots.py",
    "tests/api/test_query_fast.py",
    "tests/api/test_points_json.py",
    "tests/api/test_endpoints.py",
    "tests/store/test_digest_sql.py",
    "tests/api/test_estimate_endpoint.py",
    "tests/end_to_end/test_tencent_signed_live.py",
    "tests/api/test_history_fast.py",
    "tests/api/test_history_and_snapshots.py",
    "tests/api/test_cheapest_by_model.py",
    "tests/api/test_cheapest_every_card.py",
    "tests/end_to_end/test_offline_round_to_api_and_cli.py",
    "tests/collectors/test_deadlines.py",
    "tests/store/test_digest.py",
    "tests/end_to_end/test_e2e_networks_and_manual_sheet.py",
    "tests/formats/test_price_sheet.py",
    "tests/web/test_pages.py",
    "tests/end_to_end/test_digests_over_days.py",
    "tests/formats/test_parquet_rows.py",
    "tests/end_to_end/test_lambda_runpod_verda.py",
    "tests/end_to_end/test_aliyun_signed_live.py",
    "tests/end_to_end/test_vast_and_autodl.py",
    "tests/end_to_end/test_gcp_and_oci.py",
    "tests/formats/test_foreign_catalogs.py",
    "tests/collectors/test_runner.py",
)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(_CLOCK_ORIGIN, repr(time.monotonic()))  # xdist workers inherit it


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: files stay whole


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every module imported and every test collected (the schemathesis and hypothesis machinery too)
    would be walked again at each full garbage collection. What lives after collecting lives to the
    end, so it is frozen out of the walks, and the collections run less often (a young generation of
    20,000 objects, not 700). Measured with `-n 0`, back to back: test_api, test_day_answers,
    test_front and test_snapshot_sql together 50.9 -> 45.2 s CPU (the schemathesis test gains most);
    files whose time is DuckDB's (test_history_files) show no change beyond the noise. Tests that
    measure memory collect explicitly first (`gc.collect()`), so they count the same."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


@pytest.fixture(scope="session", autouse=True)
def _clock_starts_at_observed() -> Iterator[None]:
    """The suite's "now" (pricedb.clock) starts at OBSERVED, just after every fixture was recorded,
    and runs on with the monotonic clock. No test sees the system calendar, so the suite answers the
    same on any date; the year-ahead run (.ci/run) then shows that nothing reads the system clock
    behind pricedb.clock's back. `frozen_clock` stops it at OBSERVED for one test. Every xdist
    worker counts from the same moment (`pytest_configure`; the monotonic clock is the machine's),
    so a database one worker wrote (`offline_round`) is never in another one's future."""
    start = float(os.environ.get(_CLOCK_ORIGIN, time.monotonic()))
    previous = clock.set_clock(lambda: OBSERVED + timedelta(seconds=time.monotonic() - start))
    yield
    clock.set_clock(previous)


@pytest.fixture
def frozen_clock() -> Iterator[datetime]:
    """The one clock (pricedb.clock) pinned at OBSERVED, the moment the tests' data was seen, for
    code that judges staleness or picks a default day from "now" (the CLI opens its own state)."""
    with clock.pinned(OBSERVED) as moment:
        yield moment


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@dataclass(frozen=True)
class OfflineRound:
    """One offline collection of every provider, shared by the tests that only read its result."""

    db: Path
    summaries: list[RunSummary]


def _collect_offline_round(folder: Path) -> list[RunSummary]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _isolate(monkeypatch)
        offline = make_settings(folder, offline=True)
        store = PriceStore(offline)
        try:
            return asyncio.run(collect(store, offline))
        finally:
            store.close()


@pytest.fixture(scope="session")
def offline_round(tmp_path_factory: pytest.TempPathFactory) -> OfflineRound:
    """Collected once per test session: under xdist the first worker that needs it collects it into
    the session's shared temporary folder while the others wait on a lock, then all read that file
    (tests copy it: `offline_store`)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # pytest-N/ holds popen-gw*/
    folder = shared / "offline-round"
    with (shared / "offline-round.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = folder / "summaries.pickle"
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)  # a worker that died half-way
                folder.mkdir()
                summaries = _collect_offline_round(folder)
                done.write_bytes(pickle.dumps(summaries))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return OfflineRound(make_settings(folder).db, pickle.loads(done.read_bytes()))


@pytest.fixture
def offline_store(offline_round: OfflineRound, settings: Settings):
    """A private copy of the offline round's database (a test may write to it), opened offline."""
    shutil.copyfile(offline_round.db, settings.db)
    price_store = PriceStore(settings.model_copy(update={"offline": True}))
    yield price_store
    price_store.close()


@pytest.fixture(scope="session")
def _migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty database with every migration applied, made once: `store` starts from a copy of it
    (copying the file costs less than half of migrating a new one, and `store` runs hundreds of times)."""
    empty = make_settings(tmp_path_factory.mktemp("migrated"))
    PriceStore(empty).close()
    return empty.db


@pytest.fixture
def store(settings: Settings, _migrated_db: Path):
    if not settings.db.exists():  # a test that prepared its own file keeps it
        settings.db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_db, settings.db)
    price_store = PriceStore(settings)
    yield price_store
    price_store.close()


Seed = Callable[[PriceStore], object]
SeededStore = Callable[[Seed], PriceStore]  # the `store_seeded_by` fixture


@pytest.fixture(scope="session")
def _seeded_databases() -> dict[Seed, Path]:
    """What each seed wrote, made once per worker (`store_seeded_by`)."""
    return {}


@pytest.fixture
def store_seeded_by(
    settings: Settings,
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _migrated_db: Path,
    _seeded_databases: dict[Seed, Path],
) -> SeededStore:
    """`store`, holding what `seed` writes: the seed runs once per worker, into a copy of the migrated
    database, and each test starts from a private copy of what it wrote (so a test may write too).
    Seeding per test cost 100-150 ms CPU each (DuckDB transactions), hundreds of times."""

    def seeded(seed: Seed) -> PriceStore:
        if seed not in _seeded_databases:
            made = make_settings(tmp_path_factory.mktemp("seeded"))
            shutil.copyfile(_migrated_db, made.db)
            seeding = PriceStore(made)
            try:
                seed(seeding)
            finally:
                seeding.close()
            _seeded_databases[seed] = made.db
        assert not settings.db.exists(), "a test's database was opened before its seeded copy was placed"
        settings.db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_seeded_databases[seed], settings.db)
        return request.getfixturevalue("store")  # opened and closed as `store` (it keeps a file already there)

    return seeded


# ECB 2022-07-08 (fixtures/fx): USD 1.0163, CNY 6.8095, INR 80.5280 per EUR.
ECB_2022_07_08 = {"USD": 1.0163, "CNY": 6.8095, "INR": 80.5280}


@pytest.fixture
def fx_table() -> FxTable:
    day = datetime(2022, 7, 8).date()
    return FxTable.from_rates(FxRate(date=day, currency=c, rate=r, source="test") for c, r in ECB_2022_07_08.items())
