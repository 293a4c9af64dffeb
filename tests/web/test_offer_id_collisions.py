"""Offer ids that collide (api.web.offer_id, issue 13): two real keys whose MD5s share their first 12
hex digits (found once by a search over 30 million skus) are linked by their whole MD5, each link
names its own offer, and the shared 12 digits answer a page listing both, never one of them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.web.offer_id import ID_DIGITS, full_id, link_ids_of, offer_id
from pricedb.models import Pricing, Quote
from pricedb.queries import current_offers
from tests.helpers import make_run, serving
from tests.web.conftest import WebRound, open_copy, quote_of

HTML = {"accept": "text/html", "accept-language": "en"}
ALIKE = [("aws", "us-east-1", "p4d.24xlarge-1448713", "spot"), ("aws", "us-east-1", "p4d.24xlarge-963388", "spot")]
LINK = re.compile(r'<a href="(/offer\?id=[0-9a-f]+)[^"]*">')


def test_the_two_keys_share_their_12_digit_id_and_no_more() -> None:
    first, second = (full_id(*key) for key in ALIKE)
    assert offer_id(*ALIKE[0]) == offer_id(*ALIKE[1]) == first[:ID_DIGITS] and first[ID_DIGITS] != second[ID_DIGITS]
    links = link_ids_of(frozenset({first[:ID_DIGITS]}))
    assert [links(*key) for key in ALIKE] == [first, second]
    assert links("aws", "x", "y", "spot") == offer_id("aws", "x", "y", "spot")
    assert link_ids_of(frozenset()) is offer_id  # none shared: the links cost what they did


@pytest.fixture
def alike(web_round: WebRound, tmp_path: Path) -> Iterator[tuple[TestClient, list[str]]]:
    """A server whose data holds both keys: one current, then both (each from its own run)."""
    settings, store = open_copy(web_round, tmp_path)
    cur = store.cursor()
    template = next(o for o in current_offers(cur, web_round.now).offers if o.provider == "manual")
    at = web_round.now.replace(tzinfo=UTC) - timedelta(minutes=10)
    named = [dict(zip(("provider", "region", "sku", "pricing"), key, strict=True)) for key in ALIKE]
    quotes = [Quote(**{**quote_of(template, template.price, at).model_dump(), **key}) for key in named]
    for quote in quotes:
        store.record_run(make_run("aws", [quote], finished_at=at, pricings=frozenset({Pricing.SPOT})))
    store.record_run(make_run("aws", quotes, finished_at=at + timedelta(seconds=1), pricings=frozenset({Pricing.SPOT})))
    with serving(settings, store, web_round.now) as client:
        yield client, [full_id(*key) for key in ALIKE]
    store.close()


def test_the_market_links_each_of_them_by_its_whole_id_and_the_others_by_12_digits(
    alike: tuple[TestClient, list[str]],
) -> None:
    client, ids = alike
    offers = client.get("/offers?limit=5000").json()["offers"]
    keys = [(o["provider"], o["region"], o["sku"], o["pricing"]) for o in offers]
    assert set(ALIKE) <= set(keys)
    expected = [full_id(*key) if key in ALIKE else offer_id(*key) for key in keys]
    page = client.get("/?cols=provider,region,sku,pricing", headers=HTML).text
    assert LINK.findall(page) == [f"/offer?id={i}" for i in expected]
    assert len(set(expected)) == len(expected) and set(ids) <= set(expected)


def test_each_whole_id_shows_its_own_offer(alike: tuple[TestClient, list[str]]) -> None:
    client, ids = alike
    for key, whole in zip(ALIKE, ids, strict=True):
        for asked in (whole, whole[: ID_DIGITS + 1], whole.upper()):  # any start past the shared 12 digits
            page = client.get(f"/offer?id={asked}", headers=HTML)
            assert page.status_code == 200, asked
            assert f"<h1>{key[2]}</h1>" in page.text and f'href="/offer?id={asked}&amp;since=' in page.text


def test_the_shared_12_digits_list_both_offers_each_with_its_own_link(alike: tuple[TestClient, list[str]]) -> None:
    client, ids = alike
    page = client.get(f"/offer?id={ids[0][:ID_DIGITS]}&lang=en", headers=HTML)
    assert page.status_code == 300 and page.headers["content-type"].startswith("text/html")
    assert "2 offers gpuprice has observed share this id" in page.text
    listed = re.findall(r'<li><a href="/offer\?id=([0-9a-f]+)&amp;lang=en">([^<]+)</a></li>', page.text)
    assert listed == [(whole, " · ".join(key)) for whole, key in zip(ids, ALIKE, strict=True)]
    assert "<h2>" not in page.text.split('id="choices"')[1]  # no offer's quote or history: neither is picked


def test_a_withdrawn_offer_sharing_the_id_keeps_the_current_one_s_link_whole(
    alike: tuple[TestClient, list[str]], web_round: WebRound
) -> None:
    client, ids = alike
    state = client.app.state.gpuprice  # type: ignore[attr-defined]
    at = web_round.now.replace(tzinfo=UTC) - timedelta(minutes=5)
    kept = next(o for o in state.current().offers if o.key == ALIKE[0])
    state.store.record_run(make_run("aws", [quote_of(kept, kept.price, at)], finished_at=at,
                                    pricings=frozenset({Pricing.SPOT})))  # fmt: skip
    page = client.get("/?cols=sku&provider=aws", headers=HTML).text
    links = LINK.findall(page)
    assert f"/offer?id={ids[0]}" in links and not any(ids[1] in link for link in links)
    assert client.get(f"/offer?id={ids[1]}", headers=HTML).status_code == 200  # withdrawn: its history
    assert client.get(f"/offer?id={ids[0][:ID_DIGITS]}", headers=HTML).status_code == 300
