"""The market page: `/offers`' answer as one table, with every filter, sorting on every column,
a currency switch, a column picker, and the same view as CSV or Markdown.

The rows are the `/offers` answer for the page's filters (api.answers.offers_answer, the bytes the
JSON route sends), so the table and `/offers?<same filters>` never disagree. Two filters the API
does not have yet, memory per GPU and total memory, narrow those rows further on the page. The
whole view lives in the URL: the API's parameters, then `cur` (currency), `cols` (columns shown),
`sort`/`desc` (any column; the API's own sort keys are passed to it), `mem_gpu`, `min_total`."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from html import escape
from itertools import chain
from operator import methodcaller
from typing import Annotated, Any, get_args

from markupsafe import Markup
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from api.answers import offer_rows, offers_answer, offers_result
from api.parsing import parse_bool, parse_mem_gb, split_list
from api.query import OffersParams, known_providers
from api.state import AppState
from api.web.cell_memo import OFFER_KEY, CellMemo, Places, Row, Way, offer_key, ranks_in_order, way_of
from api.web.html import Page, query_string, quoted, render
from api.web.i18n import Words
from api.web.money import CNY, CURRENCIES, SYMBOLS, parse_currency, rates_for
from api.web.params import Problems, given, is_list, parse
from api.web.row_head import cells_read, head_parts, row_heads
from api.web.table import (
    DERIVED,
    LISTED,
    Column,
    Listed,
    Numbering,
    Rates,
    column_cells,
    columns_of,
    csv_value,
    markdown_value,
    money_label,
    raw_value,
    samples_of,
    table_classes,
    worded,
)
from pricedb.models import Availability, Pricing
from pricedb.queries import CurrentOffers, Offer

DEFAULT_COLUMNS = (
    "provider", "region", "sku", "gpu_model", "gpu_memory_gb", "gpu_count", "pricing", "price",
    "cny_per_hour", "cny_per_gpu_hour", "cny_per_gb_hour", "availability", "observed_at",
)  # fmt: skip
API_SORTS = frozenset(get_args(OffersParams.model_fields["sort"].annotation))
DEFAULT_SORT = OffersParams.model_fields["sort"].default
# API sorts whose values a row holds as the offer does, so sorting rows orders them as `/offers`
# orders the offers. `observed_at` is written to the second (the offer keeps microseconds): the page
# sorts the current offers' rows by their offers' moments (`observed_values`), another day's not at all.
SORTED_HERE = API_SORTS - {"observed_at"}
ROWS = Markup("<!--rows-->")  # where the page's rows go (escaped text can never read so)
PAGE_ONLY = frozenset({"cur", "cols", "sort", "desc", "mem_gpu", "min_total", "lang"})


def _currency(text: Any) -> str:
    currency = parse_currency(None if text is None else str(text))
    if currency is None:
        raise ValueError(f"{text!r} is not one of {', '.join(CURRENCIES)}")
    return currency


def _sizes(text: Any) -> tuple[float, ...]:
    return tuple(parse_mem_gb(part) for part in split_list(text))


class MarketView(BaseModel):
    """How the page shows the rows (parameters of the page, not of the API)."""

    model_config = ConfigDict(extra="ignore")

    cur: Annotated[str, BeforeValidator(_currency)] = "CNY"
    cols: Annotated[tuple[str, ...], BeforeValidator(split_list)] = DEFAULT_COLUMNS
    sort: str = DEFAULT_SORT
    desc: Annotated[bool, BeforeValidator(lambda text: parse_bool(text, default=False))] = False
    mem_gpu: Annotated[tuple[float, ...], BeforeValidator(_sizes)] = Field(default_factory=tuple)
    min_total: Annotated[float | None, BeforeValidator(lambda t: parse_mem_gb(t) if t else None)] = None


@dataclass(frozen=True)
class HeaderCell:
    """A column's head: its label in the view's currency, its sort state and the link sorting by it
    (attributes, not a mapping: the template reads them without a failed attribute lookup each)."""

    column: Column
    label: str
    aria: str | None  # aria-sort of the column the view is sorted by
    href: str
    worded: str = ""  # a worded column's words and the values they stand for, as JSON (table.worded)


@dataclass
class Market:
    """Everything the market page, its CSV and its Markdown show."""

    page: Page
    view: MarketView
    params: OffersParams | None
    problems: Problems
    answer: dict[str, Any] = field(default_factory=dict)  # its rows maybe in another order than the page's
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)  # every column there is (the picker's)
    shown: list[Column] = field(default_factory=list)
    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    choices: dict[str, list[str]] = field(default_factory=dict)
    cells: CellMemo | None = None  # the cells written before (or when the data landed), by column and way
    refit: Callable[[], None] = lambda: None  # charge the memo to the answer cache again (it grows)
    places: Places | None = None  # the rows' places in the cell memo
    ranks: Sequence[int] | None = None  # fast: each row's rank among them in offer-key order (`data-k`)
    numbering: Numbering | None = None  # the current offers' notes and prices numbered (none for another day's)
    listed_items: dict[str, str] = field(default_factory=dict)  # the rows' listed texts' items, by column

    def offers_query(self) -> str:
        """The `/offers` query for the same filters (the page's JSON)."""
        skip = PAGE_ONLY if self.view.sort not in API_SORTS else PAGE_ONLY - {"sort", "desc"}
        return query_string((k, v) for k, v in self.page.items if k not in skip)

    def columns_cells(self, html: bool = False, rows: list[dict[str, Any]] | None = None) -> list[list[str]]:
        """Each shown column's cells, down the rows (or down `rows`)."""
        words, link, rows = self.page.words, self.page.offer_link, self.rows if rows is None else rows
        numbering = self.numbering
        return [
            column_cells(
                c, rows, words, self.view.cur, self.rates, link if c.key == "sku" else None, html, html, numbering
            )
            for c in self.shown
        ]

    def lists_html(self) -> Markup:
        """Each shown listed column's texts in the shown rows, each once, numbered, below the table
        (table.LISTED: the cells link to them)."""
        lists = []
        for column in self.shown:
            listed = self.numbering.listed.get(column.key) if self.numbering is not None else None
            if listed is None:
                continue
            items = self.listed_items.get(column.key)
            if items is None:  # the same in every order of these rows: kept with them (ViewRows)
                places = listed.places
                texts = set(map(methodcaller("get", column.key), self.rows))
                shown = sorted(places[t] for t in texts if t in places)
                items = self.listed_items[column.key] = "".join(map(listed.items.__getitem__, shown))
            if items:
                title = escape(self.page.words(column.key))
                lists.append(f'<section class="listed"><h2>{title}</h2><ol>{items}</ol></section>')
        return Markup("\n".join(lists))

    def table_rows(self) -> list[tuple[str, ...]]:
        """The shown cells' texts, row by row (what the CSV and the Markdown hold)."""
        return list(zip(*self.columns_cells(), strict=True)) if self.shown else [() for _ in self.rows]

    @property
    def keys_shown(self) -> bool:
        """Whether the view shows every field of the offer key, which the script then orders rows of
        equal values by, so a row needs no rank in offer-key order (`data-k`)."""
        return set(OFFER_KEY) <= {c.key for c in self.shown}

    def rows_html(self) -> list[bytes]:
        """The table's body as UTF-8 pieces to join, written a column at a time rather than through
        the template engine: thousands of rows, each a few formatted cells. Fast, each row's cells
        come joined from the cell memo (written when the data landed or for an earlier view) and
        only each row's place in offer-key order (`data-k`, where the view does not show the offer
        key) is the view's own; plain, every row is written."""
        if self.cells is None:
            keys = [offer_key(row) for row in self.rows]
            heads = row_heads(self.rows, cells_read({c.key for c in self.shown}))
            columns = self.columns_cells(html=True)
            starts = ["<tr"] * len(keys) if self.keys_shown else [f'<tr data-k="{k}"' for k in ranks_in_order(keys)]
            written = ["".join(row) for row in zip(starts, heads, *columns, strict=True)]
            return ["".join(written).encode()]
        places = self.places or self.cells.places(None, self.rows)
        ways, writers = cell_ways(self.page, self.view.cur, self.rates, self.shown, self.numbering)
        rows = self.cells.rows(ways, places, self.rows, writers)
        self.refit()
        if self.keys_shown:  # every row's start the same: put between the rows in one join
            return [b"<tr", b"<tr".join(rows)] if rows else []
        ranks = self.ranks if self.ranks is not None else self.cells.ranks(places)
        return list(chain.from_iterable(zip(self.cells.starts(ranks), rows, strict=True)))

    def header(self) -> list[HeaderCell]:
        words = self.page.words
        heads = []
        base = self.page.here(sort=None, desc=None)  # each column's link: this view sorted by it
        base += "&" if "?" in base else "?"
        for column in self.shown:
            sorted_here = column.key == self.view.sort
            desc = not self.view.desc if sorted_here else False  # a new column sorts ascending first
            heads.append(
                HeaderCell(
                    column,
                    money_label(column, self.view.cur, words) if column.kind == "money" else column.label,
                    ("descending" if self.view.desc else "ascending") if sorted_here else None,
                    f"{base}sort={quoted(column.key)}{'&desc=true' if desc else ''}",  # as query_string writes it
                    _worded_json(column, words),
                )
            )
        return heads

    def csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([h.label for h in self.header()])
        for cells in self.table_rows():
            writer.writerow([csv_value(c) for c in cells])
        return buffer.getvalue()

    def markdown(self) -> str:
        labels = [h.label.replace("|", "\\|") for h in self.header()]
        lines = [
            "| " + " | ".join(labels) + " |",
            "|" + "|".join("---:" if c.numeric else "---" for c in self.shown) + "|",
        ]
        lines += ["| " + " | ".join(markdown_value(c) for c in cells) + " |" for cells in self.table_rows()]
        return "\n".join(lines) + "\n"


Writer = Callable[[list[dict[str, Any]]], list[str]]


def _worded_json(column: Column, words: Words) -> str:
    found = worded(column, words)
    return json.dumps(found, ensure_ascii=False, separators=(",", ":")) if found else ""


def cell_ways(
    page: Page, currency: str, rates: Rates, shown: list[Column], numbering: Numbering | None
) -> tuple[list[Way], list[Writer]]:
    """The ways a row of the view is written in (its head's parts, then each shown column), each with how
    to write a way's cells of rows (for the cell memo; `numbering`: the memo's notes and prices numbered)."""
    words, link = page.words, page.offer_link
    heads = head_parts(cells_read({c.key for c in shown}))
    ways: list[Way] = [way for way, _ in heads]
    writers: list[Writer] = [write for _, write in heads]
    for c in shown:
        ways.append(way_of(c, currency, page.lang, page.lang_given))
        writers.append(
            lambda todo, c=c: column_cells(
                c, todo, words, currency, rates, link if c.key == "sku" else None, True, True, numbering
            )
        )
    return ways, writers


def write_cells(
    memo: CellMemo,
    places: Places,
    page: Page,
    currency: str,
    rates: Rates,
    shown: list[Column],
    rows: list[Row],
    numbering: Numbering | None,
) -> None:
    """Write into `memo` the heads of `rows` (at `places`) and each shown column's cells, where missing."""
    for way, write in zip(*cell_ways(page, currency, rates, shown, numbering), strict=True):
        memo.cells(way, places, rows, write)


def cell_memo(state: AppState, day: date | None, today: date) -> tuple[CellMemo, Callable[[], None]]:
    """The cell memo of a day's market (None: the current one), kept in the state's answer cache
    (which forgets it when the offers change) and bounded to a fifth of that cache, a share the
    cache lets it hold (every way of 2,000 offers of every card takes 6.8 MB, the rows of the
    default and of every column joined 1.6 and 3.4 MB more); and how to charge it again once it grew. Cells depend
    on the day too: the latest rates convert the figures that needed no conversion."""
    key = ("market_cells", day, today)
    bound = max(0, int(state.settings.answer_cache_mb * 2**20) // CellMemo.CACHE_SHARE - 4096)  # less its key, overhead
    memo = state.cached_value(key, lambda _: CellMemo(bound))
    return memo, lambda: state.refit(key, memo)


def _sort_value(row: dict[str, Any], key: str) -> Any:
    derive = DERIVED.get(key)
    return derive(row) if derive is not None else row.get(key)


def sort_rows(rows: list[dict[str, Any]], key: str, desc: bool) -> list[dict[str, Any]]:
    """As `/offers` sorts: unknown values after known ones (before them descending), then by offer key."""

    def order(row: dict[str, Any]) -> tuple[Any, ...]:
        value = _sort_value(row, key)
        missing = value is None
        if isinstance(value, list | dict):
            value = json.dumps(value, ensure_ascii=False)  # as the cell shows it
        return (missing, 0 if missing else value, offer_key(row))

    return sorted(rows, key=order, reverse=desc)


def sort_values(rows: list[dict[str, Any]], key: str) -> list[Any]:
    """Each row's value for sorting by `key` (lists and mappings as their cells show them)."""
    derive = DERIVED.get(key)
    values = [derive(row) for row in rows] if derive is not None else list(map(methodcaller("get", key), rows))
    if not set(map(type, values)).isdisjoint((list, dict)):
        values = [json.dumps(v, ensure_ascii=False) if isinstance(v, list | dict) else v for v in values]
    return values


def sorted_order(values: Sequence[Any], tiebreak: Sequence[Any], desc: bool) -> list[int]:
    """The order of `sort_rows` given each row's value and a value ordered as its offer key, in two
    stable sorts with keys read in C (no Python call per comparison or row): by offer key, then
    by value, the rows without one after (before, descending)."""
    return order_by_value(values, sorted(range(len(values)), key=tiebreak.__getitem__, reverse=desc), desc)


def order_by_value(values: Sequence[Any], by_key: list[int], desc: bool) -> list[int]:
    """`sorted_order` given the rows' order by offer key (descending with `desc`)."""
    if None not in values:  # every row has one (most columns): no row read in Python
        return sorted(by_key, key=values.__getitem__, reverse=desc)
    known = sorted((i for i in by_key if values[i] is not None), key=values.__getitem__, reverse=desc)
    unknown = [i for i in by_key if values[i] is None]
    return unknown + known if desc else known + unknown


def sort_rows_fast(
    rows: list[dict[str, Any]], key: str, desc: bool, ranks: Sequence[int] | None = None
) -> list[dict[str, Any]]:
    """`sort_rows` by `sorted_order` (`ranks`: each row's rank in offer-key order, if known)."""
    tiebreak = ranks if ranks is not None else [offer_key(row) for row in rows]
    return [rows[i] for i in sorted_order(sort_values(rows, key), tiebreak, desc)]


def current_numbering(current: CurrentOffers) -> Numbering:
    """The current offers' listed texts numbered and prices ranked (table.Numbering), once per set of current
    offers (the cell memo of the current market writes these numbers: they stand while it does)."""
    found: Numbering | None = current.derived.get("numbering")
    if found is None:
        # From the offers, as their rows hold them (answers.offer_json): a row for every current offer
        # would take ~1.1 KB each (54 MB at 50,000 offers, where a page shows at most 5,000).
        listed = {key: Listed.of(key, _texts(current.offers, key)) for key in LISTED}
        prices = {p for o in current.offers for p in (o.price, o.list_price) if p is not None}  # table.RANKED
        ranks = None if all(not raw_value(p) for p in prices) else {p: i for i, p in enumerate(sorted(prices))}
        found = current.derived.setdefault("numbering", Numbering(listed, ranks))
    return found


def _texts(offers: list[Offer], key: str) -> set[str]:
    return {text for text in (getattr(offer, key) for offer in offers) if isinstance(text, str) and text}


def observed_values(state: AppState, rows: list[dict[str, Any]]) -> list[Any] | None:
    """Each row's moment of observation as its offer holds it (to the microsecond; a row writes it
    to the second), if every row is a current offer's row as kept (else None). Known by the rows kept
    (api.offer_rows), so no row is written for an offer the page does not show."""
    values = offer_rows(state.current(), state.settings).moments(rows)
    return None if None in values else values


def _choices(current: CurrentOffers) -> dict[str, list[str]]:
    """What the filters offer: the values the current offers have (a new card appears by itself)."""
    offers = current.offers
    default = OffersParams.model_fields["gpu"].get_default(call_default_factory=True)  # () since gpu is a list
    return {
        "gpu": sorted({o.gpu_model for o in offers} | ({default} if isinstance(default, str) and default else set())),
        "pricing": [p.value for p in Pricing],
        "provider": known_providers(),
        "region": sorted({o.region for o in offers}, key=str.lower),
        "mem_gpu": [f"{m:g}" for m in sorted({o.gpu_memory_gb for o in offers})],
        "availability": [a.value for a in Availability],
    }


def _answer_fast(state: AppState, params: OffersParams) -> tuple[dict[str, Any], bool]:
    """The `/offers` answer as built, and whether the page still has to sort it. Sorted by one of
    the offers' own values, it is the answer in the default order (sorted on the page as `/offers`
    sorts), when that answer holds every row (no other page of it): a new sort then costs a
    sort, not a new answer and its JSON."""
    default = {"sort": DEFAULT_SORT, "desc": False}
    if params.sort not in API_SORTS or {"sort": params.sort, "desc": params.desc} == default:
        return offers_result(state, params).payload, False
    if params.sort not in SORTED_HERE and params.date is not None:  # moments of another day: the API's sort
        return offers_result(state, params).payload, False
    answer = offers_result(state, params.model_copy(update=default)).payload
    if answer["offset"] != 0 or answer["count"] != len(answer["offers"]):
        return offers_result(state, params).payload, False
    return answer, True


VIEW_TRIES = 3  # views built again when data lands while one is built, before one is taken as it is


def market(state: AppState, page: Page, fast: bool = True) -> Market:
    """The page's view of `/offers` (may raise ApiError, e.g. for a future `date`). Fast, it reads
    the answer as built and the rows and filter choices kept for the current offers; not `fast`, it
    parses the answer's bytes and writes everything afresh (the plain rendering, which the tests
    hold the fast one to). Of one set of current offers: where data landed while the view was built
    (its rows of the offers before, the numbers of its prices and notes of those after, a cell then
    writing its exact value in a column of numbers, which a sort in place misplaces), it is built again."""
    for _ in range(VIEW_TRIES):
        current = state.current()
        found = _market_of(state, page, fast, current)
        if state.fresh_current() is current:
            break
    return found


def _market_of(state: AppState, page: Page, fast: bool, current: CurrentOffers) -> Market:
    """`market` from `current` (the numbers of its prices and notes), the offers the answers are of
    unless data lands meanwhile."""
    view, view_problems = parse(MarketView, given(page, MarketView))
    skip = PAGE_ONLY if (view is None or view.sort not in API_SORTS) else PAGE_ONLY - {"sort", "desc"}
    values: dict[str, Any] = dict(given(page, OffersParams, skip))
    values.setdefault("limit", str(state.settings.max_page_limit))
    params, problems = parse(OffersParams, values)
    choices = state.cached_value(("market_choices",), _choices) if fast else _choices(state.current())
    found = Market(page, view or MarketView(), params, view_problems + problems, choices=choices)
    if params is None or view is None:
        return found
    today = state.clock().date()
    if fast:
        found.answer, sort_here = _answer_fast(state, params)
        found.cells, found.refit = cell_memo(state, params.date, today)
        base = view_rows(state, found.cells, found.answer, view)
    else:
        found.answer, sort_here = json.loads(offers_answer(state, params)), False
        base = ViewRows.of(found.answer, narrowed(found.answer["offers"], view))
    rows, keys = base.rows, base.keys
    if view.sort not in keys:
        found.problems.append({"parameter": "sort", "message": f"no column {view.sort!r}", "value": view.sort})
        view.sort = DEFAULT_SORT
    if not fast:
        if view.sort not in API_SORTS:
            rows = sort_rows(rows, view.sort, view.desc)
    elif sort_here or view.sort not in API_SORTS:
        values = observed_values(state, rows) if view.sort == "observed_at" else sort_values(rows, view.sort)
        if values is None:  # not the current offers' rows (they changed meanwhile): the API sorts them
            found.answer = offers_result(state, params).payload
            base = view_rows(state, found.cells, found.answer, view)  # type: ignore[arg-type]  # fast: a memo
            rows = base.rows
        else:
            order = order_by_value(values, base.by_key[::-1] if view.desc else base.by_key, view.desc)
            assert base.places is not None  # fast: found in the memo
            pick = Places(order).pick  # each list's items in the view's order, picked in C
            rows, base.places = list(pick(rows)), Places(list(pick(base.places.at)))
            base.ranks = list(pick(base.ranks))
    found.places, found.rows, found.listed_items = base.places, rows, base.listed_items
    found.numbering = current_numbering(current) if params.date is None else None
    found.ranks = base.ranks if fast else None
    found.columns = columns_of(rows, keys, page.words, base.absent, base.samples)
    wanted = set(view.cols) or set(DEFAULT_COLUMNS)
    found.shown = [c for c in found.columns if c.key in wanted] or [
        c for c in found.columns if c.key in DEFAULT_COLUMNS
    ]
    found.rates = rates_for(state.store.fx_table(), base.fx_days, today)
    return found


@dataclass
class ViewRows:
    """A view's rows before the page sorts them, and what every order of them shares; fast, kept
    per `/offers` answer, page filter and cell memo, so a new sort of them costs a sort by value."""

    answer: dict[str, Any]
    rows: list[dict[str, Any]]  # narrowed by the page's filters, in the answer's order
    keys: list[str]  # every column there is
    fx_days: set[str | None]
    places: Places | None = None  # the rows' places in the cell memo
    by_key: list[int] = field(default_factory=list)  # the rows' indices in offer-key order
    ranks: list[int] = field(default_factory=list)  # each row's rank among them in offer-key order
    absent: frozenset[str] = frozenset()  # columns no row has a value for
    samples: dict[str, Any] = field(default_factory=dict)  # first values of columns whose kind no order changes
    listed_items: dict[str, str] = field(default_factory=dict)  # written once for every order (Market.lists_html)

    @classmethod
    def of(cls, answer: dict[str, Any], rows: list[dict[str, Any]]) -> ViewRows:
        return cls(answer, rows, column_keys(rows), set(map(methodcaller("get", "fx_date"), rows)))

    @property
    def cache_size(self) -> int:
        return 24 * len(self.rows) + 100 * len(self.keys)


def view_rows(state: AppState, memo: CellMemo, answer: dict[str, Any], view: MarketView) -> ViewRows:
    """The rows of `answer` the view shows, with their places in `memo`, order by offer key, and the
    columns' samples where every row of the memo holds values of one kind (a column's kind is
    then the same in any order of them); kept for this memo while no place of it took another row
    (the kept answer keeps its id its own)."""

    def build(_: object) -> ViewRows:
        found = ViewRows.of(answer, narrowed(answer["offers"], view))
        found.places = memo.places(None, found.rows)
        found.by_key = sorted(range(len(found.rows)), key=memo.row_order(found.places).__getitem__)
        found.ranks = [0] * len(found.by_key)
        for rank, index in enumerate(found.by_key):
            found.ranks[index] = rank
        found.absent = memo.absent(found.keys)
        one_kind = memo.one_kind(found.keys)
        found.samples = samples_of(found.rows, [k for k in found.keys if k in one_kind], found.absent)
        return found

    key = ("market_rows", memo.serial, memo.replaced, id(answer), view.mem_gpu, view.min_total)
    return replace(state.cached_value(key, build))  # a copy: the view sets its own places


def narrowed(rows: list[dict[str, Any]], view: MarketView) -> list[dict[str, Any]]:
    """The rows the page's own filters keep (memory per GPU, total memory)."""
    if view.mem_gpu:
        rows = [r for r in rows if r["gpu_memory_gb"] in view.mem_gpu]
    if view.min_total is not None:
        rows = [r for r in rows if r["gpu_count"] * r["gpu_memory_gb"] >= view.min_total]
    return rows


def column_keys(rows: list[dict[str, Any]]) -> list[str]:
    """Every column there is: the rows' fields, and the total memory after the GPU count."""
    keys = list(rows[0]) if rows else list(DEFAULT_COLUMNS)
    keys.insert(keys.index("gpu_count") + 1 if "gpu_count" in keys else len(keys), "total_gb")
    return keys


def _chosen(page: Page, name: str) -> set[str]:
    return {part.lower() for text in page.values().get(name, []) for part in split_list(text)}


def template_values(state: AppState, m: Market) -> dict[str, Any]:
    """What market.html shows besides the rows."""
    page, words = m.page, m.page.words
    gpu_default = OffersParams.model_fields["gpu"].default
    chosen = {name: _chosen(page, name) for name in ("gpu", "pricing", "provider", "region", "mem_gpu")}
    if not chosen["gpu"] and isinstance(gpu_default, str):
        chosen["gpu"] = {gpu_default.lower()}
    chosen["mem_gpu"] = {f"{parse_mem_gb(v):g}" for v in chosen["mem_gpu"] if _is_size(v)}
    flag_defaults = {name: OffersParams.model_fields[name].default for name in ("include_unavailable", "include_stale")}
    flags = {name: getattr(m.params, name) if m.params else flag_defaults[name] for name in flag_defaults}
    last = {name: texts[-1] for name, texts in page.values().items()}
    pager = None
    count, offset = m.answer.get("count", 0), m.answer.get("offset", 0)
    if m.params is not None and count > len(m.answer.get("offers", [])):
        limit = m.params.limit
        pager = {
            "first": offset + 1,
            "last": min(offset + limit, count),
            "previous": page.here(offset=max(0, offset - limit) or None) if offset else None,
            "next": page.here(offset=offset + limit) if offset + limit < count else None,
        }
    query = query_string(page.items)
    shown = {c.key for c in m.shown}  # looked up for every column (37 × 37 dataclass comparisons by `in m.shown`)
    form = {
        "m": m,
        "shown_keys": shown,
        "multi_gpu": is_list(OffersParams, "gpu"),
        "chosen": chosen,
        "flags": flags,
        "flag_defaults": flag_defaults,
        "raw": {"min_total": last.get("min_total", ""), "date": last.get("date", "")},
        "pricing_word": lambda value: words.value("pricing", value),
        "currencies": CURRENCIES,
    }
    filters_key = (
        page.lang,
        tuple((name, tuple(sorted(values))) for name, values in chosen.items()),
        tuple(flags.items()),
        tuple(form["raw"].items()),
    )
    view_key = (page.lang, m.view.cur, tuple((c.key, c.label, c.key in shown) for c in m.columns))
    return {
        **form,
        "filters_html": form_part(state, m, "_market_filters.html", filters_key, form),
        "view_html": form_part(state, m, "_market_view.html", view_key, form),
        "header": m.header(),
        "table_class": table_classes(m.shown),
        "rows_html": ROWS,
        "lists_html": m.lists_html(),
        "pager": pager,
        "csv_href": f"/market.csv{query}",
        "md_href": f"/market.md{query}",
        "fx_codes": [c for c in CURRENCIES if c in SYMBOLS and c != CNY],
        "fx_rows": sorted(m.rates.items()),
        "defaults": {
            "cur": CNY,
            "cols": ",".join(DEFAULT_COLUMNS),
            "sort": DEFAULT_SORT,
            "desc": "false",
            "limit": str(state.settings.max_page_limit),
            "_lists": [name for name in ("gpu", "pricing", "provider", "region") if is_list(OffersParams, name)]
            + ["mem_gpu", "cols"],
            **{name: "true" if value else "false" for name, value in flag_defaults.items()},
        },
    }


def form_part(state: AppState, m: Market, template: str, key: tuple[Any, ...], values: dict[str, Any]) -> Markup:
    """A part of the market's form, rendered once for each `key` (everything it shows but the filter
    choices, which change only with the data, as the answer cache's entries do), fast; plain, always."""

    def rendered(_: object = None) -> Markup:
        return Markup(render(m.page, template, **values))

    return state.cached_value(("market_form", template, key), rendered) if m.cells is not None else rendered()


def _is_size(text: str) -> bool:
    try:
        parse_mem_gb(text)
    except ValueError:
        return False
    return True
