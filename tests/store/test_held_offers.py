"""A rejected quote keeps the last good price: the offer stays in `offers`, stale, with the reason;
snapshots (hence `/offers?date=` and the digest) replay the same rule; the run's notes count what it
withdrew and what it held; the API shows it."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pricedb.digest import build_digest
from pricedb.models import RunStatus
from pricedb.queries import current_offers, provider_states
from pricedb.snapshot import snapshot_at
from pricedb.store import PriceStore, RunRecord, utc_naive
from tests.helpers import make_quote, make_run, seed_fx, serving

UTC = ZoneInfo("UTC")
T1 = datetime(2026, 11, 27, 4, 0)
T2, T3, T4 = T1 + timedelta(days=1), T1 + timedelta(days=1, hours=6), T1 + timedelta(days=1, hours=12)
REASON = "21957.642 USD per GPU-hour is outside the plausible 0.2–12 for A100"
NC24 = ("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")
ND96 = ("azure", "eastus", "Standard_ND96asr_v4", "on_demand")


def nc24(price: float, moment: datetime):
    return make_quote("azure", "eastus", "Standard_NC24ads_A100_v4", price=price, gpu_count=1,
                      gpu_memory_gb=80.0, observed_at=moment)  # fmt: skip


def nd96(price: float, moment: datetime):
    return make_quote("azure", "eastus", "Standard_ND96asr_v4", price=price, observed_at=moment)


def azure_run(quotes, moment: datetime, rejected: dict | None = None, status=RunStatus.OK) -> RunRecord:
    return replace(make_run("azure", quotes, status=status, finished_at=moment), rejected_offers=rejected or {})


def by_key(offers) -> dict:
    return {o.key: o for o in offers}


@pytest.fixture
def market(store: PriceStore) -> PriceStore:
    """T1: both offers good. T2: ND96's new quote rejected (held), NC24 accepted at a new price."""
    for moment in (T1, T2):
        seed_fx(store, moment - timedelta(hours=1))
    store.record_run(azure_run([nc24(3.6, T1), nd96(27.2, T1)], T1))
    store.record_run(azure_run([nc24(3.8, T2)], T2, rejected={ND96: REASON}))
    return store


def test_the_rejected_offer_keeps_its_last_good_observation_stale_with_the_reason(market: PriceStore) -> None:
    offers = by_key(current_offers(market.cursor(), utc_naive(T2)).offers)
    held, fresh = offers[ND96], offers[NC24]
    assert (held.price, held.observed_at, held.stale, held.held_reason) == (27.2, T1, True, REASON)
    assert (fresh.price, fresh.stale, fresh.held_reason) == (3.8, False, None)


def test_the_runs_notes_count_what_it_held_and_what_it_withdrew(market: PriceStore) -> None:
    notes = market.cursor().execute("SELECT notes FROM runs WHERE provider = 'azure' ORDER BY run_id").fetchall()
    assert notes[0] == (None,)
    assert "held 1 offer(s) at their last good price" in notes[1][0] and "withdrew" not in notes[1][0]
    run = azure_run([nc24(3.8, T3)], T3)  # ND96 simply not listed any more: withdrawn
    market.record_run(run)
    assert run.notes == ["withdrew 1 offer(s) the source no longer lists"]
    assert ND96 not in by_key(current_offers(market.cursor(), utc_naive(T3)).offers)


def test_a_snapshot_of_now_equals_offers_and_earlier_snapshots_replay_the_rule(market: PriceStore) -> None:
    now = utc_naive(T2) + timedelta(minutes=5)
    current = current_offers(market.cursor(), now).offers
    assert snapshot_at(market.cursor(), now + timedelta(seconds=1), now).offers == current
    before = by_key(snapshot_at(market.cursor(), T2 - timedelta(minutes=1)).offers)
    assert before[ND96].held_reason is None and not before[ND96].stale  # not yet held then


def test_held_again_keeps_the_same_observation_until_a_quote_is_accepted(market: PriceStore) -> None:
    market.record_run(azure_run([nc24(3.8, T3)], T3, rejected={ND96: "again: " + REASON}))
    again = by_key(current_offers(market.cursor(), utc_naive(T3)).offers)[ND96]
    assert (again.price, again.observed_at, again.held_reason) == (27.2, T1, "again: " + REASON)
    market.record_run(azure_run([nc24(3.8, T4), nd96(26.0, T4)], T4))
    back = by_key(current_offers(market.cursor(), utc_naive(T4)).offers)[ND96]
    assert (back.price, back.stale, back.held_reason) == (26.0, False, None)
    # and the market in between is still what it was then
    then = by_key(snapshot_at(market.cursor(), T3 + timedelta(minutes=1)).offers)[ND96]
    assert (then.price, then.held_reason) == (27.2, "again: " + REASON)


def test_a_failed_run_after_a_held_one_changes_nothing(market: PriceStore) -> None:
    market.record_run(azure_run([], T3, status=RunStatus.FAILED))
    offers = by_key(current_offers(market.cursor(), utc_naive(T3)).offers)
    assert offers[ND96].held_reason == REASON and offers[NC24].stale  # stale now by the failed run


def test_the_digest_does_not_count_a_held_offer_as_withdrawn(market: PriceStore) -> None:
    digest = build_digest(market.cursor(), date(2026, 11, 28), UTC, utc_naive(T2) + timedelta(hours=20))
    assert digest["withdrawn"] == []
    assert [c["sku"] for c in digest["changes"]] == ["Standard_NC24ads_A100_v4"]


def test_the_api_shows_the_held_offer_its_reason_and_the_count(market: PriceStore, settings) -> None:
    with serving(settings, market, T2 + timedelta(minutes=5)) as client:
        offers = {o["sku"]: o for o in client.get("/offers").json()["offers"]}
        hidden = {o["sku"] for o in client.get("/offers?include_stale=false").json()["offers"]}
        dated = {o["sku"]: o for o in client.get("/offers?date=2026-11-28").json()["offers"]}
        cheapest = client.get("/cheapest?mem=80GB&include_stale=true&provider=azure").json()["options"]
        fresh_only = client.get("/cheapest?mem=80GB&provider=azure").json()["options"]
        azure = next(p for p in client.get("/providers").json()["providers"] if p["provider"] == "azure")
    assert offers["Standard_ND96asr_v4"]["stale"] and offers["Standard_ND96asr_v4"]["held_reason"] == REASON
    assert offers["Standard_NC24ads_A100_v4"]["held_reason"] is None
    assert hidden == {"Standard_NC24ads_A100_v4"}
    assert dated["Standard_ND96asr_v4"]["held_reason"] == REASON
    assert {o["sku"]: o["held_reason"] for o in cheapest}["Standard_ND96asr_v4"] == REASON
    assert {o["sku"] for o in fresh_only} == {"Standard_NC24ads_A100_v4"}
    assert (azure["held_offers"], azure["stale_offers"], azure["offers"]) == (1, 1, 2)
    assert any("held 1 offer(s)" in note for note in azure["notes"])


def test_states_count_held_offers(market: PriceStore) -> None:
    states = {s.provider: s for s in provider_states(market.cursor(), utc_naive(T2), ["azure"])}
    assert (states["azure"].held_offers, states["azure"].stale_offers) == (1, 1)
