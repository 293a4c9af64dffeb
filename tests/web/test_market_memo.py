"""The market page written fast (the answer as built, cells and filter choices kept while the offers
stay the same, or written ahead when they landed) is byte for byte the plain rendering (the
answer's bytes parsed, every row written afresh), for views that share cells with earlier ones and
views that do not; and the cell memo keeps a cell only for the row it was written from, within
its bound."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import re
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

import pytest
from fastapi.testclient import TestClient

from api.answers import offer_json, offer_rows, offers_result
from api.app import create_app
from api.byte_cache import ByteLRU
from api.limits import limits_of
from api.offer_rows import ROW_BYTES, OfferRows
from api.query import OffersParams
from api.state import AppState
from api.web import market as market_module
from api.web.cell_memo import CellMemo, offer_key
from api.web.html import Page
from api.web.i18n import LANGUAGES
from api.web.market import cell_memo, current_numbering, market, observed_values, sort_rows, sort_rows_fast
from api.web.money import CNY
from api.web.pages import market_page
from api.web.row_head import HEAD
from api.web.table import LISTED, raw_value
from api.web.warm import EVERY_WAY_BYTES, keep_warm, warm_market
from pricedb.models import Pricing, RunStatus
from pricedb.queries import CurrentOffers
from tests.helpers import freeze_survivors, make_run
from tests.web.conftest import WebRound, open_copy, quote_of

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
        ("en", [("sort", "provider"), ("gpu", "A100,H100")], False),  # sorted here from the answer in default order
        ("en", [("sort", "cny_per_hour"), ("desc", "true"), ("limit", "5"), ("offset", "5")], False),  # a page of it
        ("zh", [("sort", "observed_at"), ("desc", "true")], False),  # by the offers' moments (to the microsecond)
        ("en", [("sort", "list_price"), ("desc", "true"), ("include_stale", "true")], False),  # values missing
        ("zh", [("sort", "price_steps"), ("cols", "provider,sku,price_steps")], False),  # lists
        ("en", [("cur", "EUR"), ("cols", EVERY_COLUMN), ("sort", "observed_at")], False),
        ("en", [("cur", "EUR"), ("cols", EVERY_COLUMN), ("mem_gpu", "80GB")], False),
        ("en", [("mem_gpu", "80GB"), ("sort", "price"), ("desc", "true")], False),  # narrowed, then sorted here
        ("en", [("min_total", "80GB"), ("sort", "observed_at")], False),  # sorted here by the offers' moments
        ("en", [("cols", "provider,sku,price,price_steps,notes")], False),
        ("en", [("lang", "en")], True),  # links name the language
        ("zh", [], False),
        ("zh", [("cur", "INR"), ("min_total", "160GB")], False),
        ("en", [("date", web.digest_day.isoformat())], False),  # another day's market: other rows
        ("en", [("date", web.digest_day.isoformat()), ("sort", "observed_at")], False),  # sorted by the API
        ("en", [("date", web.digest_day.isoformat()), ("sort", "price"), ("desc", "true")], False),
        ("en", [("date", web.digest_day.isoformat()), ("cols", EVERY_COLUMN)], False),  # notes as text, prices exact
        ("en", [], False),  # and today's again
        ("en", [("sort", "nope")], False),  # refused: the page says so, with every row
        ("en", [("provider", "nowhere")], False),  # refused by the API: no rows at all
    ]


def test_the_fast_page_is_the_plain_rendering(state: AppState, web_round: WebRound) -> None:
    kept_rows = 0  # rows shown, each from kept cells the second time round
    for lang, items, named in views(web_round) * 2:  # the second time round, every row is kept
        page = Page("/", items, lang, named)
        fast, fast_status = market_page(state, page)
        plain, plain_status = market_page(state, page, fast=False)
        assert (fast_status, fast.body) == (plain_status, plain.body), (lang, items)
        kept_rows += fast.body.partition(b"<tbody>")[2].partition(b"</tbody>")[0].count(b"<tr")
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


def test_the_page_after_the_warm_up_is_the_plain_rendering(state: AppState, web_round: WebRound) -> None:
    """Written ahead when data lands (every offer's cells, every way), views are still the plain
    rendering, and the first visit's page is kept already."""
    warm_market(state)
    for lang in ("en", "zh"):
        first_visit = Page("/", [], lang, False)
        kept, _ = state.cached_value(first_visit.cache_key, refuse_to_build)
        assert kept.body == market_page(state, first_visit, fast=False)[0].body
    for lang, items, named in views(web_round):
        page = Page("/", items, lang, named)
        fast, fast_status = market_page(state, page)
        plain, plain_status = market_page(state, page, fast=False)
        assert (fast_status, fast.body) == (plain_status, plain.body), (lang, items)
    zh_usd = Page("/", [("cur", "USD"), ("lang", "zh"), ("cols", EVERY_COLUMN)], "zh", True)
    assert market_page(state, zh_usd)[0].body == market_page(state, zh_usd, fast=False)[0].body


def test_the_warm_up_lists_the_notes_and_sources_of_the_first_visits_rows(state: AppState) -> None:
    """Every view of the first visit's rows that shows notes or sources (every column, another
    currency or language) takes their lists below the table as the warm-up wrote them, the lists
    the plain rendering writes."""
    every_column = Page("/", [("cur", "USD"), ("cols", EVERY_COLUMN), ("sort", "region")], "zh", False)
    assert market(state, every_column).listed_items == {}  # nothing listed before the warm-up
    warm_market(state)
    found = market(state, every_column)
    assert set(found.listed_items) == set(LISTED) and all(found.listed_items.values())  # before this view lists
    assert found.lists_html() == market(state, every_column, fast=False).lists_html()


def test_the_warm_up_ends_by_collecting_the_objects_it_made(state: AppState) -> None:
    """The warm-up's young objects are collected in its own thread, so the next view's first few
    hundred objects do not trigger a collection of them (ms of the first view after a run)."""
    collected: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        warm_market(state)
        young = gc.get_count()
    finally:
        gc.callbacks.remove(seen)
    assert collected and collected[-1] >= 1  # the last collection took generation 1 (and 0) with it
    assert young[1] == 0  # no collection of generation 0 since: the next one will not take generation 1


def test_a_warm_up_over_more_offers_than_the_memo_holds_keeps_the_first_visits_cells(
    web_round: WebRound, tmp_path: Path
) -> None:
    """Every way of every offer would not fit a small answer cache's cell memo: the warm-up keeps the
    first visit's pages and the cells they wrote, and writes no other currency's (which would evict
    them and take the memo past its share, so the cache drops it)."""
    settings, store = open_copy(web_round, tmp_path)
    settings = settings.model_copy(update={"answer_cache_mb": 8.0})
    today = web_round.now.date()
    with limits_of(settings):
        small = AppState(store, settings, clock=lambda: web_round.now)
        memo, _ = cell_memo(small, None, today)
        assert len(small.current().offers) * EVERY_WAY_BYTES > memo.max_bytes, "the web round fits: shrink the cache"
        warm_market(small)
        kept_memo = small.cached_value(("market_cells", None, today), refuse_to_build)
        currencies = {way[2] for way in kept_memo._ways if way[0] != HEAD}  # not the rows' heads' parts
        assert currencies == {CNY, None}, currencies
        assert kept_memo.cache_size <= kept_memo.max_bytes
        for lang in ("en", "zh"):
            first_visit = Page("/", [], lang, False)
            kept, _ = small.cached_value(first_visit.cache_key, refuse_to_build)
            assert kept.body == market_page(small, first_visit, fast=False)[0].body
    store.close()


def refuse_to_build(_: object) -> NoReturn:
    raise AssertionError("built on demand: the warm-up should have kept it")


def test_new_data_is_warmed_by_the_lifespan_task(state: AppState, web_round: WebRound) -> None:
    """The app's task warms the page at start, then again once a run lands (the offers reloaded
    in its worker thread), with nothing asked in between."""
    first_visit = Page("/", [], "en", False)

    async def warmed_after(change: Callable[[], object]) -> CurrentOffers:
        before = state.fresh_current()
        change()
        for _ in range(500):
            current = state.fresh_current()
            if current is not None and current is not before:
                with contextlib.suppress(AssertionError):
                    state.cached_value(first_visit.cache_key, refuse_to_build)
                    return current
            await asyncio.sleep(0.01)
        raise AssertionError("not warmed within 5 s")

    async def scenario() -> None:
        task = asyncio.create_task(keep_warm(state, every_s=0.01))
        try:
            started = await warmed_after(lambda: None)
            failed = make_run(
                "manual", [], status=RunStatus.FAILED, error="timed out", finished_at=web_round_now(web_round)
            )
            landed = await warmed_after(lambda: state.store.record_run(failed))
            assert landed is not started  # the offers loaded again (the failed run holds its quotes as stale)
        finally:
            task.cancel()

    asyncio.run(scenario())


def web_round_now(web: WebRound) -> datetime:
    return web.now.replace(tzinfo=UTC)


ROWS = [
    {"provider": "aws", "region": "us-east-1", "sku": "p4d", "pricing": "spot", "price": 1.5},
    {"provider": "azure", "region": "eastus", "sku": "nd96", "pricing": "on_demand", "price": 2.5},
]


def test_the_cell_memo_keeps_each_way_once_within_its_bound_and_only_for_its_row() -> None:
    written: list[tuple[str, list[float]]] = []

    def writer(way: str) -> Callable[[list[dict[str, Any]]], list[str]]:
        def write(rows: list[dict[str, Any]]) -> list[str]:
            written.append((way, [r["price"] for r in rows]))
            return [f"<td>{way}{r['price']}</td>" for r in rows]

        return write

    memo = CellMemo(max_bytes=4000)
    places = memo.places([offer_key(r) for r in ROWS], ROWS)
    assert list(memo.cells(("a",), places, ROWS, writer("a"))) == [b"<td>a1.5</td>", b"<td>a2.5</td>"]
    assert list(memo.cells(("a",), places, ROWS, writer("a"))) == [b"<td>a1.5</td>", b"<td>a2.5</td>"]
    assert written == [("a", [1.5, 2.5])]  # the second time from the memo
    assert memo.ranks(places) == [0, 1] and memo.ranks(memo.places([offer_key(ROWS[1])], ROWS[1:])) == [0]

    changed = [ROWS[0], {**ROWS[1], "price": 3.0}]  # other data under the same offer key
    cells = memo.cells(("a",), memo.places([offer_key(r) for r in changed], changed), changed, writer("a"))
    assert list(cells) == [b"<td>a1.5</td>", b"<td>a3.0</td>"] and written[-1] == ("a", [3.0])
    equal = [dict(row) for row in changed]  # equal rows (another day's answer of the same data): kept
    assert list(memo.cells(("a",), memo.places([offer_key(r) for r in equal], equal), equal, writer("a"))) == cells

    ways_before = len(written)
    for way in "bcdefghijklmnopq":  # more ways than 4,000 bytes hold: the least recently used go
        memo.cells((way,), places, changed, writer(way))
        assert memo.cache_size <= 4000
    memo.cells(("a",), places, changed, writer("a"))
    assert written[-1] == ("a", [1.5, 3.0]) and len(written) == ways_before + 17  # "a" was forgotten


def test_the_fast_sort_is_the_plain_sort_on_every_column(state: AppState) -> None:
    found = market(state, Page("/", [("include_stale", "true"), ("include_unavailable", "true")], "en", False))
    assert len(found.rows) > 20 and any(row.get("list_price") is None for row in found.rows)
    for column in found.columns:  # values missing, repeated, lists, derived
        for desc in (False, True):
            expected = sort_rows(found.rows, column.key, desc)
            assert sort_rows_fast(found.rows, column.key, desc) == expected, (column.key, desc)


def test_the_cell_memo_knows_which_fields_no_row_has() -> None:
    memo = CellMemo(max_bytes=10_000)
    rows = [{**ROWS[0], "list_price": None, "notes": None}, {**ROWS[1], "list_price": None, "notes": "spot"}]
    memo.places([offer_key(r) for r in rows], rows)
    assert memo.absent(["list_price", "notes", "price", "total_gb"]) == {"list_price"}  # total_gb: not a field
    priced = [{**rows[0], "list_price": 2.0}]  # the same offer with other data: it has one now
    memo.places([offer_key(r) for r in priced], priced)
    assert memo.absent(["list_price", "notes"]) == frozenset()


def test_the_cell_memo_keeps_rows_joined_for_a_set_of_ways_and_forgets_them_first() -> None:
    written: list[str] = []

    def writer(way: str) -> Callable[[list[dict[str, Any]]], list[str]]:
        def write(rows: list[dict[str, Any]]) -> list[str]:
            written.append(way)
            return [f"<td>{way}{r['price']}</td>" for r in rows]

        return write

    memo = CellMemo(max_bytes=6000)
    places = memo.places(None, ROWS)  # new rows: found by their keys, then by identity
    assert memo.places(None, ROWS).at == places.at == memo.places([offer_key(r) for r in ROWS], ROWS).at
    joined = memo.rows([("a",), ("b",)], places, ROWS, [writer("a"), writer("b")])
    assert list(joined) == [b"<td>a1.5</td><td>b1.5</td>", b"<td>a2.5</td><td>b2.5</td>"]
    one = memo.places(None, ROWS[1:])
    assert list(memo.rows([("a",), ("b",)], one, ROWS[1:], [writer("x"), writer("x")])) == [joined[1]]
    assert written == ["a", "b"]  # the second time joined already
    assert memo.starts(memo.ranks(places)) == [b'<tr data-k="0"', b'<tr data-k="1"']

    changed = [ROWS[0], {**ROWS[1], "price": 3.0}]  # other data under the same offer key: written again
    again = memo.rows([("a",), ("b",)], memo.places(None, changed), changed, [writer("a"), writer("b")])
    assert list(again) == [joined[0], b"<td>a3.0</td><td>b3.0</td>"] and written[-2:] == ["a", "b"]

    before = memo.cache_size
    memo.rows([("b",), ("a",)], places, changed, [writer("b"), writer("a")])  # another set: from the cells
    assert memo.cache_size > before and written[-2:] == ["a", "b"]
    for way in "cdefghijklmnopqrstuvwxyz":  # more ways than the bound holds: joined rows go first
        memo.cells((way,), places, changed, writer(way))
        assert memo.cache_size <= 6000
    assert len(memo._joined) <= 1 and ("a",) not in memo._ways


def test_rows_joined_from_cells_written_for_every_offer_are_those_joined_from_the_view_s_cells() -> None:
    """Once every place's cells are written in every way of a set (as after the warm-up), the first
    view of the set joins every place's row from the ways' lists in place order: the same rows, in
    the view's order, charged as the view's own cells joined would be."""

    def write(way: str) -> Callable[[list[dict[str, Any]]], list[str]]:
        return lambda rows: [f"<td>{way}{r['price']}</td>" for r in rows]

    ways, writers = [("a",), ("b",)], [write("a"), write("b")]
    ready, plain = CellMemo(max_bytes=100_000), CellMemo(max_bytes=100_000)
    for memo in (ready, plain):
        memo.places(None, ROWS)
    for way, writer in zip(ways, writers, strict=True):
        ready.cells(way, ready.places(None, ROWS), ROWS, writer)
    refused = [lambda rows: pytest.fail("a cell written again"), lambda rows: pytest.fail("a cell written again")]
    first = ready.rows(ways, ready.places(None, ROWS[1:]), ROWS[1:], refused)  # one offer of two
    assert list(first) == [b"<td>a2.5</td><td>b2.5</td>"]
    assert ready._joined[tuple(ways)].filled == len(ROWS)  # every place's row joined, not only the view's
    shown = ROWS[::-1]  # another order than the places'
    joined = ready.rows(ways, ready.places(None, shown), shown, refused)
    assert list(joined) == list(plain.rows(ways, plain.places(None, shown), shown, writers))
    assert list(joined) == [b"<td>a2.5</td><td>b2.5</td>", b"<td>a1.5</td><td>b1.5</td>"]
    assert ready.cache_size == plain.cache_size

    more = [*ROWS, {**ROWS[0], "sku": "p5"}, {**ROWS[0], "sku": "p6"}]
    for way, writer in zip(ways, writers, strict=True):
        ready.cells(way, ready.places(None, more), more, writer)
    ready.rows([("b",), ("a",)], ready.places(None, more[:1]), more[:1], writers[::-1])  # a quarter of the offers
    assert ready._joined[(("b",), ("a",))].filled == 1  # only the view's own row joined


def test_sorted_by_observation_the_page_orders_offers_as_their_moments_do(state: AppState, web_round: WebRound) -> None:
    """Rows write `observed_at` to the second; offers observed within one second are ordered by
    their microseconds, as `/offers` orders them, not by their offer keys."""
    current = state.current()
    manual = sorted((o for o in current.offers if o.provider == "manual"), key=lambda o: o.key)
    assert len(manual) >= 3
    at = web_round_now(web_round) - timedelta(minutes=30)
    pricings = frozenset(Pricing(o.pricing) for o in manual)
    quotes = [quote_of(o, o.price, at + timedelta(microseconds=900 - 100 * i)) for i, o in enumerate(manual)]
    state.store.record_run(make_run("manual", quotes, finished_at=at + timedelta(seconds=1), pricings=pricings))
    for desc in ("false", "true"):
        page = Page("/", [("sort", "observed_at"), ("desc", desc), ("provider", "manual")], "en", False)
        fast, plain = market_page(state, page)[0].body, market_page(state, page, fast=False)[0].body
        assert fast == plain
        rows = market(state, page).rows
        assert [r["sku"] for r in rows] != [r["sku"] for r in sort_rows(rows, "observed_at", desc == "true")]
        assert [(r["provider"], r["region"], r["sku"], r["pricing"]) for r in rows] == [
            o.key for o in (manual if desc == "true" else manual[::-1])
        ]


def test_the_answer_cache_keeps_the_cell_memo_up_to_its_own_share() -> None:
    """An answer over an eighth of the cache is not kept, but the cell memo bounds itself to a
    fifth and is kept up to that (every way of 2,000 offers and their joined rows need more than an
    eighth of the default cache: dropped, every view after it would write every cell again)."""
    cache = ByteLRU(80_000)
    memo = CellMemo(max_bytes=80_000 // CellMemo.CACHE_SHARE - 1000)
    places = memo.places(None, ROWS)
    memo.rows([("a",)], places, ROWS, [lambda rows: ["<td>" + "x" * 5000 + f"{r['price']}</td>" for r in rows]])
    assert 80_000 // 8 < memo.cache_size <= memo.max_bytes
    assert cache.put("memo", memo) and cache.get("memo") is memo
    assert not cache.put("answer", b"x" * memo.cache_size) and cache.get("answer") is None


def test_an_answer_asked_for_while_another_thread_builds_it_is_that_build(state: AppState) -> None:
    """A visitor arriving while the warm-up writes the page waits for it instead of writing it too."""
    started, release, builds = threading.Event(), threading.Event(), []

    def slow_build(_: CurrentOffers) -> object:
        builds.append(threading.get_ident())
        started.set()
        assert release.wait(10)
        return object()

    got: list[object] = []
    builder = threading.Thread(target=lambda: got.append(state.cached_value(("slow",), slow_build)))
    builder.start()
    assert started.wait(10)
    waiter = threading.Thread(target=lambda: got.append(state.cached_value(("slow",), slow_build)))
    waiter.start()
    release.set()
    builder.join(10)
    waiter.join(10)
    assert len(builds) == 1 and len(got) == 2 and got[0] is got[1]

    started.clear()
    release.clear()
    builder = threading.Thread(target=lambda: state.cached_value(("slow", 2), slow_build))
    builder.start()
    assert started.wait(10)

    async def on_the_loop() -> object:  # the event loop never waits for a thread: it builds its own
        return state.cached_value(("slow", 2), lambda _: "the loop's")

    assert asyncio.run(on_the_loop()) == "the loop's"
    release.set()
    builder.join(10)

    def failing(_: CurrentOffers) -> NoReturn:
        raise RuntimeError("store gone")

    with pytest.raises(RuntimeError):  # a failed build is not kept: the next asker builds again
        state.cached_value(("failing",), failing)
    assert state.cached_value(("failing",), lambda _: "built") == "built"


def test_a_visit_during_the_warm_up_shares_its_work(state: AppState, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first visit's page asked for while the warm-up writes it is the warm-up's page, written once."""
    import api.web.warm as warm

    written: list[int] = []
    real = warm.market_page

    def counted(state: AppState, page: Page, fast: bool = True) -> Any:
        written.append(threading.get_ident())
        time.sleep(0.05)  # long enough for the visit to come while it is being written
        return real(state, page, fast)

    monkeypatch.setattr(warm, "market_page", counted)
    warming = threading.Thread(target=warm_market, args=(state,))
    warming.start()
    for _ in range(500):
        if written:
            break
        time.sleep(0.01)
    first_visit = Page("/", [], LANGUAGES[len(written) - 1], False)  # the page being written now
    visit = state.cached_value(first_visit.cache_key, refuse_to_build)
    warming.join(30)
    assert visit == market_page(state, first_visit, fast=False)
    assert len(written) == 2 and set(written) == {warming.ident}


def test_an_app_told_to_warm_writes_the_market_page_ahead_without_a_scheduler(
    web_round: WebRound, tmp_path: Path
) -> None:
    settings, store = open_copy(web_round, tmp_path)
    app = create_app(settings, store=store, schedule=False, warm=True)
    first_visit = Page("/", [], "zh", False)
    try:
        with TestClient(app):
            for _ in range(1000):
                with contextlib.suppress(AssertionError):
                    app.state.gpuprice.cached_value(first_visit.cache_key, refuse_to_build)
                    break
                time.sleep(0.01)
            else:
                raise AssertionError("not written ahead within 10 s")
    finally:
        store.close()


def test_the_cell_memo_knows_which_fields_hold_values_of_one_kind() -> None:
    """A column's kind comes from the first value of a view's rows; it is kept across sorts only
    for fields whose values are of one kind in every row (here `term` is a number in one row and
    text in another, so its kind depends on which row comes first)."""
    memo = CellMemo(max_bytes=10_000)
    rows = [{**ROWS[0], "gpus": 8, "term": 12, "note": None}, {**ROWS[1], "gpus": 4.0, "term": "1y", "note": "x"}]
    memo.places(None, rows)
    assert memo.one_kind(["gpus", "term", "note", "price", "total_gb"]) == {"gpus", "note", "price"}


def test_the_current_prices_are_ranked_and_notes_numbered_in_their_order(state: AppState) -> None:
    """Equal prices share a rank, a higher price has a higher one (the page sorts by them as the
    server sorts by the prices), list prices ranked among them alike; notes and sources are
    numbered in their texts' order from 1."""
    current = state.current()
    numbering = current_numbering(current)
    assert numbering is current_numbering(current)  # once per set of current offers
    assert "offer_json" not in current.derived  # read from the offers: no row made for every offer
    prices = [o.price for o in current.offers]
    list_prices = [o.list_price for o in current.offers if o.list_price is not None]
    assert numbering.prices is not None  # the web round has a price beyond six decimals
    assert any(raw_value(price) for price in prices) and list_prices
    prices += list_prices
    for a in prices[:50] + list_prices[:50]:
        for b in prices:
            assert (numbering.prices[a] < numbering.prices[b]) == (a < b)
            assert (numbering.prices[a] == numbering.prices[b]) == (a == b)
    for key, texts in (
        ("notes", {o.notes for o in current.offers}),
        ("source_url", {o.source_url for o in current.offers}),
    ):
        places = numbering.listed[key].places
        assert list(places) == sorted(texts - {None, ""}) and list(places.values()) == list(range(1, len(places) + 1))
    page, _ = market_page(state, Page("/", [("cols", "provider,sku,price,notes"), ("sort", "price")], "en", False))
    ranks = [int(rank) for rank in re.findall(rb"<td data-v=(\d+)>[0-9.]+ [A-Z]{3}/", page.body)]
    assert len(ranks) == page.body.count(b"<tr data-k=") and ranks == sorted(ranks)


def test_the_offers_rows_are_kept_within_their_bound(state: AppState) -> None:
    """The current offers' JSON rows are kept least recently used first out within their bound; a row
    gone out is written again equal to the first, and only rows kept know their offer's moment."""
    offers = state.current().offers
    assert len(offers) >= 8
    rows = OfferRows(3 * ROW_BYTES, offer_json)
    first = rows.rows(offers[:5])
    assert first == [offer_json(o) for o in offers[:5]] and len(rows) == 3 and rows.bytes == 3 * ROW_BYTES
    assert rows.moments(first) == [None, None, *(o.observed_at for o in offers[2:5])]
    again = rows.rows(offers[:2])  # gone out: written again, equal; the two oldest kept go out for them
    assert again == first[:2] and again[0] is not first[0]
    assert rows.moments([*first, *again]) == [
        None,
        None,
        None,
        None,
        offers[4].observed_at,
        *(o.observed_at for o in offers[:2]),
    ]
    assert rows.rows(offers[4:5])[0] is first[4]  # kept: the same row


def test_views_over_a_tiny_bound_of_offer_rows_are_the_plain_rendering(state: AppState, web_round: WebRound) -> None:
    """With room for a few rows only (rows written again, moments unknown: the API sorts by them),
    every view is still the plain rendering."""
    state.current().derived["offer_json"] = OfferRows(3 * ROW_BYTES, offer_json)
    for lang, items, named in views(web_round):
        page = Page("/", items, lang, named)
        fast, fast_status = market_page(state, page)
        plain, plain_status = market_page(state, page, fast=False)
        assert (fast_status, fast.body) == (plain_status, plain.body), (lang, items)
    assert len(offer_rows(state.current(), state.settings)) == 3


def test_sorting_by_moment_writes_rows_only_for_the_offers_shown(state: AppState) -> None:
    """The page sorted by observation reads each shown row's moment from the rows kept: no JSON row
    for an offer it does not show (it made one for every current offer: 54 MB at 50,000), and the
    order is the plain sort of the offers by their exact moments, as `/offers` sorts them."""
    current = state.current()
    page = Page("/", [("sort", "observed_at"), ("provider", "aws,azure")], "en", False)
    shown = market(state, page).rows
    assert 0 < len(shown) < len(current.offers)
    assert len(offer_rows(current, state.settings)) == len(shown)
    by_key = {o.key: o for o in current.offers}
    plain = sorted((by_key[offer_key(row)] for row in shown), key=lambda o: (o.observed_at, o.key))
    assert [offer_key(row) for row in shown] == [o.key for o in plain]
    assert observed_values(state, shown) == [o.observed_at for o in plain]


def test_a_past_days_answer_is_charged_what_its_rows_hold(state: AppState, web_round: WebRound) -> None:
    """A past day's `/offers` answer keeps rows of its own beside its bytes (the current offers' rows
    are kept once, api.offer_rows): the answer cache charges them, between 1× and 2× of what the
    answer allocates; the current market's answer is charged as its bytes."""
    params = OffersParams.model_validate({"date": web_round.digest_day.isoformat(), "include_stale": "true"})
    offers_result(state, params)  # what building it once allocates for good (market states, …)
    state.cached_bytes()
    with state._lock:
        state._answers.clear()
    freeze_survivors()
    tracemalloc.start()
    try:
        answer = offers_result(state, params)
        gc.collect()
        allocated = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(answer.payload["offers"]) >= 5
    assert allocated <= answer.cache_size <= 2 * allocated
    assert answer.cache_size > 2 * len(answer.body)
    today = offers_result(state, OffersParams())
    assert today.cache_size == len(today.body)


@pytest.mark.parametrize("fast", [True, False])
def test_a_view_built_while_data_lands_is_of_one_set_of_offers(
    state: AppState, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """Data lands (every price changes) after the view read its `/offers` answer and before it numbered
    the prices: the page is the new data's, every price cell's `data-v` its rank (none an exact value
    of the offers before, which a sort in place would misplace among the ranks)."""
    page = Page("/", [("cols", "provider,region,sku,pricing,price,notes")], "en", False)
    warm_market(state)
    landed: list[int] = []

    def landing(step: Callable[..., Any]) -> Callable[..., Any]:
        """`step` of building the view after the data landed, the first time a view takes it."""

        def step_as_data_lands(*args: Any) -> Any:
            if not landed:
                landed.append(state.store.version)
                state.store.write_with(lambda cur: cur.execute("UPDATE offers SET price = price * 1.5 + 0.0001"))
            return step(*args)

        return step_as_data_lands

    with monkeypatch.context() as patched:  # the steps after the answer is read: fast, then plain
        patched.setattr(market_module, "cell_memo", landing(market_module.cell_memo))
        patched.setattr(market_module, "narrowed", landing(market_module.narrowed))
        shown = market_page(state, page, fast)[0].body.decode()
    assert landed and state.store.version != landed[0]
    assert shown == market_page(state, page, fast=False)[0].body.decode()
    prices = re.findall(r"<td data-v=([^>]*)>[0-9.]+ [A-Z]{3}/", shown)
    assert prices and all(value.isdigit() for value in prices)
