"""Short offer links (`/offer?id=…`, api.web.offer_id): the market links each offer by its id, the
id shows what the offer's key shows, keeps resolving once the offer is withdrawn (before and after
the history is laid out), and an id no offer has is a 404 page that says so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path
from urllib.parse import urlencode

import duckdb
import pytest
from fastapi.testclient import TestClient

from api.web.offer_id import ID_SQL, offer_id
from pricedb.models import Pricing
from pricedb.queries import current_offers
from pricedb.store import PriceStore
from tests.helpers import make_run, serving
from tests.web.conftest import WebRound, open_copy, quote_of

HTML = {"accept": "text/html", "accept-language": "en"}
SECTIONS = (r'<dl class="facts" id="current">.*?</dl>', r'<table class="data small" id="points">.*?</table>',
            r'<a id="history-json" href="[^"]*">')  # fmt: skip


def sections(text: str) -> list[str]:
    """What an offer page shows of its offer: its current quote, its points, its history's JSON link."""
    return [found.group(0) if (found := re.search(pattern, text, re.S)) else "" for pattern in SECTIONS]


@pytest.fixture
def served(web_round: WebRound, tmp_path: Path) -> Iterator[tuple[TestClient, PriceStore]]:
    settings, store = open_copy(web_round, tmp_path)
    with serving(settings, store, web_round.now) as client:
        yield client, store
    store.close()


def test_the_market_links_each_offer_by_its_short_id(client: TestClient) -> None:
    offers = client.get("/offers?limit=5000").json()["offers"]
    ids = [offer_id(o["provider"], o["region"], o["sku"], o["pricing"]) for o in offers]
    assert len(set(ids)) == len(ids) and all(re.fullmatch("[0-9a-f]{12}", i) for i in ids)
    page = client.get("/?cols=provider,region,sku,pricing", headers=HTML).text
    assert re.findall(r'<a href="(/offer\?[^"]*)">', page) == [f"/offer?id={i}" for i in ids]
    english = client.get("/?cols=sku&lang=en", headers=HTML).text  # a URL naming the language: links keep it
    assert re.findall(r'<a href="(/offer\?[^"]*)">', english) == [f"/offer?id={i}&amp;lang=en" for i in ids]


def test_a_short_link_shows_what_the_offer_s_key_shows(client: TestClient, web_round: WebRound) -> None:
    short = offer_id(*web_round.charted.values())
    by_id = client.get(f"/offer?id={short}", headers=HTML)
    by_key = client.get(f"/offer?{urlencode(web_round.charted)}", headers=HTML)
    assert by_id.status_code == by_key.status_code == 200
    assert sections(by_id.text) == sections(by_key.text) and all(sections(by_id.text))
    assert f'href="/offer?id={short}&amp;since=' in by_id.text  # its window links keep the short link
    assert client.get(f"/offer?id={short.upper()}", headers=HTML).text == by_id.text.replace(short, short.upper())


def test_a_short_link_resolves_after_its_offer_is_withdrawn(
    served: tuple[TestClient, PriceStore], web_round: WebRound
) -> None:
    client, store = served
    key = tuple(web_round.charted.values())
    link = f"/offer?id={offer_id(*key)}"
    before = sections(client.get(link, headers=HTML).text)
    cur = store.cursor()
    manual = [o for o in current_offers(cur, web_round.now).offers if o.provider == "manual"]
    covered = frozenset(
        Pricing(p) for p in cur.execute("SELECT pricings FROM runs WHERE provider = 'manual'").fetchone()[0]
    )
    at = web_round.now.replace(tzinfo=UTC) - timedelta(minutes=10)
    quotes = [quote_of(o, o.price, at) for o in manual if o.key != key]
    store.record_run(make_run("manual", quotes, finished_at=at, pricings=covered))  # the charted offer is gone
    offers = client.get("/offers?provider=manual&limit=5000").json()["offers"]
    assert key not in {(o["provider"], o["region"], o["sku"], o["pricing"]) for o in offers}
    for laid_out in (False, True):  # its observations after the last layout, then laid out by offer
        if laid_out:
            store.compact_history()
        page = client.get(link, headers=HTML)
        assert page.status_code == 200 and "Not a current offer" in page.text
        assert sections(page.text)[1:] == before[1:] and not sections(page.text)[0]  # its points, no current quote


@pytest.mark.parametrize("asked", ["000000000000", "not-an-id", ""])
def test_an_id_no_offer_has_is_a_404_page_that_says_so(client: TestClient, asked: str) -> None:
    page = client.get(f"/offer?id={asked}", headers=HTML)
    if not asked:  # an empty id is not given: the key is asked for
        assert page.status_code == 422 and "<code>provider</code>" in page.text
        return
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "no offer gpuprice has observed has this id" in page.text and "<code>id</code>" in page.text


def test_the_id_in_sql_is_the_id_in_python() -> None:
    keys = [("aliyun", "华东 1", "ecs.gn7 ~ A100+80GB", "on_demand"), ("aws", "us-east-1", "p4d.24xlarge", "spot")]
    found = duckdb.connect().execute(
        f"SELECT {ID_SQL} FROM (VALUES {', '.join('(?, ?, ?, ?)' for _ in keys)}) t(provider, region, sku, pricing)",
        [value for key in keys for value in key],
    )
    assert [row[0] for row in found.fetchall()] == [offer_id(*key) for key in keys]
