"""Fault matrix, API rows (issue 9, parts 4, 7 and 8): the API never freezes, every bad input is a
4xx JSON and the OpenAPI document tells the truth, `/docs` works offline.

Each test is one row of the issue's table, run against the real app: in-process for answers, over
a real uvicorn server on loopback where liveness under load is the point."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import duckdb
import httpx
import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.config import SchemathesisConfig
from schemathesis.python import asgi

from api.app import create_app
from api.budget import Budget, BudgetExceeded
from api.cli import main as cli_main
from api.parsing import parse_moment
from benchmarks.api_cheapest import seed
from pricedb import clock, tls
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import OfflineRound
from tests.helpers import assert_422_naming, uvicorn_serving

# ----- the OpenAPI document tells the truth: schemathesis, every check ----------------------------
# Bounded and deterministic: a fixed seed, every coverage case and five fuzzed examples per operation
# and mode, so the run takes seconds and finds the same thing every time. Every built-in check runs
# (the CLI's `--checks all`). The coverage phase is most of the calls (~1,850 of 1,892; ten fuzzed
# examples made 1,932) and is kept whole. Two things the schema cannot state, said here instead:
#  - /cheapest and /estimate validate combinations of parameters (mem *or* the estimator's inputs;
#    an architecture the estimator can build), which OpenAPI cannot express for query parameters:
#    a schema-valid request may be refused there with a 422 that names the parameter.
#  - a day may not be after today, and `since` comes before `until` (see `within_time_rules`).
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": 20261129,
        "generation": {"deterministic": True, "max-examples": 5},
        "phases": {"stateful": {"enabled": False}},
        "operations": [
            {
                "include-path": ["/cheapest", "/estimate"],
                "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "422"]}},
            }
        ],
    }
)


@pytest.fixture(scope="module")
def openapi_schema() -> object:
    """The app's OpenAPI document, loaded when the test runs (schemathesis's `from_fixture`): built at
    import, schemathesis would generate every operation's coverage examples while collecting, in
    every xdist worker (~3 s CPU each) rather than once in the worker that runs the test."""
    return schemathesis.openapi.from_dict(create_app(Settings(), schedule=False).openapi(), config=CONFIG)


SCHEMA = schemathesis.pytest.from_fixture("openapi_schema")


@pytest.fixture
def _node_id_kept(request: pytest.FixtureRequest) -> None:
    """schemathesis 4.32's lazy schema reads and renames `node._nodeid`, which pytest 9 no longer
    sets (`nodeid` is a property): give it the node's id to start from."""
    request.node._nodeid = request.node.nodeid


def _moment(value: object, end_of_day: bool = False) -> datetime | None:
    try:
        return parse_moment(str(value), end_of_day) if value else None
    except ValueError:
        return None


def within_time_rules(query: dict) -> None:
    """Rules relative to now and between parameters: a day after today is refused, and so is a
    `since` not before `until`; generated values that break them are moved into range."""
    now = clock.now_naive()
    day = _moment(query.get("date"))
    if day is not None and day.date() > now.date():
        query["date"] = now.date().isoformat()
    since, until = _moment(query.get("since")), _moment(query.get("until"), end_of_day=True)
    if since is not None and since >= (until or now):
        del query["since"]


@pytest.fixture(scope="module")
def served_app(offline_round: OfflineRound, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The real app over a copy of the offline round, its clock an hour after the round landed."""
    folder = tmp_path_factory.mktemp("schemathesis")
    shutil.copyfile(offline_round.db, folder / "test.duckdb")
    settings = Settings(db=folder / "test.duckdb", export_dir=folder / "exports", offline=True)
    store = PriceStore(settings)
    landed = store.cursor().execute("SELECT max(finished_at) FROM runs").fetchone()[0]
    with clock.pinned(landed + timedelta(hours=1)):
        yield create_app(settings, store=store, schedule=False)
    store.close()


@pytest.fixture(scope="module")
def asgi_client(served_app: object) -> Iterator[object]:
    """One in-process client for every call (schemathesis makes a new `requests` session per call
    otherwise, each reading the proxy settings from the environment: ~18% of the test's CPU). The app
    sets no cookie, so nothing carries over from one call to the next."""
    with asgi.get_client(served_app) as client:
        client.trust_env = False  # no proxy, netrc or CA bundle from the environment: the app is in-process
        yield client


@pytest.mark.usefixtures("_node_id_kept")
@SCHEMA.parametrize()
def test_openapi_document_tells_the_truth(case, asgi_client) -> None:
    """Row "schemathesis 4 (--checks all) against /openapi.json": 0 failures. Each operation is a
    subtest of this one test, and fails it with its own report."""
    within_time_rules(case.query or {})
    case.call_and_validate(session=asgi_client)
    assert not asgi_client.cookies  # each call starts as a new session would


# ----- the API never freezes ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def market_db(tmp_path_factory: pytest.TempPathFactory, offline_round: OfflineRound) -> Path:
    """2,000 offers with 50 observations each (benchmarks/api_cheapest.py's synthetic market)."""
    db = tmp_path_factory.mktemp("market") / "market.duckdb"
    seed(db, offers=2000, observations=100_000, templates=offline_round.db)
    return db


HEAVY = "/offers/history?since=2000-01-01&limit=500"


def test_healthz_answers_while_heavy_history_questions_run(market_db: Path, tmp_path: Path) -> None:
    """Row "8 parallel /offers/history?since=2000-01-01&limit=500": /healthz stalled up to 10.5 s.
    Now heavy answers run in worker threads, one at a time, each within its budget: /healthz keeps
    answering while they run (a loose bound, for a loaded CI machine; the figures are measured by
    benchmarks/api_under_load.py), and every heavy question gets an answer or a 503, never a hang.

    Eight clients keep asking heavy questions until ten probes have been sent while at least one heavy
    question was in flight, so the overlap does not depend on how fast this machine answers them."""
    settings = Settings(db=market_db, export_dir=tmp_path / "exports")
    heavy_statuses: list[int] = []
    in_flight = [0]
    lock = threading.Lock()
    enough = threading.Event()
    with uvicorn_serving(create_app(settings, schedule=False)) as base:

        def ask_heavy() -> None:
            with httpx.Client(base_url=base, timeout=120, verify=tls.client_context()) as client:
                while not enough.is_set():
                    with lock:
                        in_flight[0] += 1
                    try:
                        status = client.get(HEAVY).status_code
                    finally:
                        with lock:
                            in_flight[0] -= 1
                    heavy_statuses.append(status)

        clients = [threading.Thread(target=ask_heavy) for _ in range(8)]
        for thread in clients:
            thread.start()
        during: list[float] = []  # seconds to answer, for probes sent while a heavy question ran
        give_up = time.monotonic() + 90
        try:
            with httpx.Client(base_url=base, timeout=60, verify=tls.client_context()) as prober:
                while len(during) < 10 and time.monotonic() < give_up:
                    with lock:
                        overlapping = in_flight[0] > 0
                    sent = time.monotonic()
                    assert prober.get("/healthz").status_code == 200
                    if overlapping:
                        during.append(time.monotonic() - sent)
                    time.sleep(0.05)
        finally:
            enough.set()
            for thread in clients:
                thread.join(timeout=150)
    assert not any(thread.is_alive() for thread in clients), "a heavy question never got an answer"
    assert len(heavy_statuses) >= 8 and set(heavy_statuses) <= {200, 503} and 200 in heavy_statuses
    assert len(during) >= 10, f"only {len(during)} probes answered while the heavy questions ran"
    assert max(during) < 2.0, f"/healthz took {max(during):.2f} s while heavy questions ran"


def test_over_budget_is_a_503_with_retry_after(offline_store: PriceStore) -> None:
    settings = offline_store.settings.model_copy(update={"api_budget_s": 1e-6})
    with TestClient(create_app(settings, store=offline_store, schedule=False)) as client:
        for url in ("/offers/history?since=2020-01-01", "/export?date=2020-01-01", "/digest?date=2020-01-01"):
            response = client.get(url)
            assert response.status_code == 503, (url, response.text)
            assert int(response.headers["retry-after"]) >= 1
            body = response.json()
            assert body["status"] == 503 and body["error"] == "over_budget"
            assert "GPUPRICE_API_BUDGET_S" in body["message"]


def test_the_budget_interrupts_a_running_query(market_db: Path) -> None:
    """A query still running when the budget is spent is stopped by DuckDB's interrupt, not awaited."""
    store = PriceStore(Settings(db=market_db), read_only=True)
    budget = Budget(0.3)

    def endless() -> object:
        cursor = budget.cursor(store)
        return cursor.execute("SELECT count(*) FROM range(1000000000000) a").fetchall()

    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        budget.run(endless)
    store.close()
    assert time.monotonic() - started < 10


def test_too_broad_history_is_a_422_saying_how_to_narrow(offline_store: PriceStore) -> None:
    settings = offline_store.settings.model_copy(update={"api_max_points": 3})
    with TestClient(create_app(settings, store=offline_store, schedule=False)) as client:
        response = client.get("/offers/history?since=2020-01-01")
        assert_422_naming(response, "limit", "too broad")
        message = response.json()["message"]
        assert "GPUPRICE_API_MAX_POINTS" in message and "since/until" in message
        assert client.get("/offers/history?since=2020-01-01&limit=1&provider=lambda").status_code in (200, 422)


def test_the_answer_cache_is_bounded_in_bytes(offline_store: PriceStore) -> None:
    """Row "4,000 distinct large /cheapest answers": RSS grew 195 → 861 MB, the cache counted entries.
    Now it counts bytes (GPUPRICE_ANSWER_CACHE_MB), oldest answers first out."""
    settings = offline_store.settings.model_copy(update={"answer_cache_mb": 2})
    every_option = "/cheapest?mem=1&limit=150&include_stale=true&hours="  # about 200 KB per answer
    with TestClient(create_app(settings, store=offline_store, schedule=False)) as client:
        state = client.app.state.gpuprice
        answered = 0
        for hours in range(1, 61):
            response = client.get(f"{every_option}{hours}")
            assert response.status_code == 200
            answered += len(response.content)
            assert 0 < state.cached_bytes() <= 2 * 2**20
        assert answered > 4 * 2 * 2**20  # far more was answered than may be kept
        assert client.get(f"{every_option}60").headers["x-gpuprice-cache"] == "hit"  # the newest stay
        assert client.get(f"{every_option}1").headers["x-gpuprice-cache"] == "computed"  # the oldest went


# ----- every bad input is a 4xx JSON ------------------------------------------------------------------
@pytest.fixture
def client(offline_store: PriceStore) -> Iterator[TestClient]:
    with TestClient(create_app(offline_store.settings, store=offline_store, schedule=False)) as test_client:
        yield test_client


OUT_OF_RANGE = [
    ("/digest?date=9999-12-31", "date"),
    ("/digest?date=0001-01-01", "date"),
    ("/offers/history?until=9999-12-31", "until"),
    ("/offers/history?since=0001-01-01T00:00:00%2B14:00", "since"),
    ("/offers?date=0001-01-01", "date"),
    ("/export?date=9999-12-31", "date"),
    ("/export/gpuhunt/lambda.csv?date=9999-12-31", "date"),
]


@pytest.mark.parametrize(("url", "parameter"), OUT_OF_RANGE)
def test_out_of_range_dates_are_a_422_naming_the_parameter(client: TestClient, url: str, parameter: str) -> None:
    """Row "/digest?date=9999-12-31 …": HTTP 500 text/plain (OverflowError)."""
    assert_422_naming(client.get(url), parameter, "out of range")


@pytest.mark.parametrize(
    "argv",
    [
        ["digest", "--date", "9999-12-31"],
        ["digest", "--date", "0001-01-01", "--json"],
        ["history", "--until", "9999-12-31"],
        ["offers", "--date", "0001-01-01"],
        ["export", "--date", "9999-12-31"],
    ],
)
def test_cli_out_of_range_dates_print_one_line(argv: list[str], tmp_path: Path, capsys) -> None:
    assert cli_main([*argv, "--db", str(tmp_path / "none.duckdb")]) == 2
    captured = capsys.readouterr()
    message = " ".join(captured.err.split())  # one message (the terminal may wrap it)
    assert message.startswith("error: ") and message.count("error:") == 1 and "out of range" in message, message
    assert "Traceback" not in captured.err + captured.out


def _get_urls(client: TestClient) -> list[str]:
    """Every GET route: the documented ones (path parameters filled in) and the pages around them."""
    examples = {"{cloud}": "aws", "{provider}": "lambda"}
    urls = ["/", "/docs", "/docs/assets/swagger-ui.css", "/openapi.json"]
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        assert "get" in operations
        for placeholder, value in examples.items():
            path = path.replace(placeholder, value)
        urls.append(path)
    return urls


def test_head_works_wherever_get_does(client: TestClient) -> None:
    """Row "HEAD /cheapest": 405. Now every GET route answers HEAD: same status and headers, no body."""
    urls = [*_get_urls(client), "/cheapest?mem=60GB", "/export?format=parquet", "/offers?date=2020-01-01"]
    assert {"/cheapest", "/offers/history", "/healthz", "/export/gpuhunt/lambda.csv"} <= set(urls)
    for url in urls:
        got = client.get(url)
        head = client.head(url)
        assert head.status_code == got.status_code, url
        assert head.content == b"", url
        assert head.headers["content-type"] == got.headers["content-type"], url
        assert head.headers.get("content-encoding") == got.headers.get("content-encoding"), url
        if "x-gpuprice-cache" not in got.headers and "x-gpuprice-cache" not in head.headers:
            # the body's length as sent: compressed where the answer is (a big /offers/history, as httpx asks zstd)
            assert head.headers["content-length"] == str(got.num_bytes_downloaded), url


def asgi_get(client: TestClient, path: str, query: str) -> tuple[int, bytes]:
    """GET straight into the app (as a server would hand it over), for requests longer than HTTP
    client libraries agree to build."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": query.encode(),
        "headers": [(b"host", b"testserver")], "server": ("testserver", 80), "client": ("127.0.0.1", 50000),
    }  # fmt: skip
    client.portal.call(client.app, scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


BIG = "x" * 100_000


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/cheapest", f"mem=60&provider={BIG}"),
        ("/cheapest", f"mem={BIG}"),
        ("/offers", f"region={BIG}"),
        ("/offers/history", f"since={BIG}"),
        ("/cheapest", f"mem=60&{BIG}=1"),
        (f"/export/gpuhunt/{BIG}.csv", ""),
        (f"/{BIG}", ""),
    ],
)
def test_a_100kb_parameter_gets_a_small_answer(client: TestClient, path: str, query: str) -> None:
    """Row "a 100 KB parameter": the 422 body repeated it three times (300 KB)."""
    status, body = asgi_get(client, path, query)
    assert status in (404, 422)
    assert len(body) < 2_000, len(body)
    answer = json.loads(body)
    assert answer["errors"] and answer["message"]
    assert "more characters" in body.decode()  # an excerpt, saying how much was left out


def test_provider_names_are_case_insensitive_everywhere(client: TestClient, tmp_path: Path, capsys) -> None:
    """Row "gpuprice collect AWS": refused (names were case-sensitive there only)."""
    lower = client.get("/offers?provider=aws,azure&include_stale=true").json()
    mixed = client.get("/offers?provider=AWS,Azure&include_stale=true").json()
    assert mixed == lower and mixed["count"] > 0
    gpuhunt = client.get("/export/gpuhunt/LambdaLabs.csv?include_stale=true")
    assert gpuhunt.status_code == 200
    assert gpuhunt.content == client.get("/export/gpuhunt/lambdalabs.csv?include_stale=true").content
    assert 'filename="lambdalabs.csv"' in gpuhunt.headers["content-disposition"]
    skypilot = client.get("/export/skypilot/AWS/vms.csv?include_stale=true")
    assert skypilot.status_code == 200
    assert skypilot.content == client.get("/export/skypilot/aws/vms.csv?include_stale=true").content
    refused = client.get("/export/skypilot/GCP/vms.csv")
    assert refused.status_code == 404 and "no SkyPilot catalog for gcp" in refused.json()["message"]
    db = tmp_path / "collect.duckdb"
    assert cli_main(["collect", "AWS", "--offline", "--json", "--db", str(db)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert {run["provider"] for run in runs} >= {"aws"} and all(run["status"] == "ok" for run in runs)


# ----- /docs works offline ----------------------------------------------------------------------------
class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.links += [value for name, value in attrs if name in ("src", "href") and value]


def test_docs_work_offline(client: TestClient) -> None:
    """Row "/docs without internet": blank, Swagger UI's scripts loaded from a CDN."""
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    parser = _Links()
    parser.feed(page.text)
    assert len(parser.links) >= 3  # stylesheet, icon, script
    for link in parser.links:
        assert not urlsplit(link).netloc and link.startswith("/"), f"{link} is not served by gpuprice"
        asset = client.get(link)
        assert asset.status_code == 200 and len(asset.content) > 0, link
    assert "//cdn" not in page.text and "https://" not in page.text
    assert client.get("/docs/assets/swagger-ui-bundle.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/openapi.json").json()["openapi"].startswith("3.")
    assert client.get("/docs/assets/index.html").status_code == 404
    assert client.get("/redoc").status_code == 404


def test_a_heavy_answer_out_of_the_databases_memory_is_a_503_naming_it() -> None:
    """DuckDB refusing a query for its memory bound (GPUPRICE_DB_MEMORY_MB) is the answer's 503 saying
    so, not an exception out of the app (the connection was reset)."""

    class SmallDatabase:
        def cursor(self) -> duckdb.DuckDBPyConnection:
            con = duckdb.connect()
            con.execute("SET memory_limit = '8MB'")
            return con

    budget = Budget(60)
    with pytest.raises(BudgetExceeded, match="GPUPRICE_DB_MEMORY_MB") as raised:
        budget.run(
            lambda: budget.cursor(SmallDatabase()).execute("SELECT list(i) FROM range(20000000) t(i)").fetchall()
        )
    assert "Out of Memory" in raised.value.message and raised.value.retry_after_s == 60
