"""RunPod collector, fetching: the type list then one price query per known GPU type, the optional key as
a Bearer header (never in the URL), GraphQL and HTTP errors, retries, base-URL override, offline
replay and a local stand-in server. respx and 127.0.0.1 only."""

from __future__ import annotations

import json

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.base import Fetched
from collectors.errors import FetchError, ParseError
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.runpod import RunpodCollector
from collectors.runpod.graphql import GRAPHQL_URL, prices_query, request_body
from pricedb.settings import Settings
from tests.conftest import FIXTURES, fetch_now, fixture_bytes, recorded_answer

PCIE, SXM = "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"
RTX4090, H100, L40S = "NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"
UNKNOWN = "NVIDIA GeForce RTX 3080 Ti"  # in the list; not in the card table
OFFERS = 30  # what the five recorded price answers hold (tests/collectors/runpod/test_parse.py counts them)
KEY = "rpa_TESTKEY0123456789ABCDEFGHIJKLMNOPQRSTUV"


def answer_like_runpod(request: httpx.Request) -> httpx.Response:
    """Answer each query with the recorded body it asks for (the replay manifest's own rules)."""
    return recorded_answer("runpod", request)


def fetch(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    return fetch_now(RunpodCollector(settings), transport)


def queries(route: respx.Route) -> list[str]:
    return [json.loads(call.request.content)["query"] for call in route.calls]


def test_the_list_is_read_first_then_each_known_type_with_its_counts(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(GRAPHQL_URL).mock(side_effect=answer_like_runpod)
        result = fetch(settings)
    sent = queries(route)
    assert len(sent) == 6 and sent[0].startswith("query GpuTypeList")
    assert sent[1:] == [
        prices_query(PCIE, {"secure": 8, "community": 4}),
        prices_query(SXM, {"secure": 8, "community": 8}),
        prices_query(RTX4090, {"secure": 2, "community": 2}),
        prices_query(H100, {"secure": 2, "community": 0}),
        prices_query(L40S, {"secure": 2, "community": 2}),
    ]
    assert not any(UNKNOWN in q for q in sent)  # a card the table does not know is never priced
    assert [raw.label for raw in result.responses] == [f"prices of {g}" for g in (PCIE, SXM, RTX4090, H100, L40S)]
    assert all(raw.url == GRAPHQL_URL for raw in result.responses)
    assert result.notes[0] == f"unknown GPU, not collected: {UNKNOWN} (12 GB) (1 item)"
    others = [note for note in result.notes[1:] if note != f"{H100}: not offered in community cloud"]
    assert len(others) == 6 and all("stockStatus null" in note for note in others)
    assert len(RunpodCollector(settings).parse(result)) == OFFERS


def test_bodies_are_compact_json_and_carry_no_key_without_one(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(GRAPHQL_URL).mock(side_effect=answer_like_runpod)
        fetch(settings)
    for call in route.calls:
        assert call.request.content == request_body(json.loads(call.request.content)["query"])
        assert call.request.headers["Content-Type"] == "application/json"
        assert "Authorization" not in call.request.headers


def test_a_key_is_sent_as_bearer_never_in_the_url(settings, monkeypatch) -> None:
    monkeypatch.setenv("RUNPOD_API_KEY", KEY)  # RunPod's own variable is honoured
    loaded = Settings()
    assert loaded.runpod_api_key is not None and loaded.runpod_api_key.get_secret_value() == KEY
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(GRAPHQL_URL).mock(side_effect=answer_like_runpod)
        result = fetch(settings.model_copy(update={"runpod_api_key": SecretStr(KEY)}))
    assert all(call.request.headers["Authorization"] == f"Bearer {KEY}" for call in route.calls)
    assert all(KEY not in str(call.request.url) for call in route.calls)
    assert all(KEY not in raw.url for raw in result.responses)


def test_http_401_fails_in_runpods_words_and_names_the_setting(settings) -> None:
    body = fixture_bytes("runpod", "error_unauthorized.json")
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(GRAPHQL_URL).mock(return_value=httpx.Response(401, content=body))
        with pytest.raises(FetchError) as failure:
            fetch(settings.model_copy(update={"runpod_api_key": SecretStr(KEY)}))
    message = str(failure.value)
    assert route.call_count == 1
    assert "RunPod GraphQL API refused GPU type list (HTTP 401); Unauthorized" in message
    assert "GPUPRICE_RUNPOD_API_KEY" in message and KEY not in message


def test_graphql_errors_sent_with_http_200_fail_the_run(settings) -> None:
    body = fixture_bytes("runpod", "error_unauthorized.json")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, content=body))
        with pytest.raises(FetchError, match="answered GPU type list with errors: Unauthorized"):
            fetch(settings)


def test_a_rejected_query_fails_with_the_validation_message(settings) -> None:
    body = fixture_bytes("runpod", "error_validation.json")

    def answer(request: httpx.Request) -> httpx.Response:
        if b"GpuTypeList" in request.content:
            return httpx.Response(200, content=fixture_bytes("runpod", "gpu_types.json"))
        return httpx.Response(400, content=body)

    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(GRAPHQL_URL).mock(side_effect=answer)
        with pytest.raises(
            FetchError, match=r"refused prices of NVIDIA A100 80GB PCIe \(HTTP 400\); Cannot query field"
        ):
            fetch(settings)


def test_server_errors_are_retried(settings) -> None:
    answers = iter([httpx.Response(502, text="Bad Gateway"), httpx.Response(503, text="busy")])

    def flaky(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or answer_like_runpod(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(GRAPHQL_URL).mock(side_effect=flaky)
        result = fetch(settings)
    assert route.call_count == 8 and len(result.responses) == 5


def test_a_list_without_any_known_card_is_a_parse_error_naming_the_types(settings) -> None:
    listing = json.loads(fixture_bytes("runpod", "gpu_types.json"))
    listing["data"]["gpuTypes"] = [t for t in listing["data"]["gpuTypes"] if t["id"] == UNKNOWN]
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(GRAPHQL_URL).mock(return_value=httpx.Response(200, json=listing))
        with pytest.raises(ParseError, match=r"none of the 1 GPU types is a card the table knows .*RTX 3080 Ti"):
            fetch(settings)


def test_base_url_override_applies_to_every_query(settings) -> None:
    local = settings.model_copy(update={"base_urls": {"runpod": "http://mirror.test"}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post("http://mirror.test/graphql").mock(side_effect=answer_like_runpod)
        result = fetch(local)
    assert route.call_count == 6 and {raw.url for raw in result.responses} == {GRAPHQL_URL}


def test_offline_replay_answers_every_query(settings) -> None:
    offline = settings.model_copy(update={"offline": True, "runpod_api_key": SecretStr(KEY)})
    result = fetch(offline, ReplayTransport(Replay.load(FIXTURES, "runpod")))
    assert len(RunpodCollector(offline).parse(result)) == OFFERS
    assert "Authorization" not in RunpodCollector(offline).headers()  # a real key never goes to a replay


def test_a_local_stand_in_server_answers_through_the_base_url(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "runpod")]) as server:
        result = fetch(settings.model_copy(update={"base_urls": {"runpod": server.url}}))
        seen = list(server.requests)
    assert [(method, path) for method, path, _, _ in seen] == [("POST", "/graphql")] * 6
    assert len(RunpodCollector(settings).parse(result)) == OFFERS
