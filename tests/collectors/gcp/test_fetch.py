"""GCP collector, fetching: the nextPageToken walk with the API key, base-URL rewriting of every
page, retries, Google error bodies, pagination loops, the missing-key skip, and the key kept out
of everything stored, logged or raised (respx; the replay transport and a local replay server)."""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.errors import FetchError, MissingCredentials
from collectors.gcp import GcpCollector
from collectors.gcp.catalog import PAGE_SIZE, walk
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.runner import run_provider
from pricedb.models import RunStatus
from pricedb.redact import redact
from pricedb.store import PriceStore
from tests.collectors.gcp.test_parse import EXPECTED as GCP_OFFERS
from tests.conftest import FIXTURES, fixture_bytes
from tests.helpers import Sleeps

PAGES = ("skus_page1.json", "skus_page2.json", "skus_page3.json")
URLS = [route["url"] for route in json.loads((FIXTURES / "gcp" / "replay.json").read_text())["routes"]]
HOST, PATH = "cloudbilling.googleapis.com", "/v1/services/6F81-5844-456A/skus"
KEY = "AIzaSyTEST-not-a-real-key-0123456789ab"
TOKENS = [None, *(json.loads(fixture_bytes("gcp", name))["nextPageToken"] for name in PAGES[:2])]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def keyed(settings):
    return settings.model_copy(update={"gcp_api_key": SecretStr(KEY)})


def query(request: httpx.Request) -> dict[str, str]:
    return dict(parse_qsl(request.url.query.decode()))


def pages_by_token(request: httpx.Request) -> httpx.Response:
    """Answer like the API: the page that `pageToken` asks for."""
    number = TOKENS.index(query(request).get("pageToken"))
    return httpx.Response(
        200, content=fixture_bytes("gcp", PAGES[number]), headers={"content-type": "application/json"}
    )


async def run_fetch(settings, sleep=None):
    collector = GcpCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "gcp", settings, **({"sleep": sleep} if sleep else {}))
        fetched = await collector.fetch(http, collector.scope("all"))
    return collector, fetched


async def test_walk_follows_next_page_tokens_sending_the_key(keyed) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=pages_by_token)
        collector, fetched = await run_fetch(keyed)
    sent = [query(call.request) for call in route.calls]
    assert [q.get("pageToken") for q in sent] == TOKENS
    assert all(q["key"] == KEY and q["pageSize"] == str(PAGE_SIZE) for q in sent)
    assert [raw.url for raw in fetched.responses] == URLS  # recorded without the key
    assert [raw.label for raw in fetched.responses] == ["page 1", "page 2", "page 3"]
    quotes = collector.parse(fetched)
    assert len(quotes) == len(GCP_OFFERS)
    assert not any(KEY in (q.source_url + (q.notes or "")) for q in quotes)


async def test_base_url_override_applies_to_every_page(keyed) -> None:
    keyed = keyed.model_copy(update={"base_urls": {"gcp": "http://mirror.test:8080"}})
    with respx.mock(assert_all_mocked=True) as mock:  # any request to googleapis.com would fail
        route = mock.get(host="mirror.test", port=8080, path=PATH).mock(side_effect=pages_by_token)
        _, fetched = await run_fetch(keyed)
    assert route.call_count == 3
    assert {(c.request.url.scheme, c.request.url.host) for c in route.calls} == {("http", "mirror.test")}
    assert [query(c.request).get("pageToken") for c in route.calls] == TOKENS
    assert [raw.url for raw in fetched.responses] == URLS


async def test_429_with_retry_after_is_retried_after_the_hinted_delay(keyed) -> None:
    keyed = keyed.model_copy(update={"retry_max_delay_s": 60.0})
    answers = iter([httpx.Response(429, headers={"Retry-After": "5"}, json={"error": {"code": 429}})])

    def throttled_once(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or pages_by_token(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=throttled_once)
        _, fetched = await run_fetch(keyed, sleep=sleeps)
    assert sleeps.delays == [5.0] and route.call_count == 4 and len(fetched.responses) == 3


async def test_5xx_on_a_later_page_is_retried_then_the_walk_completes(keyed) -> None:
    answers = iter([httpx.Response(503, text="Service Unavailable"), httpx.Response(500, text="Internal")])

    def flaky_third_page(request: httpx.Request) -> httpx.Response:
        if query(request).get("pageToken") == TOKENS[2]:
            answer = next(answers, None)
            if answer is not None:
                return answer
        return pages_by_token(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=flaky_third_page)
        _, fetched = await run_fetch(keyed, sleep=sleeps)
    assert route.call_count == 5 and len(sleeps.delays) == 2 and len(fetched.responses) == 3


async def test_persistent_5xx_fails_without_showing_the_key(keyed) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(503, text="unavailable"))
        with pytest.raises(FetchError, match=r"HTTP 503 .*gave up after 4 attempts") as caught:
            await run_fetch(keyed, sleep=Sleeps())
    assert KEY not in str(caught.value) and f"{HOST}{PATH} (gave up" in str(caught.value)  # no query
    # the original (its message has the key in the URL) is neither chained nor printed with a traceback
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert KEY not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize(
    ("file", "status", "said"),
    [
        ("error_api_key_invalid.json", 400, "400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key."),
        # read from the whole (redacted) error body: the status after the long message is there too
        ("error_api_disabled.json", 403, "403 PERMISSION_DENIED: Cloud Billing API has not been used in project 1234"),
    ],
)
async def test_google_error_bodies_become_fetch_errors_with_google_words(keyed, file, status, said) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(
            return_value=httpx.Response(status, content=fixture_bytes("gcp", file))
        )
        with pytest.raises(FetchError) as caught:
            await run_fetch(keyed)
    assert route.call_count == 1  # 4xx is not retried
    message = str(caught.value)
    assert f"Cloud Billing Catalog API refused page 1 ({said}" in message
    assert "check GPUPRICE_GCP_API_KEY" in message and KEY not in message


async def test_an_error_envelope_in_a_200_answer_is_a_fetch_error(keyed) -> None:
    body = fixture_bytes("gcp", "error_api_key_invalid.json")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(200, content=body))
        with pytest.raises(FetchError, match="API key not valid"):
            await run_fetch(keyed)


async def test_a_token_seen_before_is_a_pagination_loop(keyed) -> None:
    looping = json.loads(fixture_bytes("gcp", PAGES[1]))
    looping["nextPageToken"] = TOKENS[1]  # page 2 says page 2 comes next

    def answer(request: httpx.Request) -> httpx.Response:
        if query(request).get("pageToken") == TOKENS[1]:
            return httpx.Response(200, json=looping)
        return pages_by_token(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=answer)
        with pytest.raises(FetchError, match="pagination loop: page 2 gives pageToken"):
            await run_fetch(keyed)
    assert route.call_count == 2


async def test_page_cap_stops_an_endless_walk(keyed) -> None:
    endless = iter(range(10_000))

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"skus": [], "nextPageToken": f"t{next(endless)}"})

    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(side_effect=answer)
        async with make_client(keyed) as client:
            with pytest.raises(FetchError, match="passed 3 pages without an end"):
                await walk(Http(client, "gcp", keyed), keyed.gcp_api_key, max_pages=3)


async def test_missing_key_is_a_skip_naming_the_setting(settings) -> None:
    with pytest.raises(MissingCredentials, match="set GPUPRICE_GCP_API_KEY"):
        await run_fetch(settings)
    blank = settings.model_copy(update={"gcp_api_key": SecretStr("")})
    with pytest.raises(MissingCredentials):
        await run_fetch(blank)


def test_missing_key_makes_a_skipped_run(settings) -> None:
    store = PriceStore(settings)
    collector = GcpCollector(settings)
    summary = asyncio.run(run_provider(collector, collector.scope("all"), store, settings))
    store.close()
    assert summary.status is RunStatus.SKIPPED
    assert "GPUPRICE_GCP_API_KEY" in (summary.error or "")


def test_the_key_is_read_from_the_environment(monkeypatch, settings) -> None:
    monkeypatch.setenv("GPUPRICE_GCP_API_KEY", KEY)
    from pricedb.settings import Settings

    loaded = Settings(db=settings.db)
    assert loaded.gcp_api_key is not None and loaded.gcp_api_key.get_secret_value() == KEY
    assert KEY not in repr(loaded) and KEY not in loaded.model_dump_json()


async def test_the_key_never_reaches_the_httpx_log(keyed, caplog) -> None:
    caplog.set_level(logging.INFO, logger="httpx")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(side_effect=pages_by_token)
        await run_fetch(keyed)
    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert lines and all(KEY not in line for line in lines)
    assert any("key=***" in line for line in lines)


def test_the_one_redaction_point_masks_the_key_and_any_key_parameter(keyed) -> None:
    """The key is a setting, so pricedb.redact knows it; any `key=` value is masked by its name."""
    line = f"GET https://x/skus?key={KEY}&pageSize=5000 failed, key {KEY}"
    assert redact(line, keep_query=True) == "GET https://x/skus?key=***&pageSize=5000 failed, key ***"
    assert redact(line) == "GET https://x/skus failed, key ***"
    assert redact("https://x/skus?pageSize=1&key=other", keep_query=True) == "https://x/skus?pageSize=1&key=***"


async def test_offline_replay_serves_the_whole_walk_without_a_key(settings) -> None:
    offline = settings.model_copy(update={"offline": True, "gcp_api_key": SecretStr(KEY)})
    seen: list[httpx.Request] = []

    class Recording(ReplayTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return await super().handle_async_request(request)

    collector = GcpCollector(offline)
    async with make_client(offline, Recording(Replay.load(FIXTURES, "gcp"))) as client:
        fetched = await collector.fetch(Http(client, "gcp", offline), collector.scope("all"))
    assert [raw.url for raw in fetched.responses] == URLS
    assert all("key" not in query(request) for request in seen)  # recorded answers get no key
    assert len(collector.parse(fetched)) == len(GCP_OFFERS)


async def test_local_replay_server_stands_in_through_the_base_url(keyed) -> None:
    with serve_replay([Replay.load(FIXTURES, "gcp")]) as server:
        local = keyed.model_copy(update={"base_urls": {"gcp": server.url}})
        collector, fetched = await run_fetch(local)
    paths = [urlsplit(path) for _, path, _, _ in server.requests]
    assert [p.path for p in paths] == [PATH] * 3
    assert [dict(parse_qsl(p.query)).get("key") for p in paths] == [KEY] * 3
    assert len(collector.parse(fetched)) == len(GCP_OFFERS)
