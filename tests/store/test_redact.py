"""pricedb.redact, the one redaction point: which credentials it knows, which shapes it masks, and
that log records, HTTP errors and run records all pass through it."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.errors import FetchError
from collectors.http import Http, make_client
from pricedb import redact as redaction
from pricedb.models import RunStatus
from pricedb.redact import MASK, get_logger, redact
from pricedb.settings import Settings
from pricedb.store import RunRecord
from tests.helpers import NOW, make_quote

PROJECT = Path(__file__).resolve().parents[2]
API_KEY = "rpa_SECRET0123456789abcdefABCDEF"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SLACK = "https://hooks.slack.com/services/T0GPUPRICE/B0GPUPRICE/S3cr3tW3bh00kT0ken"


def test_every_secret_setting_is_known_from_construction_and_from_copies(tmp_path: Path) -> None:
    made = Settings(db=tmp_path / "x.duckdb", runpod_api_key=API_KEY, digest_slack_webhook_url=SLACK)
    assert redact(f"key {API_KEY} and hook {SLACK}") == f"key {MASK} and hook {MASK}"
    copied = made.model_copy(update={"verda_client_secret": SecretStr("verda-secret-from-a-copy")})
    assert copied.verda_client_secret is not None
    assert redact("it said verda-secret-from-a-copy") == f"it said {MASK}"


def test_a_secret_is_masked_in_the_forms_it_travels_in() -> None:
    redaction.learn(AWS_SECRET)
    encoded = AWS_SECRET.replace("/", "%2F").replace("+", "%2B")
    json_escaped = AWS_SECRET.replace("/", "\\/")
    for text in (AWS_SECRET, encoded, json_escaped):
        assert redact(f"<{text}>") == f"<{MASK}>"


def test_a_webhook_urls_path_is_a_secret_even_apart_from_its_host() -> None:
    redaction.learn(SLACK)
    assert "S3cr3tW3bh00kT0ken" not in redact(
        "POST https://proxy.example/services/T0GPUPRICE/B0GPUPRICE/S3cr3tW3bh00kT0ken"
    )


def test_values_too_short_to_be_credentials_are_not_searched_for() -> None:
    redaction.learn("short", SecretStr("abc"), None, "")
    assert redact("a short abc text") == "a short abc text"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"Authorization": "Bearer eyJhbGciOi.payload.sig"}', '{"Authorization": "***"}'),
        ("{'client_secret': 'hunter2hunter2', 'x': 1}", "{'client_secret': '***', 'x': 1}"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig\nHost: api", "Authorization: Bearer ***\nHost: api"),
        ("authorization: rawlogintoken123", "authorization: ***"),
        ("X-Api-Key: abcdef123456", "X-Api-Key: ***"),
        (
            "grant_type=client_credentials&client_secret=s3cr3t&x=1",
            "grant_type=client_credentials&client_secret=***&x=1",
        ),
        (
            "TC3-HMAC-SHA256 Credential=AKIDabc/2026-11-29/cvm/tc3_request, SignedHeaders=content-type;host, "
            "Signature=0123abcd",
            "TC3-HMAC-SHA256 Credential=***, SignedHeaders=content-type;host, Signature=***",
        ),
        ("X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ab12", "X-Amz-Credential=***&X-Amz-Signature=***"),
    ],
)
def test_credentials_are_masked_by_their_shape(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_an_error_names_the_url_without_user_info_query_or_fragment() -> None:
    text = "HTTP 401 from https://user:pw@api.example.test/v1/things?api_key=zz&page=2#top: denied"
    assert redact(text) == "HTTP 401 from https://api.example.test/v1/things: denied"
    assert (
        redact(text, keep_query=True)
        == "HTTP 401 from https://api.example.test/v1/things?api_key=***&page=2#top: denied"
    )


def test_ordinary_words_survive() -> None:
    text = "AuthFailure.SecretIdNotFound: The SecretId is not found; nextPageToken=abc; Basic plan"
    assert redact(text) == text


# ----- logs -----------------------------------------------------------------------------------------
def test_gpuprice_log_records_pass_the_filter_message_arguments_and_traceback(caplog) -> None:
    redaction.learn(API_KEY)
    log = get_logger("gpuprice.test.redaction")
    caplog.set_level(logging.INFO)
    try:
        raise RuntimeError(f"upstream echoed {API_KEY}")
    except RuntimeError as exc:
        log.exception("run failed: %s (url %s)", exc, "https://x.test/p?token=abc123456")
    [record] = [r for r in caplog.records if r.name == "gpuprice.test.redaction"]
    assert API_KEY not in caplog.text and "token=***" in caplog.text
    assert MASK in record.getMessage() and record.exc_text and API_KEY not in record.exc_text


def test_uvicorns_access_lines_keep_their_argument_tuple(caplog) -> None:
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    logging.getLogger("uvicorn.access").info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", "/offers?api_key=abc12345", "1.1", 200
    )
    [record] = [r for r in caplog.records if r.name == "uvicorn.access"]
    assert len(record.args) == 5 and record.args[4] == 200 and record.args[2] == "/offers?api_key=***"


@pytest.mark.parametrize("name", redaction.THIRD_PARTY_LOGGERS)
def test_the_libraries_loggers_are_filtered_too(name: str, caplog) -> None:
    redaction.learn(API_KEY)
    caplog.set_level(logging.DEBUG, logger=name)
    logging.getLogger(name).warning("request to %s failed: %r", f"https://x.test/?key={API_KEY}", ValueError(API_KEY))
    [record] = [r for r in caplog.records if r.name == name]
    assert API_KEY not in record.getMessage() and "key=***" in record.getMessage()


def test_a_record_with_unusual_arguments_is_formatted_then_redacted(caplog) -> None:
    redaction.learn(API_KEY)
    caplog.set_level(logging.INFO)
    get_logger("gpuprice.test.args").info("%d offers, %s", 3, {"api_key": API_KEY})
    [record] = [r for r in caplog.records if r.name == "gpuprice.test.args"]
    assert record.getMessage() == "3 offers, {'api_key': '***'}"


def test_every_logger_in_the_code_comes_from_get_logger() -> None:
    """A filter on a parent logger never sees its children's records, so a logger made with
    logging.getLogger would log unredacted."""
    offenders = [
        str(path.relative_to(PROJECT))
        for folder in ("api", "collectors", "pricedb")
        for path in (PROJECT / folder).rglob("*.py")
        if re.search(r"logging\.getLogger\(", path.read_text()) and path.name != "redact.py"
    ]
    assert offenders == []


# ----- the texts that leave: HTTP errors and run records --------------------------------------------
URL = "https://api.example.test/v1/things"


def test_an_http_error_says_status_url_and_the_providers_words_never_the_echoed_key(settings) -> None:
    keyed = settings.model_copy(update={"runpod_api_key": SecretStr(API_KEY)})
    echo = (
        '{"error": {"code": "unauthorized", "message": "bad key"}, "request": {"url": "'
        + URL
        + f'?api_key={API_KEY}", "headers": {{"Authorization": "Bearer {API_KEY}"}}}}}}'
    )

    async def go() -> None:
        async with make_client(keyed) as client:
            await Http(client, "runpod", keyed).get(URL, params={"api_key": API_KEY})

    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(URL).mock(return_value=httpx.Response(401, text=echo))
        with pytest.raises(FetchError) as caught:
            asyncio.run(go())
    assert str(caught.value) == f"HTTP 401 from {URL}: unauthorized: bad key"
    assert caught.value.body is not None and API_KEY not in caught.value.body
    assert caught.value.url == URL


def test_an_error_body_that_is_no_document_gives_a_short_excerpt_without_tags(settings) -> None:
    page = "<html><body><h1>Access Denied</h1>" + "<p>padding</p>" * 200 + "</body></html>"

    async def go() -> None:
        async with make_client(settings) as client:
            await Http(client, "x", settings).get(URL)

    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(URL).mock(return_value=httpx.Response(403, text=page))
        with pytest.raises(FetchError) as caught:
            asyncio.run(go())
    message = str(caught.value)
    assert message.startswith(f"HTTP 403 from {URL}: Access Denied padding") and len(message) < 250


def test_a_run_record_is_redacted_before_anyone_reads_it() -> None:
    redaction.learn(API_KEY)
    quote = make_quote(notes=f"k {API_KEY}").model_copy(
        update={"source_url": f"https://api.example.test/p?filter=a100&api_key={API_KEY}"}
    )
    record = RunRecord(
        provider="runpod", scope="all", pricings=frozenset(), started_at=NOW, finished_at=NOW,
        status=RunStatus.FAILED, offline=False, stale_after_minutes=60,
        error=f"HTTP 401 from https://api.example.test/p?api_key={API_KEY}: Bearer {API_KEY}",
        notes=[f"spot not collected: {API_KEY}"], rejected=[{"offer": "x", "reason": API_KEY}], quotes=[quote],
    )  # fmt: skip
    assert record.error == f"HTTP 401 from https://api.example.test/p: Bearer {MASK}"
    assert record.notes == [f"spot not collected: {MASK}"] and record.rejected == [{"offer": "x", "reason": MASK}]
    assert record.quotes[0].source_url == f"https://api.example.test/p?filter=a100&api_key={MASK}"
    assert record.quotes[0].notes == f"k {MASK}"
