"""AutoDL collector, fetching: the token (missing → skipped; sent bare on every request, never
logged), request bodies, `page_index` paging to `max_page`, API error envelopes (expired token),
retries, the regions setting, the base-URL override for both hosts, and the offline replay and
local replay server. Nothing here reaches the network."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.autodl import AutodlCollector
from collectors.autodl.api import MAX_PAGES, PAGE_SIZE, machine_list_body
from collectors.autodl.collector import OFFLINE_TOKEN
from collectors.errors import FetchError, MissingCredentials
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport, serve_replay
from tests.conftest import FIXTURES, fixture_bytes
from tests.helpers import Sleeps

TOKEN = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.test-only.signature"
API, CONFIG = "api.autodl.com", "fe-config-backend.autodl.com"
REGION_PATH, TYPES_PATH, LIST_PATH = (
    "/api/v1/autodl/region/tag",
    "/api/v1/machine/region/gpu_type",
    "/api/v1/user/machine/list",
)
GROUPS = {"west": ["west-B", "west-C"], "beijing": ["beijing-A", "beijing-B", "beijing-D", "beijing-E"],
          "neimeng": ["neimeng-A", "neimeng-C", "neimeng-D"], "foshan": ["foshan-A"]}  # fmt: skip
GROUP_OF = {tuple(signs): name for name, signs in GROUPS.items()}

OFFERS = 61  # the stored offers of the recorded walk (tests/collectors/autodl/test_parse.py checks each)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def with_token(settings):
    return settings.model_copy(update={"autodl_token": SecretStr(TOKEN)})


def answer(name: str) -> httpx.Response:
    return httpx.Response(200, content=fixture_bytes("autodl", name), headers={"content-type": "application/json"})


def gpu_types(request: httpx.Request) -> httpx.Response:
    return answer(f"gpu_type_{GROUP_OF[tuple(json.loads(request.content)['region_sign_list'])]}.json")


def machines(request: httpx.Request) -> httpx.Response:
    sent = json.loads(request.content)
    return answer(f"machine_list_{GROUP_OF[tuple(sent['region_sign_list'])]}_page{sent['page_index']}.json")


def mock_api(mock: respx.MockRouter) -> tuple[respx.Route, respx.Route, respx.Route]:
    return (
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json")),
        mock.post(host=API, path=TYPES_PATH).mock(side_effect=gpu_types),
        mock.post(host=API, path=LIST_PATH).mock(side_effect=machines),
    )


async def run_fetch(settings, sleep=None):
    collector = AutodlCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "autodl", settings, **({"sleep": sleep} if sleep else {}))
        fetched = await collector.fetch(http, collector.scope("all"))
    return collector, fetched


async def test_without_a_token_the_run_is_skipped_with_the_setting_to_add(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock, pytest.raises(MissingCredentials, match="GPUPRICE_AUTODL_TOKEN"):
        await run_fetch(settings)
    assert not mock.calls  # nothing was asked without a token
    blank = settings.model_copy(update={"autodl_token": SecretStr("  ")})
    with pytest.raises(MissingCredentials):
        await run_fetch(blank)


async def test_the_walk_sends_the_bare_token_and_the_console_bodies(with_token) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        regions, types, listing = mock_api(mock)
        collector, fetched = await run_fetch(with_token)
    calls = [*regions.calls, *types.calls, *listing.calls]
    assert {call.request.headers["authorization"] for call in calls} == {TOKEN}  # no "Bearer"
    assert [json.loads(c.request.content) for c in types.calls] == [{"region_sign_list": s} for s in GROUPS.values()]
    sent = [json.loads(c.request.content) for c in listing.calls]
    west = ["RTX 4090", "A100-SXM4-80GB", "RTX 3090"]
    assert sent == [
        machine_list_body(GROUPS["west"], west, 1),
        machine_list_body(GROUPS["west"], west, 2),
        machine_list_body(GROUPS["beijing"], ["A100-PCIE-40GB", "A800-80GB", "RTX 4090"], 1),  # not the vGPU
        machine_list_body(GROUPS["neimeng"], ["A40", "A100-SXM4-80GB"], 1),  # the A100 sold out, still listed
        machine_list_body(GROUPS["foshan"], ["RTX 4090", "RTX 3090"], 1),  # not the RTX 4090D
    ]
    assert sent[0]["charge_type"] == "payg" and sent[0]["gpu_idle_num"] == 0 and sent[0]["page_size"] == PAGE_SIZE
    assert fetched.responses[0].label == "regions" and len(fetched.responses) == 10
    assert fetched.notes == [  # the types the card table does not know, per region group listing them
        "unknown GPU, not collected: RTX 4090D (1 item)",
        "unknown GPU, not collected: vGPU-32GB (1 item)",
    ]
    assert len(collector.parse(fetched)) == OFFERS


async def test_paging_stops_at_max_page_although_later_pages_would_answer(with_token) -> None:
    """Past max_page the API repeats the last page: asking for it would count machines twice."""
    with respx.mock(assert_all_mocked=True) as mock:
        _, _, listing = mock_api(mock)
        await run_fetch(with_token)
    west = [
        json.loads(c.request.content)["page_index"] for c in listing.calls if "west-B" in c.request.content.decode()
    ]
    assert west == [1, 2]


async def test_a_runaway_max_page_is_stopped(with_token) -> None:
    endless = json.loads(fixture_bytes("autodl", "machine_list_west_page1.json"))
    endless["data"]["max_page"] = MAX_PAGES + 50
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        mock.post(host=API, path=TYPES_PATH).mock(side_effect=gpu_types)
        route = mock.post(host=API, path=LIST_PATH).mock(return_value=httpx.Response(200, json=endless))
        with pytest.raises(FetchError, match=f"passed {MAX_PAGES} pages without an end"):
            await run_fetch(with_token)
    assert route.call_count == MAX_PAGES


@pytest.mark.parametrize("status", [200, 401])
async def test_an_expired_token_is_a_clear_fetch_error(with_token, status) -> None:
    refused = httpx.Response(status, content=fixture_bytes("autodl", "error_authorize_failed.json"))
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=refused)
        with pytest.raises(FetchError) as caught:
            await run_fetch(with_token)
    message = str(caught.value)
    assert "AuthorizeFailed: 认证失败; 登录超时" in message and "expired" in message
    assert "update GPUPRICE_AUTODL_TOKEN" in message and TOKEN not in message


async def test_another_error_code_is_a_fetch_error_with_code_and_message(with_token) -> None:
    refused = {"code": "IllegalParameter", "msg": "参数错误"}  # an illustrative non-Success envelope
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        mock.post(host=API, path=TYPES_PATH).mock(side_effect=gpu_types)
        mock.post(host=API, path=LIST_PATH).mock(return_value=httpx.Response(200, json=refused))
        with pytest.raises(FetchError, match=r"error on machines west-B,west-C page 1: IllegalParameter: 参数错误"):
            await run_fetch(with_token)


async def test_an_answer_without_the_envelope_is_a_parse_error(with_token) -> None:
    from collectors.errors import ParseError

    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=httpx.Response(200, json={"list": []}))
        with pytest.raises(ParseError, match="no 'code' in the answer to regions"):
            await run_fetch(with_token)


async def test_5xx_and_429_are_retried(with_token) -> None:
    hiccups = iter([httpx.Response(502, text="Bad Gateway"), httpx.Response(429, headers={"Retry-After": "0"})])

    def flaky(request: httpx.Request) -> httpx.Response:
        return next(hiccups, None) or machines(request)

    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        mock.post(host=API, path=TYPES_PATH).mock(side_effect=gpu_types)
        listing = mock.post(host=API, path=LIST_PATH).mock(side_effect=flaky)
        collector, fetched = await run_fetch(with_token, sleep=(sleeps := Sleeps()))
    assert listing.call_count == 7 and len(sleeps.delays) == 2 and len(collector.parse(fetched)) == OFFERS


async def test_base_url_override_rewrites_both_autodl_hosts(with_token) -> None:
    settings = with_token.model_copy(update={"base_urls": {"autodl": "http://mirror.test:9000"}})
    with respx.mock(assert_all_mocked=True) as mock:
        regions = mock.get(host="mirror.test", port=9000, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        types = mock.post(host="mirror.test", port=9000, path=TYPES_PATH).mock(side_effect=gpu_types)
        listing = mock.post(host="mirror.test", port=9000, path=LIST_PATH).mock(side_effect=machines)
        collector, fetched = await run_fetch(settings)
    assert (regions.call_count, types.call_count, listing.call_count) == (1, 4, 5)
    assert fetched.responses[0].url == "https://fe-config-backend.autodl.com/api/v1/autodl/region/tag"
    assert {q.source_url for q in collector.parse(fetched)} == {"https://api.autodl.com/api/v1/user/machine/list"}


async def test_configured_region_signs_narrow_the_walk(with_token) -> None:
    settings = with_token.model_copy(update={"regions": {"autodl": ["beijing-B", "beijing-D"]}})
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        types = mock.post(host=API, path=TYPES_PATH).mock(return_value=answer("gpu_type_beijing.json"))
        listing = mock.post(host=API, path=LIST_PATH).mock(return_value=answer("machine_list_beijing_page1.json"))
        collector, fetched = await run_fetch(settings)
    assert [json.loads(c.request.content) for c in types.calls] == [{"region_sign_list": ["beijing-B", "beijing-D"]}]
    assert [json.loads(c.request.content)["region_sign_list"] for c in listing.calls] == [["beijing-B", "beijing-D"]]
    # this stand-in answers with the whole beijing page; its A100 machines are the ones in B and D
    assert {q.region for q in collector.parse(fetched) if q.gpu_model == "A100"} == {"beijing-B", "beijing-D"}


async def test_an_unknown_configured_region_sign_is_named(with_token) -> None:
    settings = with_token.model_copy(update={"regions": {"autodl": ["mars-A"]}})
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=CONFIG, path=REGION_PATH).mock(return_value=answer("region_tag.json"))
        with pytest.raises(FetchError, match=r"unknown region signs \['mars-A'\]; known: \['beijing-A'"):
            await run_fetch(settings)


async def test_offline_replay_needs_no_token(settings) -> None:
    settings = settings.model_copy(update={"offline": True})
    collector = AutodlCollector(settings)
    seen: list[str] = []

    class Recording(ReplayTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request.headers["authorization"])
            return await super().handle_async_request(request)

    async with make_client(settings, Recording(Replay.load(FIXTURES, "autodl"))) as client:
        fetched = await collector.fetch(Http(client, "autodl", settings), collector.scope("all"))
    assert set(seen) == {OFFLINE_TOKEN} and len(collector.parse(fetched)) == OFFERS


async def test_local_replay_server_stands_in_through_the_base_url(with_token) -> None:
    with serve_replay([Replay.load(FIXTURES, "autodl")]) as server:
        local = with_token.model_copy(update={"base_urls": {"autodl": server.url}})
        collector, fetched = await run_fetch(local)
    paths = [path for _, path, _, _ in server.requests]
    assert paths == [
        REGION_PATH,
        TYPES_PATH,
        LIST_PATH,
        LIST_PATH,
        TYPES_PATH,
        LIST_PATH,
        TYPES_PATH,
        LIST_PATH,
        TYPES_PATH,
        LIST_PATH,
    ]
    assert {headers["Authorization"] for _, _, headers, _ in server.requests} == {TOKEN}
    assert len(collector.parse(fetched)) == OFFERS
