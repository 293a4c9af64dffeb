"""Vast.ai collector, fetching: the two searches' JSON bodies and headers, the optional key, the
regions setting, retries on 429/5xx, the API's error bodies, the base-URL override, and the
offline replay and local replay server. Nothing here reaches the network."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.vast import VastCollector
from collectors.vast.query import BUNDLES_URL, LIMIT, search_body
from pricedb.models import Pricing
from tests.conftest import FIXTURES, fixture_bytes
from tests.helpers import Sleeps

HOST, PATH = "console.vast.ai", "/api/v0/bundles/"
FILES = {"on-demand": "bundles_on_demand.json", "bid": "bundles_bid.json"}

pytestmark = pytest.mark.anyio

OFFERS = 27  # the stored offers of the recorded answers (tests/collectors/vast/test_parse.py checks each)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def by_type(request: httpx.Request) -> httpx.Response:
    """Answer like the service: the recorded answer of the search `type` asked for."""
    kind = json.loads(request.content)["type"]
    return httpx.Response(200, content=fixture_bytes("vast", FILES[kind]), headers={"content-type": "application/json"})


async def run_fetch(settings, sleep=None):
    collector = VastCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "vast", settings, **({"sleep": sleep} if sleep else {}))
        fetched = await collector.fetch(http, collector.scope("all"))
    return collector, fetched


async def test_one_search_per_pricing_with_the_documented_filter(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(side_effect=by_type)
        collector, fetched = await run_fetch(settings)
    bodies = [json.loads(call.request.content) for call in route.calls]
    assert bodies == [search_body(Pricing.ON_DEMAND), search_body(Pricing.SPOT)]
    assert bodies[0] == {
        "verified": {"eq": True},
        "external": {"eq": False},
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "disk_space": {"gte": 100},
        "order": [["score", "desc"]],
        "type": "on-demand",
        "limit": LIMIT,
        "allocated_storage": 100,
    }
    assert bodies[1]["type"] == "bid"
    for call in route.calls:
        assert call.request.headers["content-type"] == "application/json"
        assert "authorization" not in call.request.headers  # the public search needs no key
    assert [raw.label for raw in fetched.responses] == ["on-demand", "bid"]
    assert [raw.url for raw in fetched.responses] == [BUNDLES_URL, BUNDLES_URL]
    assert "gpu_name" not in bodies[0]  # every card the marketplace lists
    assert fetched.notes == ["unknown GPU, not collected: RTX 3060 (1 item)"]  # counted once, in both answers
    assert len(collector.parse(fetched)) == OFFERS


async def test_an_api_key_when_set_is_sent_as_bearer_and_never_in_the_body(settings) -> None:
    settings = settings.model_copy(update={"vast_api_key": SecretStr("vk-secret-123")})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(side_effect=by_type)
        await run_fetch(settings)
    assert {call.request.headers["authorization"] for call in route.calls} == {"Bearer vk-secret-123"}
    assert all(b"vk-secret" not in call.request.content for call in route.calls)


async def test_the_standard_vast_api_key_variable_is_honoured(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from pricedb.settings import Settings

    monkeypatch.setenv("VAST_API_KEY", "from-the-cli-variable")
    assert Settings(db=tmp_path / "x.duckdb").vast_api_key.get_secret_value() == "from-the-cli-variable"


async def test_configured_countries_narrow_the_search(settings) -> None:
    settings = settings.model_copy(update={"regions": {"vast": ["us", "CA"]}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(side_effect=by_type)
        await run_fetch(settings)
    assert {json.dumps(json.loads(c.request.content)["geolocation"]) for c in route.calls} == {'{"in": ["US", "CA"]}'}


async def test_base_url_override_sends_every_search_to_the_mirror(settings) -> None:
    settings = settings.model_copy(update={"base_urls": {"vast": "http://mirror.test:8080/vast"}})
    with respx.mock(assert_all_mocked=True) as mock:  # a request to console.vast.ai would fail here
        route = mock.post(host="mirror.test", port=8080, path="/vast" + PATH).mock(side_effect=by_type)
        collector, fetched = await run_fetch(settings)
    assert route.call_count == 2
    assert {raw.url for raw in fetched.responses} == {BUNDLES_URL}  # as the provider knows it
    assert {q.source_url for q in collector.parse(fetched)} == {BUNDLES_URL}


async def test_429_with_retry_after_is_retried_after_the_hinted_delay(settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 60.0})
    limited = iter(
        [httpx.Response(429, headers={"Retry-After": "3"}, content=fixture_bytes("vast", "error_rate_limited.json"))]
    )

    def first_limited(request: httpx.Request) -> httpx.Response:
        return next(limited, None) or by_type(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(side_effect=first_limited)
        _, fetched = await run_fetch(settings, sleep=sleeps)
    assert sleeps.delays == [3.0] and route.call_count == 3 and len(fetched.responses) == 2


async def test_5xx_is_retried_then_a_persistent_one_fails_the_run(settings) -> None:
    flaky = iter([httpx.Response(502, text="Bad Gateway")])

    def once(request: httpx.Request) -> httpx.Response:
        return next(flaky, None) or by_type(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(side_effect=once)
        _, fetched = await run_fetch(settings, sleep=Sleeps())
    assert route.call_count == 3 and len(fetched.responses) == 2
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(return_value=httpx.Response(503, text="down"))
        with pytest.raises(FetchError, match="HTTP 503"):
            await run_fetch(settings, sleep=Sleeps())
    assert route.call_count == settings.retry_attempts


async def test_a_400_error_body_becomes_a_fetch_error_with_the_api_message(settings) -> None:
    body = fixture_bytes("vast", "error_invalid_request.json")
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(host=HOST, path=PATH).mock(return_value=httpx.Response(400, content=body))
        with pytest.raises(
            FetchError, match=r"refused the on-demand offer search \(invalid_request: Invalid json body\)"
        ):
            await run_fetch(settings)
    assert route.call_count == 1  # a 400 is not retried


@pytest.mark.parametrize(
    ("key", "hint"),
    [(None, "asked for an API key: set GPUPRICE_VAST_API_KEY"), ("stale", "check the key in GPUPRICE_VAST_API_KEY")],
)
async def test_a_refused_key_says_which_setting_to_look_at(settings, key, hint) -> None:
    settings = settings.model_copy(update={"vast_api_key": SecretStr(key) if key else None})
    body = fixture_bytes("vast", "error_invalid_key.json")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(host=HOST, path=PATH).mock(return_value=httpx.Response(404, content=body))
        with pytest.raises(FetchError, match="Invalid user key") as caught:
            await run_fetch(settings)
    assert hint in str(caught.value)
    assert "stale" not in str(caught.value)  # the key itself is never repeated


async def test_an_error_body_in_a_200_answer_is_a_fetch_error(settings) -> None:
    body = {"success": False, "error": "invalid_request", "msg": "limit must be an integer"}
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(host=HOST, path=PATH).mock(return_value=httpx.Response(200, json=body))
        with pytest.raises(FetchError, match="invalid_request: limit must be an integer"):
            await run_fetch(settings)


async def test_an_answer_as_long_as_the_limit_is_noted_as_possibly_cut(settings) -> None:
    offers = json.loads(fixture_bytes("vast", "bundles_on_demand.json"))["offers"]
    full = {"offers": (offers * (LIMIT // len(offers) + 1))[:LIMIT]}
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(host=HOST, path=PATH).mock(return_value=httpx.Response(200, json=full))
        _, fetched = await run_fetch(settings)
    assert fetched.notes == [
        *(
            f"the {kind} search returned {LIMIT} offers, its limit: the answer may be cut"
            for kind in ("on-demand", "bid")
        ),
        "unknown GPU, not collected: RTX 3060 (1 item)",
    ]


async def test_offline_replay_serves_both_searches(settings) -> None:
    settings = settings.model_copy(update={"offline": True, "base_urls": {"vast": "http://ignored.test"}})
    collector = VastCollector(settings)
    async with make_client(settings, ReplayTransport(Replay.load(FIXTURES, "vast"))) as client:
        fetched = await collector.fetch(Http(client, "vast", settings), collector.scope("all"))
    quotes = collector.parse(fetched)
    assert len(quotes) == OFFERS and {q.pricing for q in quotes} == {Pricing.ON_DEMAND, Pricing.SPOT}


async def test_local_replay_server_stands_in_through_the_base_url(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "vast")]) as server:
        local = settings.model_copy(update={"base_urls": {"vast": server.url}})
        collector, fetched = await run_fetch(local)
    assert [(method, path) for method, path, _, _ in server.requests] == [("POST", PATH)] * 2
    assert [json.loads(body)["type"] for _, _, _, body in server.requests] == ["on-demand", "bid"]
    assert len(collector.parse(fetched)) == OFFERS
