"""The market page written fast (the answer as built, rows and filter choices kept while the offers
stay the same) is byte for byte the plain rendering (the answer's bytes parsed, every row written
afresh), for views that share rows with earlier ones and views that do not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.answers import offers_result
from api.limits import limits_of
from api.query import OffersParams
from api.state import AppState
from api.web.html import Page
from api.web.pages import market_page
from tests.web.conftest import WebRound, open_copy

EVERY_COLUMN = (
    "provider,region,sku,gpu_model,gpu_memory_gb,gpu_count,total_gb,pricing,price,currency,unit,cny_per_hour,"
    "cny_per_gpu_hour,cny_per_gb_hour,availability,observed_at,stale,held_reason,source_url,fx_date,fx_rate,"
    "list_price,tax_included,billing_increment_s,price_steps,notes,fx_note,offline,run_id"
)


@pytest.fixture
def state(web_round: WebRound, tmp_path: Path) -> Iterator[AppState]:
    settings, store = open_copy(web_round, tmp_path)
    with limits_of(settings):
        yield AppState(store, settings, clock=lambda: web_round.now)
    store.close()


def views(web: WebRound) -> list[tuple[str, list[tuple[str, str]], bool]]:
    """(language, query, whether the URL names the language): one after another, so later views
    reuse the rows earlier ones wrote (same columns, currency and language), and some cannot."""
    return [
        ("en", [], False),
        ("en", [("sort", "region"), ("desc", "true")], False),  # the same rows, another order
        ("en", [("provider", "aws,azure"), ("include_stale", "true")], False),  # fewer rows, more rows
        ("en", [("cur", "USD"), ("sort", "total_gb")], False),
        ("en", [("cur", "USD"), ("sort", "region")], False),
        ("en", [("cur", "native"), ("sort", "price"), ("desc", "true")], False),
        ("en", [("cur", "EUR"), ("cols", EVERY_COLUMN), ("sort", "observed_at")], False),
        ("en", [("cur", "EUR"), ("cols", EVERY_COLUMN), ("mem_gpu", "80GB")], False),
        ("en", [("cols", "provider,sku,price,price_steps,notes")], False),
        ("en", [("lang", "en")], True),  # links name the language
        ("zh", [], False),
        ("zh", [("cur", "INR"), ("min_total", "160GB")], False),
        ("en", [("date", web.digest_day.isoformat())], False),  # another day's market: other rows
        ("en", [], False),  # and today's again
        ("en", [("sort", "nope")], False),  # refused: the page says so, with every row
        ("en", [("provider", "nowhere")], False),  # refused by the API: no rows at all
    ]


def test_the_fast_page_is_the_plain_rendering(state: AppState, web_round: WebRound) -> None:
    kept_rows = 0
    for lang, items, named in views(web_round) * 2:  # the second time round, every row is kept
        page = Page("/", items, lang, named)
        fast, fast_status = market_page(state, page)
        plain, plain_status = market_page(state, page, fast=False)
        assert (fast_status, fast.body) == (plain_status, plain.body), (lang, items)
        kept_rows += fast.body.count(b"<tr data-k=")
    assert kept_rows > 0 and state.cached_bytes() > 0  # the memo is charged to the answer cache


def test_the_answer_as_built_is_its_bytes_parsed(state: AppState) -> None:
    """The page reads the payload instead of parsing the bytes: the same values of the same types."""

    def typed(value: object) -> object:
        if isinstance(value, dict):
            return {k: typed(v) for k, v in value.items()}
        if isinstance(value, list):
            return [typed(v) for v in value]
        return (type(value).__name__, value)

    for query in ({}, {"include_stale": "true", "sort": "price", "desc": "true"}):
        answer = offers_result(state, OffersParams.model_validate(query))
        assert answer.payload["offers"]
        assert typed(answer.payload) == typed(json.loads(answer.body))
