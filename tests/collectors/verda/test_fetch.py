"""Verda collector, fetching: the client-credentials token (asked once, sent as Bearer, never kept),
the four reads, Verda's error bodies, retries, long-term periods that fail without costing the
rest, base-URL override, offline replay and a local stand-in server. respx and 127.0.0.1 only."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.base import Fetched
from collectors.errors import FetchError, MissingCredentials, ParseError
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.verda import VerdaCollector
from collectors.verda.api import TOKEN_URL
from pricedb.models import Pricing
from pricedb.settings import Settings
from tests.conftest import FIXTURES, fetch_now, fixture_bytes, recorded_answer

CLIENT_ID, SECRET = "vXk3TestClientId", "test-client-secret-Zq81"
TOKEN = "offline-replay-placeholder-access-token"  # what fixtures/verda/oauth2_token.json hands out
HOST = "api.verda.com"
PATHS = ["/v1/oauth2/token", "/v1/instance-types", "/v1/instance-availability", "/v1/instance-availability",
         "/v1/long-term/periods/instances"]  # fmt: skip


def keyed(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"verda_client_id": SecretStr(CLIENT_ID), "verda_client_secret": SecretStr(SECRET)}
    )


def answer_like_verda(request: httpx.Request, strip: str = "") -> httpx.Response:
    return recorded_answer("verda", request, strip)


def fetch(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    return fetch_now(VerdaCollector(settings), transport)


def test_token_first_then_every_read_with_it(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.route(host=HOST).mock(side_effect=answer_like_verda)
        result = fetch(keyed(settings))
    calls = [call.request for call in route.calls]
    assert [r.url.path for r in calls] == PATHS
    assert [r.url.params.get("isSpot") for r in calls[2:4]] == ["false", "true"]
    assert calls[1].url.params["currency"] == "usd"
    token_call = calls[0]
    assert token_call.method == "POST" and "Authorization" not in token_call.headers
    assert json.loads(token_call.content) == {
        "grant_type": "client_credentials",
        "client_id": CLIENT_ID,
        "client_secret": SECRET,
    }
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in calls[1:])
    assert [raw.label for raw in result.responses] == [
        "instance-types",
        "available:on_demand",
        "available:spot",
        "long-term",
    ]
    assert len(VerdaCollector(settings).parse(result)) == 224


def test_the_token_and_the_secret_are_never_kept_or_logged(settings, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    with respx.mock(assert_all_mocked=True) as mock:
        mock.route(host=HOST).mock(side_effect=answer_like_verda)
        result = fetch(keyed(settings))
    kept = b"".join(raw.body + raw.url.encode() + raw.label.encode() for raw in result.responses)
    for secret in (TOKEN, SECRET):
        assert secret.encode() not in kept and secret not in caplog.text
    assert TOKEN_URL not in [raw.url for raw in result.responses]


def test_credentials_come_from_verdas_own_variables_too(monkeypatch) -> None:
    monkeypatch.setenv("VERDA_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("VERDA_CLIENT_SECRET", SECRET)
    loaded = Settings()
    assert VerdaCollector(loaded).credentials() == (CLIENT_ID, SECRET)
    assert SECRET not in repr(loaded)


@pytest.mark.parametrize(
    "update", [{}, {"verda_client_id": SecretStr(CLIENT_ID)}, {"verda_client_secret": SecretStr(SECRET)}]
)
def test_missing_credentials_skip_the_run_naming_both_settings(settings, update) -> None:
    with respx.mock(assert_all_mocked=True), pytest.raises(MissingCredentials) as failure:
        fetch(settings.model_copy(update=update))
    assert "GPUPRICE_VERDA_CLIENT_ID" in str(failure.value) and "GPUPRICE_VERDA_CLIENT_SECRET" in str(failure.value)


def test_refused_credentials_fail_in_verdas_words_without_the_secret(settings) -> None:
    body = fixture_bytes("verda", "error_unauthorized.json")
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.post(TOKEN_URL).mock(return_value=httpx.Response(401, content=body))
        with pytest.raises(FetchError) as failure:
            fetch(keyed(settings))
    message = str(failure.value)
    assert route.call_count == 1
    assert (
        "Verda OAuth2 token endpoint refused token (HTTP 401); unauthorized_request: Invalid client credentials"
        in message
    )
    assert "GPUPRICE_VERDA_CLIENT_SECRET" in message and SECRET not in message


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"<html>login</html>", "the token answer is not JSON"),
        (
            b'{"token_type": "Bearer", "refresh_token": "r-123"}',
            r"no access_token in the token answer \(fields: refresh_token, token_type\)",
        ),
        (b'{"access_token": "a-123", "token_type": "MAC"}', "token_type 'MAC', expected Bearer"),
    ],
)
def test_an_unusable_token_answer_is_a_parse_error_that_does_not_echo_it(settings, answer, message) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        mock.post(TOKEN_URL).mock(return_value=httpx.Response(200, content=answer))
        with pytest.raises(ParseError, match=message) as failure:
            fetch(keyed(settings))
    assert "r-123" not in str(failure.value) and "login" not in str(failure.value)


def test_an_api_error_on_a_read_fails_the_run_with_verdas_message(settings) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/instance-types"):
            return httpx.Response(400, content=fixture_bytes("verda", "error_invalid_request.json"))
        return answer_like_verda(request)

    with respx.mock(assert_all_mocked=True) as mock:
        mock.route(host=HOST).mock(side_effect=answer)
        with pytest.raises(
            FetchError, match=r"Verda API refused instance-types \(HTTP 400\); invalid_request: Bad request"
        ):
            fetch(keyed(settings))


def test_failing_long_term_periods_are_not_covered_and_the_rest_stands(settings) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/periods/instances"):
            return httpx.Response(503, text="maintenance")
        return answer_like_verda(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.route(host=HOST).mock(side_effect=answer)
        result = fetch(keyed(settings))
    assert route.call_count == 4 + settings.retry_attempts  # the periods call was retried, then given up
    assert set(result.not_covered) == {Pricing.MONTHLY, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y}
    assert "long-term periods could not be read" in result.not_covered[Pricing.MONTHLY]
    assert {q.pricing for q in VerdaCollector(settings).parse(result)} == {Pricing.ON_DEMAND, Pricing.SPOT}


def test_an_unreadable_periods_answer_costs_only_the_long_term_pricings(settings) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/periods/instances"):
            return httpx.Response(200, json={"periods": []})
        return answer_like_verda(request)

    with respx.mock(assert_all_mocked=True) as mock:
        mock.route(host=HOST).mock(side_effect=answer)
        result = fetch(keyed(settings))
    assert "expected a list of long-term periods" in result.not_covered[Pricing.RESERVED_1Y]
    assert [raw.label for raw in result.responses] == ["instance-types", "available:on_demand", "available:spot"]
    assert len(VerdaCollector(settings).parse(result)) == 112


def test_server_errors_are_retried(settings) -> None:
    answers = iter([httpx.Response(502, text="Bad Gateway"), httpx.Response(429, headers={"Retry-After": "0"})])

    def flaky(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/instance-types"):
            return next(answers, None) or answer_like_verda(request)
        return answer_like_verda(request)

    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.route(host=HOST).mock(side_effect=flaky)
        result = fetch(keyed(settings))
    assert route.call_count == 7 and len(result.responses) == 4


def test_base_url_override_applies_to_the_token_and_every_read(settings) -> None:
    local = keyed(settings).model_copy(update={"base_urls": {"verda": "http://mirror.test/verda"}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.route(host="mirror.test").mock(side_effect=lambda request: answer_like_verda(request, "/verda"))
        result = fetch(local)
    assert [call.request.url.path for call in route.calls] == [f"/verda{path}" for path in PATHS]
    assert all(raw.url.startswith("https://api.verda.com/v1/") for raw in result.responses)


def test_offline_replay_uses_placeholder_credentials(settings) -> None:
    offline = settings.model_copy(update={"offline": True})
    result = fetch(offline, ReplayTransport(Replay.load(FIXTURES, "verda")))
    assert len(VerdaCollector(offline).parse(result)) == 224
    assert result.notes == ["unknown GPU, not collected: B300 SXM6 262GB (1 item)"]  # the run's notes


def test_a_local_stand_in_server_gets_the_token_call_and_the_bearer_reads(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "verda")]) as server:
        result = fetch(keyed(settings).model_copy(update={"base_urls": {"verda": server.url}}))
        seen = list(server.requests)
    assert [path.split("?")[0] for _, path, _, _ in seen] == PATHS
    assert json.loads(seen[0][3])["client_secret"] == SECRET
    assert all(headers["Authorization"] == f"Bearer {TOKEN}" for _, _, headers, _ in seen[1:])
    assert len(VerdaCollector(settings).parse(result)) == 224
