"""The shared HTTP layer: base-URL rewriting, retries with backoff and Retry-After, clear errors,
streaming downloads, and the offline replay transport."""

from __future__ import annotations

import asyncio
import ssl
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
import respx

from collectors.errors import FetchError
from collectors.http import USER_AGENT, Http, make_client, rewrite_url
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.retry import RetryPolicy, retry_after_seconds
from pricedb import tls
from pricedb.settings import Settings
from tests.helpers import Sleeps

URL = "https://prices.example.com/api/prices?filter=a100&page=1"


def run(coro):
    return asyncio.run(coro)


async def _get(settings: Settings, url: str = URL, sleeps: Sleeps | None = None, provider: str = "example"):
    async with make_client(settings) as client:
        http = Http(client, provider, settings, sleep=sleeps or Sleeps())
        return await http.get(url)


def test_rewrite_url_keeps_path_and_query() -> None:
    assert rewrite_url(URL, None) == URL
    assert rewrite_url(URL, "http://127.0.0.1:9000") == "http://127.0.0.1:9000/api/prices?filter=a100&page=1"
    assert rewrite_url(URL, "http://mirror.local/aws/") == "http://mirror.local/aws/api/prices?filter=a100&page=1"


@respx.mock
def test_base_url_setting_applies_and_user_agent_names_the_project(settings: Settings) -> None:
    route = respx.get("http://127.0.0.1:9000/api/prices").mock(return_value=httpx.Response(200, text="ok"))
    settings = settings.model_copy(update={"base_urls": {"example": "http://127.0.0.1:9000"}})
    raw = run(_get(settings))
    assert raw.body == b"ok" and raw.url == URL  # the provider's URL is what the quote cites
    assert route.calls.last.request.headers["User-Agent"] == USER_AGENT
    assert "gpuprice" in USER_AGENT


@respx.mock
def test_5xx_then_success_is_retried(settings: Settings) -> None:
    route = respx.get(URL).mock(side_effect=[httpx.Response(503), httpx.Response(502), httpx.Response(200, text="x")])
    sleeps = Sleeps()
    assert run(_get(settings, sleeps=sleeps)).body == b"x"
    assert route.call_count == 3 and len(sleeps.delays) == 2


@respx.mock
def test_429_honours_retry_after_seconds(settings: Settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 60.0})
    respx.get(URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200)])
    sleeps = Sleeps()
    run(_get(settings, sleeps=sleeps))
    assert sleeps.delays == [7.0]


@respx.mock
def test_retry_after_is_capped(settings: Settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 30.0})
    respx.get(URL).mock(side_effect=[httpx.Response(429, headers={"Retry-After": "3600"}), httpx.Response(200)])
    sleeps = Sleeps()
    run(_get(settings, sleeps=sleeps))
    assert sleeps.delays == [30.0]


def test_retry_after_http_date() -> None:
    now = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    response = httpx.Response(429, headers={"Retry-After": format_datetime(now + timedelta(seconds=12), usegmt=True)})
    assert retry_after_seconds(response, now) == pytest.approx(12)
    assert retry_after_seconds(httpx.Response(429, headers={"Retry-After": "soon"})) is None


def test_backoff_grows_and_is_capped() -> None:
    policy = RetryPolicy(attempts=10, base_delay_s=1.0, max_delay_s=5.0)
    for attempt in range(10):
        assert 0 <= policy.backoff(attempt) <= min(5.0, 2**attempt)


@respx.mock
def test_persistent_5xx_becomes_fetch_error(settings: Settings) -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(500))
    with pytest.raises(FetchError, match=r"HTTP 500 .*gave up after 4 attempts"):
        run(_get(settings))
    assert route.call_count == 4


@respx.mock
def test_timeouts_become_fetch_error(settings: Settings) -> None:
    respx.get(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(FetchError, match="timed out"):
        run(_get(settings))


@respx.mock
def test_connect_error_then_success(settings: Settings) -> None:
    respx.get(URL).mock(side_effect=[httpx.ConnectError("refused"), httpx.Response(200, text="ok")])
    assert run(_get(settings)).body == b"ok"


@respx.mock
def test_4xx_is_not_retried_and_says_what_came_back(settings: Settings) -> None:
    route = respx.get(URL).mock(return_value=httpx.Response(403, text='{"message": "Forbidden: bad key"}'))
    with pytest.raises(FetchError, match=r"HTTP 403 .*Forbidden: bad key"):
        run(_get(settings))
    assert route.call_count == 1


@respx.mock
def test_signer_sees_the_rewritten_request_on_every_attempt(settings: Settings) -> None:
    settings = settings.model_copy(update={"base_urls": {"example": "http://127.0.0.1:9000"}})
    respx.get("http://127.0.0.1:9000/api/prices").mock(side_effect=[httpx.Response(500), httpx.Response(200)])
    hosts: list[str] = []

    def sign(request: httpx.Request) -> None:
        hosts.append(request.url.host)
        request.headers["X-Signature"] = f"sig-{len(hosts)}"

    async def go():
        async with make_client(settings) as client:
            return await Http(client, "example", settings, sleep=Sleeps()).request("GET", URL, sign=sign)

    response = run(go())
    assert hosts == ["127.0.0.1", "127.0.0.1"]
    assert response.request.headers["X-Signature"] == "sig-2"


@respx.mock
def test_download_streams_kept_lines_to_a_file(settings: Settings, tmp_path: Path) -> None:
    body = b"".join(f"line {i}\n".encode() for i in range(10_000)) + b"tail without newline"
    respx.get(URL).mock(return_value=httpx.Response(200, content=body))

    async def go():
        async with make_client(settings) as client:
            http = Http(client, "example", settings, sleep=Sleeps(), workdir=tmp_path)
            return await http.download(URL, keep_line=lambda line: line.endswith(b"7\n") or b"tail" in line)

    raw = run(go())
    assert raw.path is not None and raw.path.parent == tmp_path and raw.body == b""
    lines = raw.path.read_bytes().splitlines()
    assert lines[0] == b"line 7" and lines[-1] == b"tail without newline" and len(lines) == 1001


@respx.mock
def test_failed_download_leaves_no_file(settings: Settings, tmp_path: Path) -> None:
    respx.get(URL).mock(return_value=httpx.Response(503))

    async def go():
        async with make_client(settings) as client:
            await Http(client, "example", settings, sleep=Sleeps(), workdir=tmp_path).download(URL)

    with pytest.raises(FetchError):
        run(go())
    assert list(tmp_path.iterdir()) == []


def _replay(tmp_path: Path) -> Replay:
    folder = tmp_path / "example"
    folder.mkdir()
    (folder / "page1.json").write_text('{"page": 1}')
    (folder / "gql.json").write_text('{"data": {}}')
    (folder / "replay.json").write_text(
        '{"routes": ['
        '{"url": "https://prices.example.com/api/prices?page=1&filter=a100", "file": "page1.json",'
        ' "content_type": "application/json"},'
        '{"method": "POST", "url": "https://prices.example.com/graphql", "body_contains": "gpuTypes",'
        ' "file": "gql.json"}]}'
    )
    return Replay.load(tmp_path, "example")


def test_replay_transport_matches_method_path_query_and_body(tmp_path: Path, settings: Settings) -> None:
    replay = _replay(tmp_path)

    async def go():
        async with make_client(settings, ReplayTransport(replay)) as client:
            http = Http(client, "example", settings, sleep=Sleeps())
            first = await http.get(URL)  # query order differs from the manifest's
            posted = await http.fetch("POST", "https://prices.example.com/graphql", json={"query": "{ gpuTypes }"})
            with pytest.raises(FetchError, match="no recorded example response"):
                await http.get("https://prices.example.com/api/prices?page=2")
            return first, posted

    first, posted = run(go())
    assert first.json() == {"page": 1} and first.content_type == "application/json"
    assert posted.json() == {"data": {}}


def test_replay_server_answers_over_real_http(tmp_path: Path) -> None:
    replay = _replay(tmp_path)
    with serve_replay([replay]) as server:
        answer = httpx.get(f"{server.url}/api/prices?filter=a100&page=1")
        missing = httpx.get(f"{server.url}/nothing")
    assert answer.json() == {"page": 1}
    assert missing.status_code == 404
    assert [r[1] for r in server.requests] == ["/api/prices?filter=a100&page=1", "/nothing"]


def test_every_client_shares_one_verifying_tls_context(settings: Settings) -> None:
    """Clients reuse one TLS context (loading the CA bundle costs ~50 ms of CPU per client), and that
    context still checks certificates and host names against httpx's default CA bundle."""
    context = tls.client_context()
    assert tls.client_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 100  # certifi's bundle, loaded

    async def pools() -> list[object]:
        async with make_client(settings) as first, make_client(settings) as second:
            return [client._transport._pool._ssl_context for client in (first, second)]

    assert run(pools()) == [context, context]
