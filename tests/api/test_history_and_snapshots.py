"""Point-in-time snapshots (`/offers?date=`) and price history (`/offers/history`) from the
append-only observations."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from pricedb.models import Pricing, RunStatus
from pricedb.settings import Settings
from pricedb.snapshot import snapshot_at, snapshot_of_day
from pricedb.store import PriceStore, utc_naive
from tests.conftest import SeededStore
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

DAY1, DAY2, DAY3, DAY4 = (NOW - timedelta(days=3 - i) for i in range(4))  # 08:00 UTC on Nov 26..29
P4D = ("aws", "us-east-1", "p4d.24xlarge", "on_demand")
P4DE = ("aws", "us-east-1", "p4de.24xlarge", "on_demand")
SPOT = ("aws", "us-east-1", "p4d.24xlarge", "spot")
NC24 = ("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")


def p4de(price: float, at=NOW):
    return make_quote(sku="p4de.24xlarge", gpu_memory_gb=80.0, price=price, observed_at=at)


def nc24(price: float, at=NOW):
    return make_quote(provider="azure", region="eastus", sku="Standard_NC24ads_A100_v4", gpu_count=1,
                      gpu_memory_gb=80.0, price=price, observed_at=at)  # fmt: skip


def _seed(store: PriceStore) -> None:
    """Four days of runs:
    day 1: aws lists p4d 20.0, p4de 27.0, spot 8.0 (one run covering both pricings); azure nc24 3.6
    day 2: aws p4d 21.0 and p4de 27.0 (list prices only, spot scope not run); azure run FAILS
    day 3: aws list prices without p4de (withdrawn); aws spot scope lists nothing new: spot 7.5
    day 4: azure skipped (no credentials); aws p4d 21.0 again
    """
    for day in (DAY1, DAY2, DAY3, DAY4):
        seed_fx(store, day)
    on_demand = frozenset({Pricing.ON_DEMAND})
    spot = frozenset({Pricing.SPOT})
    store.record_run(make_run("aws", [make_quote(price=20.0, observed_at=DAY1), p4de(27.0, DAY1),
                                      make_quote(pricing=Pricing.SPOT, price=8.0, observed_at=DAY1)],
                              finished_at=DAY1))  # fmt: skip
    store.record_run(make_run("azure", [nc24(3.6, DAY1)], finished_at=DAY1))
    store.record_run(
        make_run(
            "aws", [make_quote(price=21.0, observed_at=DAY2), p4de(27.0, DAY2)], finished_at=DAY2, pricings=on_demand
        )
    )
    store.record_run(make_run("azure", [], status=RunStatus.FAILED, error="HTTP 503", finished_at=DAY2))
    store.record_run(make_run("aws", [make_quote(price=21.0, observed_at=DAY3)], finished_at=DAY3, pricings=on_demand))
    store.record_run(
        make_run(
            "aws", [make_quote(pricing=Pricing.SPOT, price=7.5, observed_at=DAY3)], finished_at=DAY3, pricings=spot
        )
    )
    store.record_run(make_run("azure", [], status=RunStatus.SKIPPED, error="no key", finished_at=DAY4))
    store.record_run(make_run("aws", [make_quote(price=21.0, observed_at=DAY4)], finished_at=DAY4, pricings=on_demand))


@pytest.fixture
def market(store_seeded_by: SeededStore) -> PriceStore:
    return store_seeded_by(_seed)


def prices(snapshot) -> dict[tuple[str, ...], float]:
    return {o.key: o.price for o in snapshot.offers}


def test_each_day_is_the_latest_observation_from_successful_runs_without_withdrawn_offers(market) -> None:
    cur = market.cursor()
    assert prices(snapshot_of_day(cur, DAY1.date() - timedelta(days=1))) == {}
    assert prices(snapshot_of_day(cur, DAY1.date())) == {P4D: 20.0, P4DE: 27.0, SPOT: 8.0, NC24: 3.6}
    # Day 2: azure failed and keeps its offer; the spot pricing was not covered, so spot stays too.
    assert prices(snapshot_of_day(cur, DAY2.date())) == {P4D: 21.0, P4DE: 27.0, SPOT: 8.0, NC24: 3.6}
    # Day 3: a successful on-demand run no longer lists p4de: withdrawn. Spot got its own new price.
    assert prices(snapshot_of_day(cur, DAY3.date())) == {P4D: 21.0, SPOT: 7.5, NC24: 3.6}
    # Moments within a day: before day 3's run p4de was still there.
    assert P4DE in prices(snapshot_at(cur, utc_naive(DAY3) - timedelta(minutes=1)))
    # The last day equals the current offers table (the same replay rule).
    current = {r[:4]: r[4] for r in cur.execute("SELECT provider, region, sku, pricing, price FROM offers").fetchall()}
    assert prices(snapshot_of_day(cur, DAY4.date())) == current


def test_staleness_is_judged_as_of_the_day(market) -> None:
    cur = market.cursor()
    day1 = {o.key: o.stale for o in snapshot_of_day(cur, DAY1.date()).offers}
    assert not any(day1.values())
    day2 = {o.key: o.stale for o in snapshot_of_day(cur, DAY2.date()).offers}
    assert day2[NC24] and not day2[P4D]  # azure's run failed that day
    day4 = {o.key: o.stale for o in snapshot_of_day(cur, DAY4.date()).offers}
    assert day4[NC24]  # skipped: still stale


@pytest.fixture
def client(market: PriceStore, settings: Settings):
    with serving(settings, market, NOW + timedelta(hours=1)) as test_client:
        yield test_client


def test_offers_for_a_date(client: TestClient, market: PriceStore) -> None:
    body = client.get("/offers?date=2026-11-28&include_stale=true").json()
    assert body["date"] == "2026-11-28" and body["count"] == 3
    assert {(o["sku"], o["pricing"], o["price"]) for o in body["offers"]} == {
        ("p4d.24xlarge", "on_demand", 21.0),
        ("p4d.24xlarge", "spot", 7.5),
        ("Standard_NC24ads_A100_v4", "on_demand", 3.6),
    }
    assert body["as_of"] == "2026-11-28T08:00:00Z"
    fresh = client.get("/offers?date=2026-11-28&include_stale=false").json()
    assert {o["provider"] for o in fresh["offers"]} == {"aws"}
    assert client.get("/offers?date=2026-11-26&provider=aws").json()["count"] == 3
    # Cached per date until data lands; a new run for an earlier moment changes the answer.
    again = client.get("/offers?date=2026-11-26&provider=aws")
    assert again.headers.get("x-gpuprice-cache") == "hit"
    late = DAY1 + timedelta(hours=2)
    market.record_run(make_run("aws", [make_quote(price=19.0, observed_at=late)], finished_at=late,
                               pricings=frozenset({Pricing.ON_DEMAND})))  # fmt: skip
    day1 = client.get("/offers?date=2026-11-26&provider=aws").json()
    assert {o["sku"]: o["price"] for o in day1["offers"] if o["pricing"] == "on_demand"} == {"p4d.24xlarge": 19.0}


def test_history_series(client: TestClient) -> None:
    body = client.get("/offers/history?provider=aws&since=2026-11-26&until=2026-11-29").json()
    series = {(s["sku"], s["pricing"]): s for s in body["series"]}
    assert set(series) == {("p4d.24xlarge", "on_demand"), ("p4de.24xlarge", "on_demand"), ("p4d.24xlarge", "spot")}
    p4d = series[("p4d.24xlarge", "on_demand")]
    assert [p["price"] for p in p4d["points"]] == [20.0, 21.0, 21.0, 21.0]
    assert [p["observed_at"] for p in p4d["points"]] == [
        "2026-11-26T08:00:00Z", "2026-11-27T08:00:00Z", "2026-11-28T08:00:00Z", "2026-11-29T08:00:00Z"
    ]  # fmt: skip
    assert p4d["points"][0]["cny_per_hour"] == pytest.approx(140.0)
    assert p4d["points"][0]["cny_per_gb_hour"] == pytest.approx(140.0 / 320)
    assert p4d["currency"] == "USD" and p4d["gpu_count"] == 8
    assert body["count"] == 3 and body["points"] == 4 + 2 + 2
    # since is inclusive, until exclusive (a bare date includes that whole day).
    window = client.get(
        "/offers/history?sku=p4d.24xlarge&pricing=on_demand&since=2026-11-27T08:00:00Z&until=2026-11-28"
    )
    assert [p["price"] for p in window.json()["series"][0]["points"]] == [21.0, 21.0]
    offset = client.get("/offers/history?provider=aws,azure&limit=1&offset=3&since=2026-11-01").json()
    assert offset["count"] == 4 and [s["provider"] for s in offset["series"]] == ["azure"]
    # Default window: the last 30 days up to now.
    assert client.get("/offers/history?region=EASTUS").json()["series"][0]["sku"] == "Standard_NC24ads_A100_v4"


BAD = [
    ("/offers?date=2026-02-30", "date", "not a date"),
    ("/offers?date=yesterday", "date", "YYYY-MM-DD"),
    ("/offers?date=2026-12-01", "date", "in the future"),
    ("/offers/history?since=2026-11-29&until=2026-11-01", "until", "is not after since"),
    ("/offers/history?since=last%20week", "since", "not a date or date-time"),
    ("/offers/history?until=2026-11-31", "until", "not a date"),
    ("/offers/history?include_stale=true", "include_stale", "no meaning for history"),
    ("/offers/history?limit=0", "limit", "between 1 and 5000"),
    ("/offers/history?since=2027-01-01", "since", "must be before until"),
    ("/offers/history?pricing=hourly", "pricing", "unknown pricing"),
]


@pytest.mark.parametrize(("url", "parameter", "message"), BAD)
def test_bad_dates_are_422_naming_the_parameter(client: TestClient, url: str, parameter: str, message: str) -> None:
    response = client.get(url)
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"status", "error", "message", "errors"} and body["error"] == "invalid_parameter"
    problem = next(p for p in body["errors"] if p["parameter"] == parameter)
    assert message in problem["message"]


def _all_histories(store: PriceStore) -> list[tuple[object, object]]:
    """Every named-offer and broad history question, answered through the layout and without it."""
    from pricedb.history import HistoryQuery, history
    from pricedb.offer_filter import OfferFilter

    since, until = DAY1 - timedelta(days=1), NOW + timedelta(days=1)
    filters = [OfferFilter()] + [
        OfferFilter(providers=(p,), regions=(r.upper(),), skus=(s, "absent"), pricings=(k,)) for p, r, s, k in
        (P4D, P4DE, SPOT, NC24)
    ] + [OfferFilter(providers=("aws",), regions=("us-east-1",), skus=(P4D[2], P4DE[2]), pricings=("on_demand", "spot"),
                     include_interruptible=False)]  # fmt: skip
    answers = []
    for chosen in filters:
        query = HistoryQuery(utc_naive(since), utc_naive(until), chosen)
        laid, plain = history(store.cursor(), query), history(store.cursor(), query, laid_out=False)
        answers.append((laid, plain))
    return answers


def test_history_laid_out_by_offer_answers_as_the_observations(market: PriceStore) -> None:
    """pricedb.history_layout: before any compaction (all a tail), after one, and with observations
    appended since (layout plus tail), every answer is the observations' own."""
    for _ in range(2):
        answers = _all_histories(market)
        assert any(laid.points for laid, _ in answers)
        assert all(laid == plain for laid, plain in answers)
        assert market.compact_history() > 0
    later = NOW + timedelta(hours=1)
    market.record_run(make_run("aws", [make_quote(price=22.0, observed_at=later)], finished_at=later,
                               pricings=frozenset({Pricing.ON_DEMAND})))  # fmt: skip
    answers = _all_histories(market)
    assert all(laid == plain for laid, plain in answers)
    p4d = next(laid for laid, _ in answers[1:] if laid.series and laid.series[0].key == P4D)
    assert [p["price"] for p in p4d.series[0].points][-2:] == [21.0, 22.0]  # the tail is read
