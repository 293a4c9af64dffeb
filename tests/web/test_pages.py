"""The pages as HTTP sees them (no browser): `/` for browsers and for API clients, every page with
`default-src 'self'` and nothing from elsewhere, each within 200 KB, HEAD as GET, out of the OpenAPI
document, in Chinese or English, and a refused parameter named as the API names it."""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape
from html.parser import HTMLParser
from itertools import combinations
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from api.web.i18n import Words, negotiate
from api.web.market import sort_rows
from api.web.row_head import READ_FROM_CELLS, cells_read, every_head_part, head_parts, per_hour_from_price, row_heads
from api.web.table import column, column_cells, raw_value, worded
from benchmarks.api_cheapest import seed
from collectors.schedule import planned_runs
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import OfflineRound
from tests.helpers import serving
from tests.web.conftest import WebRound

HTML = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8", "accept-language": "en"}
BUDGET = 200_000  # bytes transferred per page


def page_urls(web: WebRound) -> list[str]:
    key = "&".join(f"{k}={v}" for k, v in web.charted.items()).replace(" ", "+")
    return [
        "/",
        "/?cur=USD&sort=region&desc=true&provider=aws,azure",
        "/job",
        "/job?mem=60GB&hours=200",
        "/job?model=llama-2-13b&workload=lora&context=4096&hours=100",
        f"/offer?{key}",
        "/status",
        f"/digests?date={web.digest_day.isoformat()}",
        "/digests",
    ]


class Page(HTMLParser):
    """What a page loads (script, stylesheet, icon, image sources), its inline scripts and styles,
    and its tables as text."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.feeds: list[str] = []
        self.inline_scripts = 0
        self.style_attributes = 0
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._script_type: str | None = None
        self.controls: list[str] = []  # id (or name) of each visible form control
        self.labelled: set[str] = set()  # controls named by a label's `for` or inside a label
        self._in_label = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "label":
            self._in_label += 1
            if found.get("for"):
                self.labelled.add(found["for"] or "")
        if tag in ("input", "select", "textarea") and found.get("type") != "hidden":
            control = found.get("id") or f"{found.get('name')}={found.get('value')}"
            self.controls.append(control)
            if self._in_label:
                self.labelled.add(control)
        if "style" in found:
            self.style_attributes += 1
        if tag in ("script", "img", "iframe", "source") and found.get("src"):
            self.loads.append(found["src"] or "")
        if tag == "link" and found.get("href"):  # a stylesheet, an icon; or a feed (served by gpuprice too)
            (self.loads if found.get("rel") != "alternate" else self.feeds).append(found["href"] or "")
        if tag == "script":
            self._script_type = found.get("type") or "" if not found.get("src") else None
        if tag == "table" and found.get("id"):
            self._table = found["id"]
            self.tables[self._table] = []
        if self._table and tag == "tr":
            self._end_row()  # a row's end tag may be left out: the next row ends it (as browsers read it)
            self._row = []
        if self._row is not None and tag in ("td", "th"):
            self._end_cell()  # a cell's end tag may be left out: the next cell ends it (as browsers read it)
            self._cell = []

    def _end_cell(self) -> None:
        if self._cell is not None:
            assert self._row is not None
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None

    def _end_row(self) -> None:
        self._end_cell()  # the row's end ends its last cell
        if self._row is not None:
            assert self._table is not None
            self.tables[self._table].append(self._row)
            self._row = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._in_label -= 1
        if tag == "script":
            self._script_type = None
        if tag in ("td", "th"):
            self._end_cell()
        if tag in ("tr", "thead", "tbody", "table"):  # the end of a row, or of the rows' group, ends the row
            self._end_row()
        if tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._script_type is not None and data.strip() and self._script_type != "application/json":
            self.inline_scripts += 1
        if self._cell is not None:
            self._cell.append(data)


def parsed(text: str) -> Page:
    page = Page()
    page.feed(text)
    return page


def test_root_serves_browsers_the_market_and_api_clients_the_index(client: TestClient) -> None:
    for accept in ("*/*", "application/json", None):
        answer = client.get("/", headers={"accept": accept} if accept else {})
        assert answer.headers["content-type"] == "application/json"
        assert "/cheapest?mem=60GB&hours=200" in answer.json()["endpoints"]
        assert answer.json()["pages"] == ["/", "/job", "/offer", "/status", "/digests"]
        assert answer.headers["vary"] == "Accept"
    page = client.get("/", headers=HTML)
    assert page.headers["content-type"] == "text/html; charset=utf-8" and '<table id="market"' in page.text
    assert "Accept" in page.headers["vary"]
    assert client.get("/?format=json", headers=HTML).json() == client.get("/index.json", headers=HTML).json()
    assert client.get("/", headers={"accept": "text/html;q=0"}).headers["content-type"] == "application/json"


def test_every_page_loads_only_from_gpuprice(client: TestClient, web_round: WebRound) -> None:
    """`default-src 'self'` on every page; what a page loads is gpuprice's own (and answers); no
    inline script or style attribute, which that policy would refuse."""
    for url in page_urls(web_round):
        answer = client.get(url, headers=HTML)
        assert answer.status_code == 200, (url, answer.text[:500])
        assert answer.headers["content-security-policy"].startswith("default-src 'self'"), url
        page = parsed(answer.text)
        assert page.inline_scripts == 0 and page.style_attributes == 0, url
        unlabelled = [c for c in page.controls if c not in page.labelled]
        assert unlabelled == [], (url, unlabelled)  # every control has a label
        assert len(page.controls) > (10 if url.startswith(("/?", "/job")) or url == "/" else -1), url
        assert len(page.loads) >= 3, url  # stylesheet, icon, script
        for link in page.loads:
            assert not urlsplit(link).netloc and link.startswith("/static/"), (url, link)
            asset = client.get(link)
            assert asset.status_code == 200 and asset.content, link
            assert asset.headers["cache-control"] == "public, max-age=86400"
        for feed in page.feeds:
            assert feed == "/digest.atom" and client.get(feed).status_code == 200
    assert client.get("/static/nothing.js").status_code == 404


def test_each_page_is_under_200_kb_transferred(client: TestClient, web_round: WebRound) -> None:
    for url in page_urls(web_round):
        answer = client.get(url, headers={**HTML, "accept-encoding": "gzip"})
        assert answer.headers["content-encoding"] == "gzip", url
        assert int(answer.headers["content-length"]) < BUDGET, url


def test_the_market_of_2000_offers_is_under_200_kb(tmp_path: Path, offline_round: OfflineRound) -> None:
    db = tmp_path / "market.duckdb"
    seed(db, offers=2000, observations=2000, templates=offline_round.db)
    settings = Settings(db=db, export_dir=tmp_path / "exports")
    store = PriceStore(settings)
    try:
        now = store.cursor().execute("SELECT max(finished_at) FROM runs").fetchone()[0]
        with serving(settings, store, now) as test_client:
            answer = test_client.get("/", headers={**HTML, "accept-encoding": "gzip"})
            assert answer.status_code == 200
            assert answer.text.split("<tbody>")[1].split("</tbody>")[0].count("<tr") == 2000  # the market's rows
            assert int(answer.headers["content-length"]) < BUDGET
    finally:
        store.close()


def test_head_answers_like_get_on_every_page(client: TestClient, web_round: WebRound) -> None:
    for url in [*page_urls(web_round), "/market.csv", "/market.md", "/index.json", "/static/app.js"]:
        for encoding in ("identity", "gzip"):
            headers = {**HTML, "accept-encoding": encoding}
            got, head = client.get(url, headers=headers), client.head(url, headers=headers)
            assert head.status_code == got.status_code == 200, url
            assert head.content == b"" and head.headers == got.headers, url


def test_pages_stay_out_of_the_openapi_document(client: TestClient) -> None:
    paths = set(client.get("/openapi.json").json()["paths"])
    assert not paths & {"/", "/index.json", "/job", "/offer", "/status", "/digests", "/market.csv", "/market.md"}
    assert not [p for p in paths if p.startswith("/static")]


def test_language_from_the_url_else_accept_language() -> None:
    assert negotiate(None, None) == "zh"  # the seed audience
    assert negotiate(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert negotiate(None, "en-US,en;q=0.9,zh-CN;q=0.8") == "en"
    assert negotiate(None, "fr-FR,de;q=0.5") == "en"
    assert negotiate(None, "fr;q=1, zh;q=0.3, en;q=0.2") == "zh"
    assert negotiate("en", "zh-CN") == "en" and negotiate("ZH", "en") == "zh"
    assert negotiate("xx", "en") == "en"


def test_pages_speak_chinese_or_english(client: TestClient) -> None:
    zh = client.get("/status", headers={"accept": "text/html", "accept-language": "zh-CN,zh;q=0.9"})
    assert '<html lang="zh-CN">' in zh.text and "数据源" in zh.text and 'href="/job"' in zh.text
    en = client.get("/status", headers={"accept": "text/html", "accept-language": "en-GB"})
    assert '<html lang="en">' in en.text and "Providers" in en.text and "数据源" not in en.text
    chosen = client.get("/status?lang=en", headers={"accept": "text/html", "accept-language": "zh-CN"})
    assert '<html lang="en">' in chosen.text and 'href="/job?lang=en"' in chosen.text  # links keep it
    assert 'href="/status?lang=zh"' in chosen.text and 'hreflang="zh"' in chosen.text


@pytest.mark.parametrize(
    ("page", "api", "parameter"),
    [
        ("/?provider=nowhere", "/offers?provider=nowhere", "provider"),
        ("/?date=2999-01-01", "/offers?date=2999-01-01", "date"),
        ("/job?mem=lots&hours=2", "/cheapest?mem=lots&hours=2", "mem"),
        ("/job?model=no-such-model-xyz", "/cheapest?model=no-such-model-xyz", "model"),
        ("/job?mem=60&model=llama-2-13b", "/cheapest?mem=60&model=llama-2-13b", "mem"),
        ("/digests?date=1969-01-01", "/digest?date=1969-01-01", "date"),
    ],
)
def test_a_refused_parameter_is_named_as_the_api_names_it(
    client: TestClient, page: str, api: str, parameter: str
) -> None:
    answer = client.get(page, headers=HTML)
    assert answer.status_code == 422
    assert answer.headers["content-security-policy"].startswith("default-src 'self'")
    problem = next(p for p in client.get(api).json()["errors"] if p["parameter"] == parameter)
    assert f"<code>{parameter}</code>: " in answer.text
    assert json.dumps(problem["message"], ensure_ascii=False)[1:-1].replace("'", "&#39;").replace('\\"', "&#34;") in (
        answer.text
    )


def test_an_offer_page_needs_the_offer_named(client: TestClient) -> None:
    answer = client.get("/offer?provider=aws", headers=HTML)
    assert answer.status_code == 422
    for missing in ("region", "sku", "pricing"):
        assert f"<code>{missing}</code>" in answer.text


def test_the_market_files_are_the_table_as_shown(client: TestClient) -> None:
    """CSV and Markdown hold exactly the shown table: its columns, order, currency and words."""
    view = "?cur=EUR&sort=region&desc=true&cols=provider,region,sku,pricing,price,cny_per_gb_hour,observed_at"
    table = parsed(client.get(f"/{view}&lang=zh", headers=HTML).text).tables["market"]
    sheet = list(csv.reader(io.StringIO(client.get(f"/market.csv{view}&lang=zh").text)))
    assert sheet[0] == table[0] == ["云厂商", "地域", "规格", "计费", "原始价格", "€/GB·h", "观测时间 (UTC)"]
    assert [[cell or "—" for cell in row] for row in sheet[1:]] == table[1:]
    assert len(table) - 1 == client.get("/offers?limit=5000").json()["count"]
    markdown = client.get(f"/market.md{view}&lang=zh")
    assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
    lines = markdown.text.splitlines()
    assert lines[0] == "| " + " | ".join(table[0]) + " |" and len(lines) == len(table) + 1
    assert lines[2] == "| " + " | ".join(table[1]) + " |"
    assert 'filename="gpuprice-market.csv"' in client.get(f"/market.csv{view}").headers["content-disposition"]


def test_the_answers_behind_the_pages(client: TestClient, web_round: WebRound) -> None:
    """What the pages show that the JSON now says too: each offer's run, each provider's schedule and
    newest runs, each option's billing rule."""
    offers = client.get("/offers?limit=5000").json()["offers"]
    providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
    for offer in offers:
        runs = {r["run_id"]: r for r in providers[offer["provider"]]["recent_runs"]}
        assert offer["run_id"] in runs and runs[offer["run_id"]]["status"] == "ok"
    for planned in planned_runs(Settings()):
        schedule = providers[planned.collector.name]["schedule"]
        assert {"scope": planned.scope.name, "interval_minutes": planned.interval_minutes} in [
            {k: s[k] for k in ("scope", "interval_minutes")} for s in schedule
        ]
    manual = providers["manual"]["recent_runs"]
    assert [r["finished_at"] for r in manual] == sorted((r["finished_at"] for r in manual), reverse=True)
    assert len(manual) == 4 and all(r["quotes"] for r in manual)
    by_key = {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in offers}
    for option in client.get("/cheapest?mem=60&limit=50").json()["options"]:
        offer = by_key[(option["provider"], option["region"], option["sku"], option["pricing"])]
        assert (option["billing_increment_s"], option["billing_minimum_s"]) == (
            offer["billing_increment_s"],
            offer["billing_minimum_s"],
        )


def test_the_stylesheet_aligns_every_column_of_the_widest_market(client: TestClient) -> None:
    """Market cells carry no class: the table names its numeric (`n<i>`) and moment (`t<i>`)
    columns by position and style.css aligns each such position, for every column there is."""
    keys = re.findall(r'name="cols" value="([^"]+)"', client.get("/", headers=HTML).text)  # the column picker's
    assert len(keys) >= 37
    page = client.get("/?cur=USD&cols=" + ",".join(keys), headers=HTML).text
    marks = re.search(r'<table id="market" class="data ([^"]*)"', page)
    assert marks is not None
    style = client.get(re.findall(r'href="(/static/style\.css\?v=[^"]+)"', page)[0]).text
    positions = marks.group(1).split()
    assert {m[0] for m in positions} == {"n", "t"} and len(positions) > 10
    for mark in positions:
        assert f"table.{mark} td:nth-child({mark[1:]})" in style, mark
    numeric = [int(m[1:]) for m in positions if m[0] == "n"]
    cells = parsed(page).tables["market"][1]
    assert all(cells[i - 1] == "—" or re.match(r"-?[0-9]", cells[i - 1]) for i in numeric)


def test_a_number_cell_holds_its_value_only_where_its_text_does_not_read_as_it() -> None:
    assert raw_value(24) == raw_value(24.0) == raw_value(0.25) == ""
    assert raw_value(0.2432654438844017) == " data-v=0.2432654438844017"  # shown to six decimals
    assert raw_value(1e-7) == " data-v=1e-07"  # shown as 0


def test_a_word_holds_its_value_only_where_its_column_head_does_not_read_it_back() -> None:
    """The market's worded columns (pricing, availability, yes/no) carry their words and the values
    they stand for in their head (`data-words`): a cell whose word reads back so needs no `data-v`;
    a value the head does not know keeps it where its word reads as another value; availability
    always keeps it (its dot's colour); other tables keep every `data-v` as before."""
    words = Words("en")
    pricing = column("pricing", "spot", words)
    assert worded(pricing, words)["on-demand"] == "on_demand" and worded(pricing, words)["spot"] == "spot"
    assert worded(column("available", True, words), Words("zh")) == {"是": "1", "否": "0"}
    assert worded(column("region", "x", words), words) == {}
    rows = [{"pricing": "on_demand"}, {"pricing": "on-demand"}, {"pricing": "bartered"}, {"pricing": None}]
    market = column_cells(pricing, rows, words, "CNY", {}, html=True, headed=True)
    assert market == ["<td>on-demand", '<td data-v="on-demand">on-demand', "<td>bartered", "<td>—"]
    other = column_cells(pricing, rows, words, "CNY", {}, html=True)
    assert other == ['<td data-v="on_demand">on-demand', "<td>on-demand", "<td>bartered", "<td>—"]
    availability = column("availability", "available", words)
    cells = column_cells(availability, [{"availability": "sold_out"}], words, "CNY", {}, html=True, headed=True)
    assert cells == ['<td data-v="sold_out">sold out']


def test_the_market_heads_each_worded_column_with_its_words(client: TestClient) -> None:
    page = client.get("/?lang=zh", headers=HTML).text
    heads = dict(re.findall(r'<th scope="col" data-key="(\w+)"[^>]* data-words="([^"]*)"', page))
    assert json.loads(unescape(heads["pricing"]))["按需"] == "on_demand" and "availability" in heads
    rows = parsed(page).tables["market"][1:]
    assert rows and 'data-v="on_demand"' not in page.split("<tbody>")[1]


def test_rows_carry_their_rank_in_offer_key_order_only_where_the_view_hides_the_key(client: TestClient) -> None:
    """Where a view shows the provider, region, sku and pricing, the script orders rows of equal
    values by them, and no row carries its rank in offer-key order (`data-k`); where it does not, each does."""
    for cols, ranked in (("", False), ("provider,sku,price", True)):
        page = client.get(f"/?cols={cols}" if cols else "/", headers=HTML).text
        body = page.split("<tbody>\n")[1].split("</tbody>")[0]
        starts = re.findall(r"<tr[ >]", body)
        assert starts and body.count("<tr data-k=") == (len(starts) if ranked else 0), cols
        assert "</tr>" not in body  # no end tags: the next row or `</tbody>` ends a row
        assert "\n" not in body  # so nothing falls into a row's last cell


def test_a_cny_figure_its_row_gives_holds_no_value_of_its_own() -> None:
    """The market's rows carry their ¥/h, GPUs and GB per GPU (`data-h`, `data-n`, `data-m`); a CNY
    figure that is exactly what the script works out from them has no `data-v`, any other keeps it,
    and an unknown figure where the script would work one out says so (`data-v=""`)."""
    words = Words("en")
    row = {"cny_per_hour": 10.0, "gpu_count": 3, "gpu_memory_gb": 80.0, "currency": "USD"}
    other = {**row, "cny_per_gpu_hour": 3.3, "cny_per_gb_hour": None}  # not 10 / 3; unknown though derivable
    exact = {**row, "cny_per_gpu_hour": 10.0 / 3, "cny_per_gb_hour": 10.0 / (3 * 80.0)}
    unpriced = {"cny_per_hour": None, "cny_per_gpu_hour": None, "cny_per_gb_hour": None, "gpu_count": 3}
    rows = [exact, other, unpriced]

    def cells(key: str, headed: bool) -> list[str]:
        return column_cells(column(key, 1.0, words), rows, words, "CNY", {}, html=True, headed=headed)

    assert cells("cny_per_hour", True) == ["<td>10.00", "<td>10.00", "<td>—"]
    assert cells("cny_per_gpu_hour", True) == ["<td>3.33", "<td data-v=3.3>3.30", "<td>—"]
    assert cells("cny_per_gb_hour", True) == ["<td>0.0417", '<td data-v="">—', "<td>—"]
    assert cells("cny_per_gb_hour", False) == [f"<td data-v={10.0 / 240}>0.0417", "<td>—", "<td>—"]  # no heads
    assert [head.split(" data-d=")[0] for head in row_heads(rows)] == [
        ' data-h=10.0 data-fx="" data-n=3 data-m=80.0',
        ' data-h=10.0 data-fx="" data-n=3 data-m=80.0',
        ' data-h="" data-fx="" data-n=3 data-m=""',
    ]


def test_a_row_head_holds_only_what_the_views_cells_do_not() -> None:
    """The script reads a row's GPUs, GB per GPU, FX rate, FX day and currency from their cells where
    the view shows them, and works out its ¥/h as the price its cell shows × the FX rate where that is the stored
    figure to the bit: the head keeps each of them only where it cannot."""
    hourly = {"price": 1.25, "fx_rate": 7.125, "cny_per_hour": 1.25 * 7.125, "gpu_count": 2, "gpu_memory_gb": 80.0}
    monthly = {**hourly, "price": 900.0, "cny_per_hour": 900.0 * 7.125 / 730}  # not price × rate
    rounded = {**hourly, "price": 1.2345678, "cny_per_hour": 1.2345678 * 7.125}  # shown as 1.234568
    rows = [{"fx_date": "2026-11-30", "currency": "USD", **row} for row in (hourly, monthly, rounded)]
    every = row_heads(rows, cells_read({"price", "gpu_count", "gpu_memory_gb", "fx_rate", "sku"}))
    assert every == [
        ' data-d="2026-11-30" data-c="USD">',
        f' data-h={900.0 * 7.125 / 730!r} data-d="2026-11-30" data-c="USD">',
        f' data-h={1.2345678 * 7.125!r} data-d="2026-11-30" data-c="USD">',
    ]
    assert row_heads(rows[:1], cells_read({"gpu_count", "sku"})) == [
        f' data-h={1.25 * 7.125!r} data-fx=7.125 data-m=80.0 data-d="2026-11-30" data-c="USD">'
    ]
    assert row_heads(rows[:1], ()) == [
        f' data-h={1.25 * 7.125!r} data-fx=7.125 data-n=2 data-m=80.0 data-d="2026-11-30" data-c="USD">'
    ]
    assert row_heads(rows[:1], cells_read({"fx_date", "sku"})) == [
        f' data-h={1.25 * 7.125!r} data-fx=7.125 data-n=2 data-m=80.0 data-c="USD">'
    ]
    shown = cells_read({"price", "gpu_count", "gpu_memory_gb", "fx_rate", "fx_date", "currency"})
    assert row_heads(rows, shown) == [">", f" data-h={900.0 * 7.125 / 730!r}>", f" data-h={1.2345678 * 7.125!r}>"]
    assert per_hour_from_price(rows[0]) == rows[0]["cny_per_hour"]
    assert per_hour_from_price(rows[2]) != rows[2]["cny_per_hour"]  # the text reads 1.234568


def test_the_warm_up_writes_every_part_of_a_head_any_view_asks_for() -> None:
    reads = range(len(READ_FROM_CELLS) + 1)
    asked = {way for r in reads for read in combinations(READ_FROM_CELLS, r) for way, _ in head_parts(read)}
    assert asked == {way for way, _ in every_head_part()}


def test_notes_and_sources_are_numbered_and_each_written_once_below_the_market(client: TestClient) -> None:
    """A notes cell is its note's number, a source cell its host, each linking to its text below the
    table (readable without JavaScript); each text shown is written there once (a source as its
    link); the numbers follow the texts' order, so a column sorts by them as the server sorts by the
    texts; the CSV keeps the texts."""
    for key, anchor, label in (("notes", "n", "Notes"), ("source_url", "s", "Source")):
        query = f"cols=provider,region,sku,pricing,notes,source_url&sort={key}"
        page = client.get(f"/?{query}", headers=HTML).text
        offers = sort_rows(client.get("/offers?limit=5000").json()["offers"], key, False)  # as the page sorts
        header, *rows = parsed(page).tables["market"]
        at = header.index(label)
        assert len(rows) == len(offers) and any(o[key] for o in offers)
        listed = dict(re.findall(rf"<li value=(\d+) id={anchor}\1>(?:<a href=\"[^\"]*\">)?([^<]*)", page))
        texts = {o[key] for o in offers if o[key]}
        assert sorted(unescape(t) for t in listed.values()) == sorted(texts)  # each once, only those shown
        cells = re.findall(rf"<td><a href=#{anchor}(\d+)>([^<]*)</a>", page)
        assert [row[at] for row, offer in zip(rows, offers, strict=True) if not offer[key]] == ["—"] * (
            len(rows) - len(cells)
        )
        with_text = [(row, offer) for row, offer in zip(rows, offers, strict=True) if offer[key]]
        for (place, shown), (row, offer) in zip(cells, with_text, strict=True):
            assert unescape(listed[place]) == offer[key]
            host = offer[key].split("://", 1)[-1].split("/", 1)[0]  # as before: a URL's host, a mailto: whole
            assert row[at] == (place if key == "notes" else host) == shown
        numbers = [int(place) for place, _ in cells]
        assert numbers == sorted(numbers)  # sorted by the texts, the numbers are in order too
        csv_rows = list(csv.reader(io.StringIO(client.get(f"/market.csv?{query}").text)))[1:]
        assert [r[at] for r in csv_rows] == [o[key] or "" for o in offers]
    assert '<section class="listed">' in page
    assert '<section class="listed">' not in client.get("/?cols=provider,sku", headers=HTML).text  # none shown
