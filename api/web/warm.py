"""The market page written before its first visitor: whenever the current offers change (a run
landed, a replica took a new snapshot, an offer turned stale), a worker thread loads them, renders
the page a browser's first visit asks for (`/` in each language, compressed in each encoding) and
writes every current offer's cells in every column, currency and language, and its row's head for
any columns shown, into the cell memo (api.web.cell_memo), and the lists of notes and sources below
the table of those rows. The first view of any columns, currency or language is then joined from
ready cells. Then it reads what history answers need at the new data version (api.history's layout
and the observations held since the compaction), so the first history question after a run does
not, and collects the objects it made (`settled`). Nothing of it runs on the event loop, which only
looks every second whether the offers changed (memory, no query)."""

from __future__ import annotations

import asyncio
import gc
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool

from api.answers import current_rows
from api.history import warm_history
from api.limits import limits_of
from api.state import AppState
from api.web.cell_memo import way_of
from api.web.html import COMPRESSORS, Page
from api.web.i18n import LANGUAGES, Words
from api.web.market import cell_memo, column_keys, current_numbering, market, write_cells
from api.web.money import CURRENCIES, rates_for
from api.web.offer_id import link_ids
from api.web.pages import Built, market_page
from api.web.row_head import every_head_part
from api.web.table import LISTED, columns_of
from pricedb.queries import CurrentOffers
from pricedb.redact import get_logger

log = get_logger("gpuprice.api")

CHECK_EVERY_S = 1.0
# What every way of one offer's cells (every column, currency and language) takes in the cell memo:
# 6.8 MB for 2,000 offers of every card (api.web.market.cell_memo).
EVERY_WAY_BYTES = 3_400
AFTER_FAILURE_S = 60.0  # a store that failed to load is tried again a minute later, not every second


def _every_encoding(built: Built) -> Built:
    """The page compressed ahead in each encoding, so the first visitor's request only sends it."""
    for encoding in COMPRESSORS:
        built[0].encoded_as(encoding)
    return built


def warm_market(state: AppState) -> CurrentOffers:
    """Load the current offers, keep the first visit's page in each language and, where the cell memo
    can hold them, write every current offer's cells every way the page can ask for; the offers warmed.
    Then the objects it made are collected (`settled`), so the first view after it does not."""
    try:
        return _warm_market(state)
    finally:
        settled()


def settled() -> None:
    """Collect the young generations of the garbage collector now, in this worker thread. The objects
    the warm-up made and keeps (the offers' rows, the memo's lists) wait in them for a collection that
    would otherwise come in the next view, whichever makes the next few hundred objects: 1.6 ms of the
    first all-columns view after a run landed, for 2,000 offers. After it, they are the oldest
    generation's, which Python collects only once it has grown by a quarter."""
    gc.collect(1)


def _warm_market(state: AppState) -> CurrentOffers:
    with limits_of(state.settings):
        current = state.current()
        links = partial(link_ids, state)  # the pages' offer links: as a visit's (api.routes.pages)
        for lang in LANGUAGES:
            page = Page("/", [], lang, lang_given=False, link_source=links)
            state.cached_value(page.cache_key, lambda _, page=page: _every_encoding(market_page(state, page)))
        today = state.clock().date()
        memo, refit = cell_memo(state, None, today)
        if len(current.offers) * EVERY_WAY_BYTES > memo.max_bytes:
            # They would not fit (50,000 offers: ~170 MB for a memo of 13 MB): writing them would only
            # evict the cells the first visit's pages just wrote and take the memo past its share of
            # the answer cache, which then drops it, after seconds of CPU (and 54 MB of rows).
            return current
        rows = current_rows(current, current.offers, state.settings)
        rates = rates_for(state.store.fx_table(), (row.get("fx_date") for row in rows), today)
        keys, written = column_keys(rows), set()
        places = memo.places(None, rows)
        numbering = current_numbering(current)
        for lang in LANGUAGES:
            columns = columns_of(rows, keys, Words(lang))
            for lang_given in (False, True):
                page = Page("/", [], lang, lang_given, link_source=links)
                for currency in CURRENCIES:
                    ways = {way_of(c, currency, lang, lang_given): c for c in columns}
                    todo = [c for way, c in ways.items() if way not in written]
                    write_cells(memo, places, page, currency, rates, todo, rows, numbering)
                    written.update(ways)
        for way, write in every_head_part():  # the rows' heads for any columns shown (row_head)
            memo.cells(way, places, rows, write)
        memo.ranks(places)  # every offer's rank in offer-key order, which views then only look up
        refit()
        list_ahead(state)
    return current


def list_ahead(state: AppState) -> None:
    """The first visit's rows' notes and sources listed below the table (table.LISTED), as every view
    of those rows showing them (every column, in any order, currency or language) takes them: ~1.5 ms
    of the first such view's, a few kilobytes kept with the rows."""
    page = Page("/", [("cols", ",".join(LISTED))], LANGUAGES[0], lang_given=False, link_source=partial(link_ids, state))
    market(state, page).lists_html()


def warm_all(state: AppState) -> CurrentOffers:
    """The market page (warm_market), then the history's held observations; a history that cannot be
    read ahead is read by its first question instead, and leaves the market warmed."""
    current = warm_market(state)
    try:
        warm_history(state)
    except Exception as exc:  # the store's fault: the history question reports it
        log.warning("history not read ahead: %s", exc)
    finally:
        settled()
    return current


async def keep_warm(state: AppState, every_s: float = CHECK_EVERY_S) -> None:
    """Warm the market page whenever the current offers are not the ones warmed last (a task of
    the app's lifespan; cancelled when it ends)."""
    warmed: Any = None
    while True:
        wait = every_s
        if warmed is None or state.fresh_current() is not warmed:
            try:
                warmed = await run_in_threadpool(warm_all, state)
            except Exception as exc:  # the store's fault: the answers report it; the pages are written on demand
                log.warning("market page not written ahead: %s", exc)
                warmed, wait = None, AFTER_FAILURE_S
        await asyncio.sleep(wait)
