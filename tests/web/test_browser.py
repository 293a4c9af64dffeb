"""The pages in a real browser: Debian's Chromium driven by Playwright (its own browser download
needs the internet; the suite installs Debian's `chromium` package when it is missing).

One browser for the module, one server (uvicorn on loopback, over the web round), a fresh context
per test. Every request the pages make goes through a route that records it and refuses any that
would leave the origin; every test ends asserting none did and that the console had no error.
Each test writes a screenshot of what it looked at to `test-screenshots/` (not committed)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import sync_playwright

from api.query import CheapestParams
from api.web import gzip_pieces
from api.web.market import DEFAULT_SORT
from api.web.money import amount
from api.web.table import number
from pricedb import tls
from pricedb.fx import FxTable
from tests.helpers import uvicorn_serving
from tests.support.chromium import ensure_chromium
from tests.web.conftest import WebRound, open_copy

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-screenshots"
MONEY = ("cny_per_hour", "cny_per_gpu_hour", "cny_per_gb_hour")
# Most tests look at part of the market (a browser on a busy CI machine takes its time over the whole):
# prices in USD, INR and CNY, hourly and monthly.
VIEW = "provider=aws,azure,e2e,manual"


@pytest.fixture(scope="module")
def served(web_round: WebRound, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FxTable]]:
    from api.app import create_app

    settings, store = open_copy(web_round, tmp_path_factory.mktemp("browser"))
    app = create_app(settings, store=store, schedule=False)
    with uvicorn_serving(app) as base:
        app.state.gpuprice.clock = lambda: web_round.now
        yield base, store.fx_table()
    store.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        chromium = ensure_chromium()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    with sync_playwright() as driver:
        launched = driver.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


class Visit:
    """A browser tab on the server, recording every request and console error."""

    def __init__(self, browser: Any, base: str, locale: str = "en-US", javascript: bool = True) -> None:
        self.base = base
        self.context = browser.new_context(
            locale=locale, viewport={"width": 1400, "height": 900}, java_script_enabled=javascript
        )
        self.context.set_default_timeout(10_000)
        self.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        self.requests: list[str] = []
        self.refused: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        if url.startswith(self.base + "/"):
            route.continue_()
        else:
            self.refused.append(url)
            route.abort()

    def go(self, path: str) -> Any:
        response = self.page.goto(self.base + path)
        assert response is not None and response.status == 200, path
        self.response = response
        return self.page

    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.page.url).query)

    def shot(self, name: str, at: str | None = None) -> None:
        """The page as a reader sees it: the first screen, or the screen from the element `at`."""
        SCREENSHOTS.mkdir(exist_ok=True)
        if at is not None:
            self.page.locator(at).evaluate("element => element.scrollIntoView({block: 'start'})")
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))

    def close(self) -> None:
        self.context.close()
        assert self.refused == [], f"requests left the origin: {self.refused}"
        assert all(url.startswith(self.base + "/") for url in self.requests)
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture
def visit(browser: Any, served: tuple[str, FxTable]) -> Iterator[Any]:
    opened: list[Visit] = []

    def open_tab(**options: Any) -> Visit:
        opened.append(Visit(browser, served[0], **options))
        return opened[-1]

    yield open_tab
    for tab in opened:
        tab.close()


def api(served: tuple[str, FxTable], path: str) -> Any:
    return httpx.get(served[0] + path, timeout=30, verify=tls.client_context()).json()


# Each cell's text and exact value: its `data-v`, or a word's value its column's head gives it
# (`data-words`: pricing, availability, yes/no), or for the CNY figures without one, the value the
# page's row gives: its ¥/h (`data-h`, else the price its cell shows × its FX rate), divided by its GPUs
# and their GB; the rate, GPUs and GB from the row's head (`data-fx`, `data-n`, `data-m`), else from
# their cells (api/web/row_head.py).
TABLE_JS = """() => {
  const DERIVED = {
    cny_per_hour: (h) => h,
    cny_per_gpu_hour: (h, n) => h / n,
    cny_per_gb_hour: (h, n, m) => h / (n * m),
  };
  const table = document.getElementById("market");
  const keys = Array.from(table.tHead.rows[0].cells, (th) => th.dataset.key);
  const cell = (tr, key) => tr.cells[keys.indexOf(key)];
  const carried = (tr, name, key) => Number(tr.dataset[name] ?? cell(tr, key).dataset.v ?? cell(tr, key).textContent);
  const words = Array.from(table.tHead.rows[0].cells,
    (th) => new Map(Object.entries(JSON.parse(th.dataset.words || "{}"))));
  return Array.from(table.tBodies[0].rows, (tr) => {
    const row = {};
    const h = tr.dataset.h ?? parseFloat(cell(tr, "price").textContent) * carried(tr, "fx", "fx_rate");
    Array.from(tr.cells).forEach((td, i) => {
      let value = td.dataset.v ?? words[i].get(td.textContent.trim()) ?? null;
      if (value === "") value = null;
      else if (value === null && keys[i] in DERIVED && h !== "") {
        value = String(DERIVED[keys[i]](Number(h), carried(tr, "n", "gpu_count"), carried(tr, "m", "gpu_memory_gb")));
      }
      row[keys[i]] = [td.textContent.trim(), value];
    });
    return row;
  });
}"""


def table(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(TABLE_JS)


def key_of(row: dict[str, Any]) -> tuple[str, ...]:
    """A shown row's offer: provider, region, sku as text; pricing from its raw value."""
    return (row["provider"][0], row["region"][0], row["sku"][0], row["pricing"][1] or row["pricing"][0])


def offer_key(offer: dict[str, Any]) -> tuple[str, ...]:
    return (offer["provider"], offer["region"], offer["sku"], offer["pricing"])


def sort_key(cell: list[Any]) -> float:
    """A number cell's value as the page's script sorts by it: its `data-v`, or where the text reads
    as the very value (no `data-v`), the number the text begins with (parseFloat's reading)."""
    return float(cell[1] if cell[1] is not None else cell[0].split(" ")[0])


def assert_rows_are_the_offers(rows: list[dict[str, Any]], offers: list[dict[str, Any]]) -> None:
    """The same offers in the same order, every figure the JSON's (exact in data-v or the text, rounded as shown)."""
    assert [key_of(r) for r in rows] == [offer_key(o) for o in offers]
    for row, offer in zip(rows, offers, strict=True):
        for name in MONEY:
            if offer[name] is None:
                assert row[name] == ["—", None]
            else:
                assert float(row[name][1]) == offer[name] and row[name][0] == amount(offer[name])
        assert row["price"][0].startswith(f"{number(offer['price'])} {offer['currency']}/")  # sorted by rank
        assert row["gpu_count"][0] == str(offer["gpu_count"])
        assert sort_key(row["gpu_memory_gb"]) == offer["gpu_memory_gb"]
        assert sort_key(row["gpu_count"]) == offer["gpu_count"]
        assert (row["availability"][1] or row["availability"][0]) == offer["availability"]
        assert row["observed_at"][1] == offer["observed_at"]
        assert ("stale" in row["observed_at"][0]) == offer["stale"]


def test_the_market_table_is_the_offers_answer(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit()
    page = tab.go("/")
    assert tab.response.header_value("content-encoding") == "zstd"  # Chromium takes zstd, and reads it
    everything = table(page)
    assert_rows_are_the_offers(everything, api(served, "/offers?limit=5000")["offers"])
    derived = page.locator("#market tbody tr:not([data-h])").count()  # ¥/h from the price and rate
    assert 0 < derived < len(everything) and page.locator("#market tbody tr[data-n]").count() == 0
    tab.shot("market")
    filters = "pricing=on_demand,spot&provider=aws,azure,gcp,lambda&include_stale=false&include_unavailable=false"
    page = tab.go(f"/?{filters}")
    shown = table(page)
    assert shown and len(shown) < len(everything)  # the filters narrow the table
    assert_rows_are_the_offers(shown, api(served, f"/offers?{filters}&limit=5000")["offers"])
    assert page.locator("#json").get_attribute("href") == f"/offers?{filters}"


def test_a_browser_taking_only_gzip_reads_a_page_compressed_in_pieces(
    visit: Any, served: tuple[str, FxTable], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As over plain HTTP, where browsers send no br or zstd; the test round's market is under 512 KB,
    # so pieces of a kilobyte (this server runs in the test's process).
    monkeypatch.setattr(gzip_pieces, "HELPERS", 1)
    monkeypatch.setattr(gzip_pieces, "spare_cores", lambda: 1.0)
    monkeypatch.setattr(gzip_pieces, "PIECE_BYTES", 1024)
    written = []
    piece = gzip_pieces._piece
    monkeypatch.setattr(gzip_pieces, "_piece", lambda *span: written.append(span[1]) or piece(*span))
    tab = visit()
    tab.context.set_extra_http_headers({"accept-encoding": "gzip, deflate"})
    page = tab.go(f"/?{VIEW}")  # compressed as gzip on its first ask for it
    assert tab.response.header_value("content-encoding") == "gzip" and len(written) > 1
    assert_rows_are_the_offers(table(page), api(served, f"/offers?{VIEW}&limit=5000")["offers"])


def test_changing_a_filter_updates_the_url_and_the_rows(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit()
    page = tab.go("/?provider=aws")
    with page.expect_navigation():
        page.get_by_label("azure", exact=True).check()
    assert tab.query()["provider"] == ["aws,azure"]
    assert_rows_are_the_offers(table(page), api(served, "/offers?provider=aws,azure&limit=5000")["offers"])
    with page.expect_navigation():
        page.get_by_label("aws", exact=True).uncheck()
    assert tab.query()["provider"] == ["azure"]
    with page.expect_navigation():  # by keyboard: focus a box and press space
        page.get_by_label("spot", exact=True).focus()
        page.keyboard.press("Space")
    assert tab.query()["provider"] == ["azure"] and tab.query()["pricing"] == ["spot"]
    assert_rows_are_the_offers(table(page), api(served, "/offers?provider=azure&pricing=spot&limit=5000")["offers"])
    with page.expect_navigation():
        page.get_by_label("Include stale").uncheck()
    assert tab.query()["include_stale"] == ["false"]
    with page.expect_navigation():
        page.get_by_label("Total memory at least (GB)").fill("320")
        page.keyboard.press("Enter")
    rows = table(page)
    expected = [o for o in api(served, "/offers?provider=azure&pricing=spot&include_stale=false&limit=5000")["offers"]
                if o["gpu_count"] * o["gpu_memory_gb"] >= 320]  # fmt: skip
    assert tab.query()["min_total"] == ["320"] and rows
    assert_rows_are_the_offers(rows, expected)
    tab.shot("market-filtered")


def test_switching_currency_divides_every_price_by_the_stored_rate(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit()
    page = tab.go(f"/?{VIEW}")
    offers = {offer_key(o): o for o in api(served, f"/offers?{VIEW}")["offers"]}
    assert {o["currency"] for o in offers.values()} >= {"USD", "INR", "CNY"}
    fx = served[1]
    for currency in ("USD", "EUR", "INR", "native"):
        page.get_by_label("Show prices in").select_option(currency)
        assert tab.query()["cur"] == [currency]
        rows = table(page)
        for row in rows:
            offer = offers[key_of(row)]
            for name in MONEY:
                cny = offer[name]
                if currency == "native":
                    assert row[name][0] == f"{amount(cny / offer['fx_rate'])} {offer['currency']}"
                    continue
                on = date.fromisoformat(offer["fx_date"]) if offer["fx_date"] else date.fromisoformat("2999-12-31")
                rate = fx.to_cny(currency, on)
                assert rate is not None and row[name][0] == amount(cny / rate.rate), (currency, key_of(row), name)
        symbol = {"USD": "$", "EUR": "€", "INR": "₹", "native": "native"}[currency]
        assert page.locator("th[data-key=cny_per_gb_hour]").inner_text().startswith(f"{symbol}/GB·h")
    served_rows = table(tab.go(f"/?{VIEW}&cur=native"))  # the server writes the same figures
    assert [r["cny_per_gb_hour"][0] for r in served_rows] == [r["cny_per_gb_hour"][0] for r in rows]
    usd = [o for o in offers.values() if o["currency"] == "USD"]
    assert usd  # a USD offer shown in USD is its own price again
    page.get_by_label("Show prices in").select_option("USD")
    row = next(r for r in table(page) if key_of(r) == offer_key(usd[0]))
    per_hour = usd[0]["price"] if usd[0]["unit"] == "hour" else None
    if per_hour is not None:
        assert row["cny_per_hour"][0] == amount(per_hour)
    tab.shot("market-usd")


def test_sorting_any_column_as_the_api_sorts(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit()
    page = tab.go(f"/?{VIEW}")
    page.locator("th[data-key=cny_per_hour] a").click()
    assert tab.query()["sort"] == ["cny_per_hour"]
    assert page.locator("th[data-key=cny_per_hour]").get_attribute("aria-sort") == "ascending"
    expected = api(served, f"/offers?{VIEW}&sort=cny_per_hour")["offers"]
    assert [key_of(r) for r in table(page)] == [offer_key(o) for o in expected]
    page.locator("th[data-key=cny_per_hour] a").press("Enter")  # the keyboard sorts too
    assert tab.query()["desc"] == ["true"]
    expected = api(served, f"/offers?{VIEW}&sort=cny_per_hour&desc=true")["offers"]
    assert [key_of(r) for r in table(page)] == [offer_key(o) for o in expected]
    # Columns /offers cannot sort by, sorted in place as the server does: numbers by their `data-v` or,
    # where it is left out, their text; the total memory (derived on the page) as a number too; the
    # notes and sources by their numbers (in the texts' order, each written once below the table); the CNY
    # figures per GPU and per GB by the exact values their row gives (their text is rounded: offers
    # that show the same figure sort by the exact one, then by offer key, as the server sorts them).
    columns = "provider,region,sku,pricing,price,gpu_memory_gb,total_gb,vcpus,availability,notes,source_url"
    columns += ",cny_per_gpu_hour,cny_per_gb_hour"
    page = tab.go(f"/?{VIEW}&cols={columns}")
    shown = table(page)
    for name in ("cny_per_gpu_hour", "cny_per_gb_hour"):  # the view holds rounded ties of different figures
        texts = {}
        for row in shown:
            texts.setdefault(row[name][0], set()).add(row[name][1])
        assert any(len(exact) > 1 for exact in texts.values()), name
    assert len({row["notes"][0] for row in shown} - {"—"}) > 1  # notes of several numbers to sort
    for column in (
        "gpu_memory_gb",
        "availability",
        "total_gb",
        "price",
        "vcpus",
        "notes",
        "source_url",
        "cny_per_gpu_hour",
        "cny_per_gb_hour",
    ):
        page.locator(f"th[data-key={column}] a").click()
        page.locator(f"th[data-key={column}] a").click()
        in_place = [key_of(r) for r in table(page)]
        assert tab.query().get("sort", [DEFAULT_SORT]) == [column] and tab.query()["desc"] == ["true"]
        by_server = table(tab.go(f"/?{VIEW}&cols={columns}&sort={column}&desc=true"))
        assert in_place == [key_of(r) for r in by_server], column


def test_copy_and_download_are_exactly_what_is_shown(visit: Any) -> None:
    tab = visit()
    page = tab.go(f"/?{VIEW}&lang=zh")
    page.locator("#f-cur").select_option("EUR")
    page.locator("th[data-key=region] a").click()
    shown = [[cell.strip() for cell in row] for row in page.evaluate(
        "() => Array.from(document.querySelectorAll('#market tr'), tr => Array.from(tr.cells, c => c.textContent))"
    )]  # fmt: skip
    page.get_by_role("button", name="复制 CSV").click()
    page.wait_for_function("() => document.getElementById('copied').textContent !== ''")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    downloaded = httpx.get(
        tab.base + page.locator("#dl-csv").get_attribute("href"), timeout=30, verify=tls.client_context()
    ).text
    assert copied == downloaded
    sheet = [[cell or "—" for cell in row] for row in csv.reader(io.StringIO(copied))]
    assert sheet == shown and sheet[0][-3].startswith("€/")
    page.get_by_role("button", name="复制 Markdown").click()
    page.wait_for_function("() => document.getElementById('copied').textContent.includes('Markdown')")
    markdown = page.evaluate("() => navigator.clipboard.readText()").splitlines()
    assert markdown[0] == "| " + " | ".join(shown[0]) + " |" and len(markdown) == len(shown) + 1


def test_the_column_picker(visit: Any) -> None:
    tab = visit()
    page = tab.go(f"/?{VIEW}")
    page.locator("details.picker summary").click()
    with page.expect_navigation():
        page.get_by_label("vCPUs").check()
    page.locator("details.picker summary").click()
    with page.expect_navigation():
        page.get_by_label("Availability", exact=True).uncheck()
    keys = page.evaluate("() => Array.from(document.querySelectorAll('#market th'), th => th.dataset.key)")
    assert "vcpus" in keys and "availability" not in keys and "cny_per_gb_hour" in keys
    assert "vcpus" in tab.query()["cols"][0] and "availability" not in tab.query()["cols"][0]


def test_the_market_reads_without_javascript(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit(javascript=False)
    page = tab.go(f"/?{VIEW}&cur=USD")
    providers = page.locator("#market tbody td:first-child")
    assert providers.count() == api(served, f"/offers?{VIEW}")["count"]
    page.locator("th[data-key=cny_per_hour] a").click()  # a link: the server sorts
    assert tab.query()["sort"] == ["cny_per_hour"] and tab.query()["cur"] == ["USD"]
    for name in ("aws", "azure", "manual"):
        page.get_by_label(name, exact=True).uncheck()
    page.get_by_role("button", name="Apply").click()
    assert tab.query()["provider"] == ["e2e"] and tab.query()["cur"] == ["USD"]
    assert set(providers.all_inner_texts()) == {"e2e"}
    expected = api(served, "/offers?provider=e2e&sort=cny_per_hour")["offers"]
    assert page.locator("#market tbody td:nth-child(3)").all_inner_texts() == [o["sku"] for o in expected]


def test_the_job_form_answers_as_cheapest(visit: Any, served: tuple[str, FxTable]) -> None:
    tab = visit()
    page = tab.go("/job")
    assert (page.locator("input[name=tokens]").count() == 1) == ("tokens" in CheapestParams.model_fields)
    page.get_by_label("GPU memory needed (GB)").fill("60")
    page.get_by_label("Hours").fill("200")
    with page.expect_navigation():
        page.get_by_role("button", name="Find the cheapest").click()
    assert tab.query()["mem"] == ["60"] and tab.query()["hours"] == ["200"]
    assert_options(page, api(served, "/cheapest?mem=60&hours=200"))
    page.get_by_label("GPU memory needed (GB)").fill("")
    page.get_by_label("Model", exact=True).fill("llama-2-70b")
    page.get_by_label("Workload").select_option("inference")
    page.get_by_label("Precision").select_option("int4")
    page.get_by_label("Context (tokens)").fill("4096")
    page.get_by_label("Batch (sequences)").fill("16")
    page.get_by_text("Which offers").click()
    page.get_by_label("Include stale").check()
    with page.expect_navigation():
        page.get_by_label("Batch (sequences)").press("Enter")
    query = "model=llama-2-70b&workload=inference&precision=int4&context=4096&batch=16&hours=200&include_stale=true"
    answer = api(served, f"/cheapest?{query}")
    assert_options(page, answer)
    rejected = [c for c in answer["viability"]["configurations"] if not c["viable"]]
    verdicts = page.locator("#viability tr.rejected td:last-child").all_inner_texts()
    assert rejected and [v.split(" ", 1)[1] for v in verdicts] == [c["reason"] for c in rejected]
    band = page.locator("#estimate dl").inner_text()
    assert f"{answer['estimate']['low_gb']}–{answer['estimate']['high_gb']} GiB" in band
    asked = page.locator("#json").get_attribute("href")
    assert asked.startswith("/cheapest?") and parse_qs(urlsplit(asked).query) == parse_qs(query)
    tab.shot("job", at="#answer-title")


def assert_options(page: Any, answer: dict[str, Any]) -> None:
    rows = page.locator("#options tbody tr")
    assert rows.count() == len(answer["options"]) > 0
    for index, option in enumerate(answer["options"]):
        row = rows.nth(index)
        shown = {name: row.get_attribute(f"data-{name}") for name in ("rank", "provider", "region", "sku", "pricing")}
        assert shown == {
            **{k: option[k] for k in ("provider", "region", "sku", "pricing")},
            "rank": str(option["rank"]),
        }
        assert row.locator("td.total").inner_text() == f"{option['total_cny']:.2f}"
        assert row.locator(".basis").inner_text() == f"{option['cost_basis']} = ¥{option['total_cny']:.2f}"


def test_the_offer_chart_draws_the_history_points(visit: Any, served: tuple[str, FxTable], web_round: WebRound) -> None:
    tab = visit()
    market = tab.go("/?provider=manual")
    sku = web_round.charted["sku"]
    row = market.locator("#market tbody tr", has=market.get_by_role("link", name=sku, exact=True))
    with market.expect_navigation():
        row.filter(has_text=web_round.charted["region"]).get_by_role("link", name=sku, exact=True).click()
    page = tab.page
    history = api(served, "/offers/history?" + "&".join(f"{k}={v}" for k, v in web_round.charted.items()))
    (series,) = history["series"]
    assert len(series["points"]) == 4
    charts = page.locator("svg.chart")
    assert charts.count() == 2
    for chart, field in zip(charts.all(), ("price", "cny_per_gb_hour"), strict=True):
        drawn = [
            (c.get_attribute("data-at"), float(c.get_attribute("data-value"))) for c in chart.locator("circle").all()
        ]
        assert drawn == [(p["observed_at"], p[field]) for p in series["points"]]
        assert chart.locator("polyline").count() == 1
    offer = next(
        o for o in api(served, "/offers?provider=manual")["offers"] if offer_key(o) == tuple(web_round.charted.values())
    )
    assert page.locator("#source").get_attribute("href") == offer["source_url"]
    assert (
        f"1 {offer['currency']} = ¥{offer['fx_rate']:.6f} (ECB {offer['fx_date']})" == page.locator("#fx").inner_text()
    )
    assert page.locator("#run dd").first.inner_text().startswith(str(offer["run_id"]))
    tab.shot("offer")


def test_providers_and_digests(visit: Any, served: tuple[str, FxTable], web_round: WebRound) -> None:
    tab = visit(locale="zh-CN")
    page = tab.go("/status")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    providers = api(served, "/providers")["providers"]
    rows = page.locator("#providers > tbody > tr")
    assert rows.count() == len(providers)
    for index, provider in enumerate(providers):
        assert rows.nth(index).get_attribute("data-provider") == provider["provider"]
        assert rows.nth(index).get_attribute("data-status") == provider["status"]
        assert rows.nth(index).locator("td.n").first.inner_text() == str(provider["offers"])
    tab.shot("providers")
    page = tab.go("/digests")
    page.get_by_label("日期").fill(web_round.digest_day.isoformat())
    with page.expect_navigation():
        page.get_by_role("button", name="查看").click()
    digest = api(served, f"/digest?date={web_round.digest_day.isoformat()}")
    assert digest["stored"] and digest["changes"] and digest["withdrawn"]
    assert page.locator("#summary").inner_text() == digest["summary"]
    for section in ("changes", "new", "withdrawn", "failed_providers", "cheapest"):
        assert page.locator(f"#{section} tbody tr").count() == len(digest[section]), section
    assert page.locator("#feed").get_attribute("href") == "/digest.atom"
    with page.expect_navigation():
        page.get_by_role("link", name="English").click()
    assert page.locator("html").get_attribute("lang") == "en" and tab.query()["lang"] == ["en"]
    assert page.get_by_role("heading", name=f"Daily digest: {web_round.digest_day.isoformat()}").count() == 1
    tab.shot("digests")


def test_screenshots_stay_out_of_git() -> None:
    ignored = (Path(__file__).resolve().parents[2] / ".gitignore").read_text().splitlines()
    assert f"/{SCREENSHOTS.name}/" in ignored
