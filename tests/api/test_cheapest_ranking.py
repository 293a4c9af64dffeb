"""`/cheapest` logic: viability, billed hours, monthly crossover, reserved terms, stepped prices,
filters and ordering. Offers go through the real store so normalization is part of the test."""

from __future__ import annotations

import pytest

from api.cheapest import CheapestQuery, answer, billed_hours_for, job_cost, select
from pricedb.models import Availability, PriceStep, Pricing, RunStatus, Unit
from pricedb.queries import Offer, current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.helpers import NOW, make_quote, make_run, seed_fx

SETTINGS = Settings()


def load(store: PriceStore, quotes, provider: str = "test") -> list[Offer]:
    seed_fx(store)  # 1 USD = ¥7
    store.record_run(make_run(provider, [q.model_copy(update={"provider": provider}) for q in quotes]))
    return current_offers(store.cursor(), utc_naive(NOW)).offers


def one(store: PriceStore, **kw) -> Offer:
    return load(store, [make_quote(provider="test", **kw)])[0]


def test_on_demand_billed_per_second_with_a_minimum(store: PriceStore) -> None:
    offer = one(store, currency="CNY", price=10.0, gpu_count=1, billing_increment_s=1, billing_minimum_s=60)
    assert billed_hours_for(offer, 200) == 200
    assert billed_hours_for(offer, 0.001) == pytest.approx(60 / 3600)
    cost = job_cost(offer, 200, SETTINGS)
    assert cost is not None and cost.total_cny == pytest.approx(2000.0)


def test_per_hour_and_per_minute_rounding(store: PriceStore) -> None:
    hourly = one(store, currency="CNY", price=10.0, gpu_count=1, billing_increment_s=3600)
    assert billed_hours_for(hourly, 1.01) == 2
    offers = load(store, [make_quote(currency="CNY", price=6.0, billing_increment_s=60)], "test2")
    per_minute = next(o for o in offers if o.provider == "test2")
    assert billed_hours_for(per_minute, 0.5 + 1 / 7200) == pytest.approx(31 / 60)


def test_monthly_is_whole_months_and_crosses_over(store: PriceStore) -> None:
    offers = load(
        store,
        [
            make_quote(sku="box", currency="CNY", price=10.0, gpu_count=1, gpu_memory_gb=80),
            make_quote(sku="box", currency="CNY", price=3650.0, unit=Unit.MONTH, pricing=Pricing.MONTHLY,
                       gpu_count=1, gpu_memory_gb=80),
        ],
    )  # fmt: skip
    monthly = next(o for o in offers if o.pricing == "monthly")
    assert monthly.cny_per_hour == pytest.approx(5.0)
    cost = job_cost(monthly, 200, SETTINGS)
    assert cost is not None and cost.billed_hours == 730 and cost.total_cny == pytest.approx(3650.0)
    assert job_cost(monthly, 731, SETTINGS).total_cny == pytest.approx(7300.0)
    assert job_cost(monthly, 730, SETTINGS).total_cny == pytest.approx(3650.0)
    # 200 h: on-demand ¥2000 beats a month at ¥3650; 400 h: the month (¥3650) beats ¥4000.
    short = select(offers, CheapestQuery(mem_gb=60, hours=200), SETTINGS).ranked
    long = select(offers, CheapestQuery(mem_gb=60, hours=400), SETTINGS).ranked
    assert [o.pricing for o, _ in short] == ["on_demand", "monthly"]
    assert [o.pricing for o, _ in long] == ["monthly", "on_demand"]


def test_reserved_pays_the_whole_term(store: PriceStore) -> None:
    offers = load(
        store,
        [
            make_quote(pricing=Pricing.RESERVED_1Y, price=17.40137),
            make_quote(pricing=Pricing.RESERVED_3Y, price=378926.0, unit=Unit.TERM, term_hours=26280.0),
        ],
    )
    one_year = next(o for o in offers if o.pricing == "reserved_1y")
    cost = job_cost(one_year, 10, SETTINGS)
    assert cost.billed_hours == 8760 and cost.total_cny == pytest.approx(17.40137 * 7 * 8760)
    three = next(o for o in offers if o.pricing == "reserved_3y")
    assert job_cost(three, 10, SETTINGS).total_cny == pytest.approx(378926.0 * 7)


def test_stepped_prices_apply_after_their_hours(store: PriceStore) -> None:
    steps = (PriceStep(after_hours=96, price=8.0), PriceStep(after_hours=360, price=6.0))
    offer = one(store, currency="CNY", price=10.0, gpu_count=1, price_steps=steps)
    assert job_cost(offer, 50, SETTINGS).total_cny == pytest.approx(500.0)
    assert job_cost(offer, 200, SETTINGS).total_cny == pytest.approx(96 * 10 + 104 * 8)
    assert job_cost(offer, 400, SETTINGS).total_cny == pytest.approx(96 * 10 + 264 * 8 + 40 * 6)


def test_viability_total_and_single_gpu(store: PriceStore) -> None:
    offers = load(
        store,
        [
            make_quote(sku="1x40", gpu_count=1, gpu_memory_gb=40, price=1.0),
            make_quote(sku="2x40", gpu_count=2, gpu_memory_gb=40, price=2.0),
            make_quote(sku="1x80", gpu_count=1, gpu_memory_gb=80, price=2.5),
        ],
    )
    viable = [o.sku for o, _ in select(offers, CheapestQuery(mem_gb=60, hours=1), SETTINGS).ranked]
    assert viable == ["2x40", "1x80"]
    single = [o.sku for o, _ in select(offers, CheapestQuery(mem_gb=60, hours=1, single_gpu=True), SETTINGS).ranked]
    assert single == ["1x80"]
    exact = [o.sku for o, _ in select(offers, CheapestQuery(mem_gb=80, hours=1), SETTINGS).ranked]
    assert exact == ["2x40", "1x80"]


def test_ties_break_on_cny_per_gb_hour(store: PriceStore) -> None:
    offers = load(
        store,
        [
            make_quote(sku="8x40", gpu_count=8, gpu_memory_gb=40, price=20.0),
            make_quote(sku="8x80", gpu_count=8, gpu_memory_gb=80, price=20.0),
        ],
    )
    ranked = select(offers, CheapestQuery(mem_gb=60, hours=10), SETTINGS).ranked
    assert [o.sku for o, _ in ranked] == ["8x80", "8x40"]


def test_filters_and_exclusions_are_counted(store: PriceStore) -> None:
    offers = load(
        store,
        [
            make_quote(sku="a", price=10.0),
            make_quote(sku="a", price=5.0, pricing=Pricing.SPOT),
            make_quote(sku="b", price=11.0, availability=Availability.SOLD_OUT),
        ],
    )
    result = select(offers, CheapestQuery(mem_gb=60, hours=1, interruptible=False), SETTINGS)
    assert [(o.sku, o.pricing) for o, _ in result.ranked] == [("a", "on_demand")]
    assert result.excluded == {"stale": 0, "unavailable": 1, "interruptible": 1}
    everything = select(offers, CheapestQuery(mem_gb=60, hours=1, include_unavailable=True), SETTINGS)
    assert [(o.sku, o.pricing) for o, _ in everything.ranked] == [("a", "spot"), ("a", "on_demand"), ("b", "on_demand")]
    only_spot = select(offers, CheapestQuery(mem_gb=60, hours=1, pricing=[Pricing.SPOT]), SETTINGS)
    assert [o.pricing for o, _ in only_spot.ranked] == ["spot"]
    elsewhere = select(offers, CheapestQuery(mem_gb=60, hours=1, region=["eu-west-1"]), SETTINGS)
    assert elsewhere.ranked == []


def test_stale_offers_are_left_out_unless_asked(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("test", [make_quote(provider="test")]))
    store.record_run(make_run("test", [], status=RunStatus.FAILED, error="HTTP 503"))
    offers = current_offers(store.cursor(), utc_naive(NOW)).offers
    assert offers[0].stale
    assert select(offers, CheapestQuery(mem_gb=60), SETTINGS).excluded["stale"] == 1
    kept = select(offers, CheapestQuery(mem_gb=60, include_stale=True), SETTINGS).ranked
    assert len(kept) == 1


def test_unpriced_offers_are_reported_not_ranked_as_zero(store: PriceStore) -> None:
    store.record_run(make_run("test", [make_quote(provider="test")]))  # no FX at all
    offers = current_offers(store.cursor(), utc_naive(NOW)).offers
    body = answer(offers, CheapestQuery(mem_gb=60), SETTINGS, NOW, {})
    assert body["options"] == []
    assert body["unpriced"][0]["reason"].startswith("no USD→CNY reference rate")


def test_answer_shape_and_checkable_arithmetic(store: PriceStore) -> None:
    offers = load(store, [make_quote(provider="test", price=21.957642)])
    body = answer(offers, CheapestQuery(mem_gb=60, hours=200), SETTINGS, utc_naive(NOW), {"mem_gb": 60})
    option = body["options"][0]
    contract_fields = [
        "rank", "provider", "region", "sku", "gpu_model", "gpu_memory_gb", "gpu_count", "pricing", "price",
        "currency", "unit", "cny_per_hour", "cny_per_gb_hour", "billed_hours", "total_cny", "observed_at",
        "stale", "availability", "source_url", "notes",
    ]  # fmt: skip
    assert list(option)[: len(contract_fields)] == contract_fields
    assert option["total_cny"] == pytest.approx(round(option["billed_hours"] * option["cny_per_hour"], 2))
    assert option["billed_hours"] == 200 and option["cny_per_hour"] == pytest.approx(21.957642 * 7)
    assert body["as_of"] == "2026-11-29T08:00:00Z" and body["estimate"] is None
