"""Snapshots and `/offers?date=` pages are read in SQL (pricedb.snapshot): on random runs (failed and
skipped ones, withdrawn and held offers, partial pricings, stale coverage, missing CNY figures, ties),
the snapshot equals a plain replay of the runs in Python, and every page equals the whole snapshot
filtered, sorted and sliced in Python as `/offers` does for the current offers."""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from pricedb.models import Availability, Pricing, Quote, RunStatus
from pricedb.offer_filter import OfferFilter, matches
from pricedb.queries import Coverage, HeldOffer, Offer, RunState
from pricedb.snapshot import MarketState, market_state, snapshot_at, snapshot_page
from pricedb.store import PriceStore, RunRecord
from tests.helpers import freeze_survivors, make_quote, make_run, seed_fx

START = datetime(2026, 10, 1, 0, 0)
PROVIDERS = ("aws", "azure", "lambda")
REGIONS = ("us-east-1", "US-East-1", "eu-west-1")
SKUS = ("a", "b", "c")
PRICINGS = (Pricing.ON_DEMAND, Pricing.SPOT, Pricing.MONTHLY)
SORTS = ("cny_per_gb_hour", "cny_per_hour", "cny_per_gpu_hour", "price", "provider", "observed_at")


def random_runs(rng: random.Random) -> list[RunRecord]:
    runs = []
    moment = START
    for _ in range(rng.randint(8, 16)):
        moment += timedelta(hours=rng.choice((1, 3, 7, 20)))
        provider = rng.choice(PROVIDERS)
        covered = frozenset(rng.sample(PRICINGS, rng.randint(1, len(PRICINGS))))
        status = rng.choices((RunStatus.OK, RunStatus.FAILED, RunStatus.SKIPPED), (6, 1, 1))[0]
        quotes: list[Quote] = []
        rejected: dict[tuple[str, str, str, str], str] = {}
        for region in REGIONS:
            for sku in SKUS:
                for pricing in covered:
                    chance = rng.random()
                    key = (provider, region, sku, pricing.value)
                    if chance < 0.15:
                        rejected[key] = f"implausible {sku}"
                    elif chance < 0.75:
                        quotes.append(
                            make_quote(
                                provider, region, sku, pricing, price=rng.choice((1.0, 2.0, 2.5, 3.0)),
                                currency=rng.choice(("USD", "USD", "XTS")),  # XTS: no FX rate, CNY figures NULL
                                gpu_count=rng.choice((1, 8)), gpu_memory_gb=rng.choice((40.0, 80.0)),
                                gpu_model=rng.choice(("A100", "H100")), observed_at=moment,
                                availability=rng.choice((Availability.AVAILABLE, Availability.SOLD_OUT)),
                            )
                        )  # fmt: skip
        run = make_run(provider, quotes, status=status, finished_at=moment, pricings=covered,
                       stale_after_minutes=rng.choice((60, 600, 6000)))  # fmt: skip
        runs.append(replace(run, rejected_offers=rejected if status is RunStatus.OK else {}))
    return runs


def recorded(store: PriceStore, rng: random.Random) -> list[RunRecord]:
    """Random runs, recorded in order."""
    seed_fx(store, START - timedelta(hours=1))
    runs = random_runs(rng)
    for run in runs:
        store.record_run(run)
    return runs


def replayed(runs: list[RunRecord], cutoff: datetime, judged_at: datetime) -> dict[tuple, tuple]:
    """The plain rule (pricedb.snapshot's docstring), replayed run by run: key → (price, observed_at,
    stale, held reason)."""
    market: dict[tuple, list[Any]] = {}  # key → [price, observed_at, held reason]
    newest: dict[tuple[str, str], RunRecord] = {}
    newest_ok: dict[tuple[str, str], RunRecord] = {}
    for run in runs:
        if run.finished_at >= cutoff:
            break
        for pricing in run.pricings:
            newest[(run.provider, pricing.value)] = run
            if run.status is RunStatus.OK:
                newest_ok[(run.provider, pricing.value)] = run
        if run.status is not RunStatus.OK:
            continue
        covered = {p.value for p in run.pricings}
        accepted = {q.key: q for q in run.quotes}
        for key in [k for k in market if k[0] == run.provider and k[3] in covered]:
            if key in accepted:
                continue
            if key in run.rejected_offers:
                market[key][2] = run.rejected_offers[key]
            else:
                del market[key]
        for key, quote in accepted.items():
            market[key] = [quote.price, quote.observed_at.replace(tzinfo=None), None]

    def stale(key: tuple) -> bool:
        last = newest[(key[0], key[3])]
        if last.status is not RunStatus.OK:
            return True
        ok = newest_ok[(key[0], key[3])]
        return judged_at >= ok.finished_at + timedelta(minutes=ok.stale_after_minutes)

    return {key: (price, at, stale(key) or reason is not None, reason) for key, (price, at, reason) in market.items()}


def plain_page(offers: list[Offer], chosen: OfferFilter, sort: str, desc: bool) -> list[Offer]:
    """/offers' own rules over the whole snapshot in memory (api.answers)."""

    def key(offer: Offer) -> tuple[Any, ...]:
        value = getattr(offer, sort)
        return (value is None, value if value is not None else 0, offer.key)

    return sorted((o for o in offers if matches(o, chosen)), key=key, reverse=desc)


def random_filter(rng: random.Random) -> OfferFilter:
    def some(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(rng.sample(values, rng.randint(1, 2))) if rng.random() < 0.3 else ()

    return OfferFilter(
        gpus=some(("A100", "H100", "T4")), pricings=some(tuple(p.value for p in PRICINGS)), providers=some(PROVIDERS),
        regions=some(("us-east-1", "EU-WEST-1")), skus=some(SKUS), include_interruptible=rng.random() < 0.7,
        include_stale=rng.random() < 0.6, include_unavailable=rng.random() < 0.6,
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_snapshots_and_their_pages_match_the_plain_rules(store: PriceStore, seed: int) -> None:
    rng = random.Random(seed)
    runs = recorded(store, rng)
    cur = store.cursor()
    last = runs[-1].finished_at
    cutoffs = [START, *(START + (last - START) * rng.random() for _ in range(5)), last + timedelta(seconds=1)]
    # The pages read each cutoff's market state once, as the API does per data version; the snapshot
    # they are compared with reads it itself.
    state_of = functools.lru_cache(maxsize=None)(functools.partial(market_state, cur))
    for cutoff in cutoffs:
        now = cutoff + timedelta(hours=rng.choice((-5, 0, 30)))
        snapshot = snapshot_at(cur, cutoff, now)
        got = {o.key: (o.price, o.observed_at, o.stale, o.held_reason) for o in snapshot.offers}
        assert got == replayed(runs, cutoff, min(cutoff, now)), (seed, cutoff)
        for sort, desc in itertools.product(SORTS, (False, True)):  # every order at every cutoff
            chosen = random_filter(rng)
            limit, offset = rng.choice((1, 3, 500)), rng.choice((0, 0, 2, 40))
            page = snapshot_page(cur, cutoff, now, chosen, sort, desc, limit, offset, state_of)  # type: ignore[arg-type]
            expected = plain_page(snapshot.offers, chosen, sort, desc)
            assert page.offers == expected[offset : offset + limit], (seed, cutoff, chosen, sort, desc)
            assert page.count == len(expected)
            assert page.as_of == snapshot.as_of


def test_a_market_state_is_charged_what_it_holds() -> None:
    """A cutoff's market state, kept with the API's answers (bounded in bytes), is charged at least
    what it allocates and at most twice that (tracemalloc)."""
    import gc
    import tracemalloc

    freeze_survivors()
    tracemalloc.start()
    coverage, newest_ok, held = {}, {}, {}
    for i in range(200):
        scope = (f"provider{i}", f"pricing{i % 3}")
        coverage[scope], newest_ok[scope] = Coverage("ok", START + timedelta(minutes=i), 60), 10**6 + i
    for i in range(3000):
        key = (f"provider{i % 7}", f"region-{i}", f"sku.{i}.large", f"pricing{i % 2}")
        held[key] = HeldOffer(10**9 + i, f"the new price is {i} times the last")
    state = MarketState(RunState(coverage, newest_ok), held)
    del coverage, newest_ok, held
    gc.collect()
    allocated = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert allocated <= state.cache_size <= 2 * allocated
