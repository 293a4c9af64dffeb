"""collectors.jsonapi: a JSON API's own error words, read from the whole error body wherever the
provider nests them, put first in the run's error, with the setting to check on 401/403."""

from __future__ import annotations

import asyncio

import httpx
import pytest
import respx

from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.jsonapi import error_detail, fetch_explained, status_of

URL = "https://api.example.test/v1/things"


def explained(settings, answer: httpx.Response | Exception, auth_hint: str | None = "check GPUPRICE_X_KEY") -> str:
    async def go() -> None:
        async with make_client(settings) as client:
            await fetch_explained(Http(client, "x", settings), "GET", URL, source="Example API", auth_hint=auth_hint)

    with respx.mock(assert_all_mocked=True) as mock:
        if isinstance(answer, Exception):
            mock.get(URL).mock(side_effect=answer)
        else:
            mock.get(URL).mock(return_value=answer)
        with pytest.raises(FetchError) as failure:
            asyncio.run(go())
    return str(failure.value)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            '{"error": {"code": "global/invalid-api-key", "message": "API key was invalid."}}',
            "global/invalid-api-key: API key was invalid.",
        ),
        ('{"errors": [{"message": "Unauthorized"}]}', "Unauthorized"),
        ('{"code": "unauthorized_request", "message": "Say \\"please\\""}', 'unauthorized_request: Say "please"'),
    ],
)
def test_the_words_are_found_however_the_provider_nests_them(body: str, words: str) -> None:
    assert error_detail(body) == words


def test_words_beyond_the_message_snippet_are_read_from_the_whole_body(settings) -> None:
    body = '{"padding": "' + "x" * 400 + '", "code": "invalid_request", "message": "Bad request"}'
    message = explained(settings, httpx.Response(400, text=body))
    assert message.startswith("Example API refused " + URL + " (HTTP 400); invalid_request: Bad request")


def test_401_without_words_still_names_the_setting(settings) -> None:
    message = explained(settings, httpx.Response(401, text="<html>Unauthorized</html>"))
    assert message.startswith(f"Example API refused {URL} (HTTP 401); check GPUPRICE_X_KEY")


def test_other_errors_without_words_are_left_as_they_were(settings) -> None:
    assert explained(settings, httpx.Response(404, text="not here")).startswith(f"HTTP 404 from {URL}: not here")
    assert "Example API refused" not in explained(settings, httpx.ConnectError("refused"))


def test_the_status_comes_from_the_error_or_its_message() -> None:
    assert status_of(FetchError("whatever", status=403)) == 403
    assert status_of(FetchError(f"HTTP 502 from {URL}: busy")) == 502
    assert status_of(FetchError("timed out")) is None
