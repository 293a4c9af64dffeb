"""Azure collector, fetching: the NextPageLink walk, base-URL rewriting of first and next-page
URLs, retries, API errors and pagination loops (respx), and the offline replay of the whole walk
(ReplayTransport, and a local replay server on 127.0.0.1). Nothing here reaches the network."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import respx

from collectors.azure import AzureCollector
from collectors.azure.query import MAX_PAGES, first_page_url, odata_filter, walk
from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport, serve_replay
from tests.collectors.azure.test_parse import EXPECTED
from tests.conftest import FIXTURES, fixture_bytes
from tests.helpers import Sleeps

PAGES = tuple(f"retail_prices_page{n}.json" for n in (1, 2, 3, 4))
URLS = [route["url"] for route in json.loads((FIXTURES / "azure" / "replay.json").read_text())["routes"]]
HOST, PATH = "prices.azure.com", "/api/retail/prices"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def page(n: int) -> dict:
    return json.loads(fixture_bytes("azure", PAGES[n - 1]))


def query(request: httpx.Request) -> dict[str, str]:
    return dict(parse_qsl(request.url.query.decode()))


def pages_by_skip(request: httpx.Request) -> httpx.Response:
    """Answer like the API: the page that `$skip` asks for."""
    skip = query(request).get("$skip", "0")
    number = int(skip) // 100 + 1
    return httpx.Response(
        200, content=fixture_bytes("azure", PAGES[number - 1]), headers={"content-type": "application/json"}
    )


async def run_fetch(settings, sleep=None):
    collector = AzureCollector(settings)
    async with make_client(settings) as client:
        kwargs = {"sleep": sleep} if sleep else {}
        http = Http(client, "azure", settings, **kwargs)
        fetched = await collector.fetch(http, collector.scope("all"))
    return collector, fetched


async def test_walk_follows_next_page_links_to_the_end(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=pages_by_skip)
        collector, fetched = await run_fetch(settings)
    assert route.call_count == 4
    sent = [query(call.request) for call in route.calls]
    assert [q.get("$skip") for q in sent] == [None, "100", "200", "300"]
    assert all(q["$filter"] == odata_filter() for q in sent)
    assert [raw.url for raw in fetched.responses] == URLS  # as the provider knows them, `:443` included
    assert [raw.label for raw in fetched.responses] == [f"all-regions page {n}" for n in (1, 2, 3, 4)]
    assert fetched.notes == []
    assert len(collector.parse(fetched)) == len(EXPECTED)


async def test_base_url_override_applies_to_the_first_url_and_every_next_page_link(settings) -> None:
    settings = settings.model_copy(update={"base_urls": {"azure": "http://mirror.test:8080"}})
    with respx.mock(assert_all_mocked=True) as mock:  # any request to prices.azure.com would fail
        route = mock.get(host="mirror.test", port=8080, path=PATH).mock(side_effect=pages_by_skip)
        collector, fetched = await run_fetch(settings)
    assert route.call_count == 4
    assert {(c.request.url.scheme, c.request.url.host, c.request.url.port) for c in route.calls} == {
        ("http", "mirror.test", 8080)
    }
    assert [raw.url for raw in fetched.responses] == URLS
    assert {q.source_url for q in collector.parse(fetched)} <= set(URLS)


async def test_429_with_retry_after_is_retried_after_the_hinted_delay(settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 60.0})
    answers = iter([httpx.Response(429, headers={"Retry-After": "7"}, json={"Error": {"Message": "Too many"}})])

    def first_throttled(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or pages_by_skip(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=first_throttled)
        _, fetched = await run_fetch(settings, sleep=sleeps)
    assert sleeps.delays == [7.0]
    assert route.call_count == 5
    assert len(fetched.responses) == 4


async def test_5xx_is_retried_then_the_walk_completes(settings) -> None:
    answers = iter([httpx.Response(503, text="Service Unavailable"), httpx.Response(502, text="Bad Gateway")])

    def flaky_second_page(request: httpx.Request) -> httpx.Response:
        if query(request).get("$skip") == "100":
            answer = next(answers, None)
            if answer is not None:
                return answer
        return pages_by_skip(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=flaky_second_page)
        _, fetched = await run_fetch(settings, sleep=sleeps)
    assert route.call_count == 6
    assert len(sleeps.delays) == 2
    assert len(fetched.responses) == 4


async def test_timeouts_end_in_a_fetch_error(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=httpx.ReadTimeout("read timed out"))
        with pytest.raises(FetchError, match=r"timed out .*gave up after 4 attempts"):
            await run_fetch(settings, sleep=Sleeps())
    assert route.call_count == settings.retry_attempts


async def test_400_error_body_becomes_a_fetch_error_with_the_api_message(settings) -> None:
    body = fixture_bytes("azure", "error_bad_filter.json")
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(400, content=body))
        with pytest.raises(FetchError, match=r"refused all-regions page 1 \(BadRequest: Invalid OData parameters"):
            await run_fetch(settings)
    assert route.call_count == 1  # a 400 is not retried


async def test_error_envelope_in_a_200_answer_is_a_fetch_error(settings) -> None:
    body = fixture_bytes("azure", "error_bad_filter.json")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(200, content=body))
        with pytest.raises(FetchError, match="Invalid OData parameters supplied"):
            await run_fetch(settings)


async def test_next_page_link_to_itself_is_a_pagination_loop(settings) -> None:
    looping = page(1)
    looping["NextPageLink"] = URLS[0].replace("prices.azure.com/", "prices.azure.com:443/")
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(200, json=looping))
        with pytest.raises(FetchError, match="pagination loop in the all-regions walk: page 1 links back"):
            await run_fetch(settings)
    assert route.call_count == 1


async def test_next_page_link_back_to_an_earlier_page_is_a_pagination_loop(settings) -> None:
    back = page(2)
    back["NextPageLink"] = URLS[1]  # page 2 claims page 2 comes next: the same link twice

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=back) if query(request).get("$skip") == "100" else pages_by_skip(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(side_effect=answer)
        with pytest.raises(FetchError, match="pagination loop"):
            await run_fetch(settings)
    assert route.call_count == 2


async def test_page_cap_stops_an_endless_walk(settings) -> None:
    notes: list[str] = []
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(side_effect=pages_by_skip)
        async with make_client(settings) as client:
            http = Http(client, "azure", settings)
            with pytest.raises(FetchError, match="passed 2 pages without an end"):
                await walk(http, first_page_url(odata_filter()), "capped", notes, max_pages=2)
    assert MAX_PAGES >= 300  # the N-series over every region is about 150 pages


async def test_a_full_last_page_without_a_link_is_noted_as_possibly_truncated(settings) -> None:
    full = page(4)
    full["Items"] = (full["Items"] * 10)[:100]
    full["Count"] = 100
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(200, json=full))
        _, fetched = await run_fetch(settings)
    assert len(fetched.responses) == 1
    assert fetched.notes and "may be truncated" in fetched.notes[0]


async def test_configured_regions_are_walked_one_by_one(settings) -> None:
    settings = settings.model_copy(update={"regions": {"azure": ["eastus", "westus3"]}})
    last = page(4)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST, path=PATH).mock(return_value=httpx.Response(200, json=last))
        _, fetched = await run_fetch(settings)
    filters = [query(call.request)["$filter"] for call in route.calls]
    assert filters == [odata_filter("eastus"), odata_filter("westus3")]
    assert [raw.label for raw in fetched.responses] == ["eastus page 1", "westus3 page 1"]


async def test_offline_replay_serves_the_whole_walk(settings) -> None:
    settings = settings.model_copy(update={"offline": True, "base_urls": {"azure": "http://ignored.test"}})
    collector = AzureCollector(settings)
    transport = ReplayTransport(Replay.load(FIXTURES, "azure"))
    async with make_client(settings, transport) as client:
        fetched = await collector.fetch(Http(client, "azure", settings), collector.scope("all"))
    assert [raw.url for raw in fetched.responses] == URLS
    quotes = collector.parse(fetched)
    assert len(quotes) == len(EXPECTED)
    assert {q.pricing.value for q in quotes} == {"on_demand", "spot", "reserved_1y", "reserved_3y"}


async def test_local_replay_server_stands_in_through_the_base_url(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "azure")]) as server:
        local = settings.model_copy(update={"base_urls": {"azure": server.url}})
        collector, fetched = await run_fetch(local)
    assert [urlsplit(path).path for _, path, _, _ in server.requests] == [PATH] * 4
    skips = [dict(parse_qsl(urlsplit(path).query)).get("$skip") for _, path, _, _ in server.requests]
    assert skips == [None, "100", "200", "300"]
    assert len(collector.parse(fetched)) == len(EXPECTED)
