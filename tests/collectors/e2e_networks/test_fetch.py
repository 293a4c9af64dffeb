"""E2E Networks, fetching the public page (no plan-API credentials set): the page URL and its
`GPUPRICE_E2E_BASE_URL` rewrite, retries on 5xx and 429 (with Retry-After), timeouts and an error page
ending in a FetchError (respx), and the offline replay through the manifest. Nothing here reaches the
network."""

from __future__ import annotations

import httpx
import pytest
import respx

from collectors.e2e import E2eCollector
from collectors.e2e.collector import PRICING_URL
from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport, serve_replay
from tests.conftest import FIXTURES, fixture_bytes

pytestmark = pytest.mark.anyio
HTML = {"content-type": "text/html; charset=utf-8"}
PAGE_OFFERS = 44  # the recorded page's priced GPU plans and terms (test_parse checks each one)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def page() -> httpx.Response:
    return httpx.Response(200, content=fixture_bytes("e2e", "pricing.html"), headers=HTML)


async def run_fetch(settings, sleep=None, transport=None):
    collector = E2eCollector(settings)
    async with make_client(settings, transport) as client:
        http = Http(client, "e2e", settings, **({"sleep": sleep} if sleep else {}))
        fetched = await collector.fetch(http, collector.scope())
    return collector, fetched


async def test_fetch_reads_the_public_pricing_page(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(PRICING_URL).mock(return_value=page())
        collector, fetched = await run_fetch(settings)
    assert route.call_count == 1
    assert route.calls[0].request.headers["User-Agent"].startswith("gpuprice/")
    assert [(raw.url, raw.label, raw.status) for raw in fetched.responses] == [(PRICING_URL, "pricing page", 200)]
    assert fetched.notes[0] == (
        "source: E2E's public pricing page (GPUPRICE_E2E_API_KEY, GPUPRICE_E2E_AUTH_TOKEN, "
        "GPUPRICE_E2E_PROJECT_ID not set for the plan API)"
    )
    assert fetched.notes[1].startswith("unknown GPU, not collected: plan GDC.RTX3080-8.30GB")
    assert len(collector.parse(fetched)) == PAGE_OFFERS


async def test_base_url_setting_sends_the_request_to_the_mirror(settings) -> None:
    settings = settings.model_copy(update={"base_urls": {"e2e": "http://mirror.test:8080/e2e"}})
    with respx.mock(assert_all_mocked=True) as mock:  # any request to www.e2enetworks.com would fail
        route = mock.get("http://mirror.test:8080/e2e/pricing").mock(return_value=page())
        collector, fetched = await run_fetch(settings)
    assert route.call_count == 1
    assert fetched.responses[0].url == PRICING_URL  # quotes still name the real page
    assert {q.source_url for q in collector.parse(fetched)} == {PRICING_URL}


async def test_base_url_comes_from_the_environment(settings, monkeypatch) -> None:
    monkeypatch.setenv("GPUPRICE_E2E_BASE_URL", "http://127.0.0.1:9/")
    from pricedb.settings import Settings

    assert Settings().base_url_for("e2e") == "http://127.0.0.1:9/"


async def test_5xx_is_retried_then_the_page_is_read(settings) -> None:
    error_page = httpx.Response(503, content=fixture_bytes("e2e", "error_503.html"), headers=HTML)
    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(PRICING_URL).mock(side_effect=[error_page, httpx.Response(502), page()])
        _, fetched = await run_fetch(settings, sleep=sleeps)
    assert route.call_count == 3 and len(sleeps.delays) == 2
    assert len(fetched.responses) == 1


async def test_429_waits_as_long_as_retry_after_says(settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 60.0})
    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(PRICING_URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": "11"}), page()])
        await run_fetch(settings, sleep=sleeps)
    assert sleeps.delays == [11.0]


async def test_a_persistent_error_page_is_a_fetch_error_naming_status_and_url(settings) -> None:
    error_page = httpx.Response(503, content=fixture_bytes("e2e", "error_503.html"), headers=HTML)
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(PRICING_URL).mock(return_value=error_page)
        with pytest.raises(FetchError, match=r"HTTP 503 from https://www.e2enetworks.com/pricing \(gave up after 4"):
            await run_fetch(settings, sleep=Sleeps())
    assert route.call_count == settings.retry_attempts


async def test_timeouts_end_in_a_fetch_error(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(PRICING_URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
        with pytest.raises(FetchError, match=r"timed out .*gave up after 4 attempts"):
            await run_fetch(settings, sleep=Sleeps())
    assert route.call_count == settings.retry_attempts


async def test_404_is_not_retried(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(PRICING_URL).mock(return_value=httpx.Response(404, text="Not Found"))
        with pytest.raises(FetchError, match="HTTP 404"):
            await run_fetch(settings)
    assert route.call_count == 1


async def test_offline_replay_serves_the_recorded_page(settings) -> None:
    settings = settings.model_copy(update={"offline": True, "base_urls": {"e2e": "http://ignored.test"}})
    collector, fetched = await run_fetch(settings, transport=ReplayTransport(Replay.load(FIXTURES, "e2e")))
    assert fetched.responses[0].body == fixture_bytes("e2e", "pricing.html")
    assert len(collector.parse(fetched)) == PAGE_OFFERS


async def test_local_replay_server_stands_in_through_the_base_url(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "e2e")]) as server:
        local = settings.model_copy(update={"base_urls": {"e2e": server.url}})
        collector, fetched = await run_fetch(local)
    assert [(method, path) for method, path, _, _ in server.requests] == [("GET", "/pricing")]
    assert len(collector.parse(fetched)) == PAGE_OFFERS
