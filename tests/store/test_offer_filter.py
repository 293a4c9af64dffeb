"""pricedb.offer_filter: the one description of which offers a question is about. Its two sides,
`matches` over offers in memory and `sql_where` over the observations table, keep the same offers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pricedb import clock
from pricedb.offer_filter import OfferFilter, matches, mismatch, sql_where
from pricedb.queries import current_offers
from pricedb.store import PriceStore

FILTERS = [
    OfferFilter(),
    OfferFilter(gpus=("A100",), pricings=("spot", "monthly")),
    OfferFilter(providers=("aws", "azure", "vast")),
    OfferFilter(regions=("EastUS", "us-EAST-1", "cn-beijing")),
    OfferFilter(providers=("aws",), skus=("p4d.24xlarge", "p4de.24xlarge")),
    OfferFilter(include_interruptible=False),
    OfferFilter(include_unavailable=False),
    OfferFilter(pricings=("on_demand",), regions=("global",), include_unavailable=False),
]


@pytest.mark.parametrize("chosen", FILTERS, ids=repr)
def test_python_and_sql_keep_the_same_offers(offline_store: PriceStore, chosen: OfferFilter) -> None:
    """One offline round: every current offer is its one observation, so both sides must agree."""
    cur = offline_store.cursor()
    offers = current_offers(cur, clock.now_naive()).offers
    observed = cur.execute("SELECT provider, region, sku, pricing FROM observations").fetchall()
    assert sorted(observed) == sorted(o.key for o in offers)
    clauses, values = sql_where(chosen)
    in_sql = cur.execute(
        f"SELECT provider, region, sku, pricing FROM observations WHERE {' AND '.join(clauses)}", values
    ).fetchall()
    in_python = [o.key for o in offers if matches(o, chosen)]
    assert sorted(in_sql) == sorted(in_python)
    assert 0 < len(in_python) < len(offers) or chosen == OfferFilter()


def test_the_first_rule_an_offer_fails_is_named(offline_store: PriceStore) -> None:
    """In the order /cheapest relies on: the selecting rules first, then spot, stale, sold out."""
    offer = current_offers(offline_store.cursor(), clock.now_naive()).offers[0]
    stale_spot_sold_out = replace(offer, gpu_model="A100", pricing="spot", stale=True, availability="sold_out")
    strict = OfferFilter(include_interruptible=False, include_stale=False, include_unavailable=False)
    assert mismatch(stale_spot_sold_out, strict) == "interruptible"
    assert mismatch(stale_spot_sold_out, OfferFilter(include_stale=False, include_unavailable=False)) == "stale"
    assert mismatch(stale_spot_sold_out, OfferFilter(include_unavailable=False)) == "unavailable"
    assert mismatch(stale_spot_sold_out, OfferFilter(pricings=("on_demand",), include_stale=False)) == "pricing"
    assert mismatch(stale_spot_sold_out, OfferFilter(gpus=("H100", "H200"))) == "gpu"
    assert mismatch(replace(stale_spot_sold_out, gpu_model="H100"), OfferFilter(gpus=("H100", "H200"))) is None
    assert mismatch(stale_spot_sold_out, OfferFilter()) is None


def test_observations_have_no_staleness_to_filter_on() -> None:
    with pytest.raises(ValueError, match="no staleness"):
        sql_where(OfferFilter(include_stale=False))
