"""`/offers/history` written straight from the rows (api.history: the layout kept per data version,
each point's JSON written as it is read) gives, byte for byte, the answer of the plain reference:
pricedb.history over the observations table, its point dicts encoded with `dumps`."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from api.history import _history_body, answer_head, series_head
from api.state import AppState, dumps
from pricedb.clock import iso_utc
from pricedb.history import History, HistoryQuery, history
from pricedb.models import Availability, Pricing, Unit
from pricedb.offer_filter import OfferFilter
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.helpers import NOW, make_quote, make_run, seed_fx

OFFERS = [
    ("aws", "us-east-1", "p4d.24xlarge", Pricing.ON_DEMAND),
    ("aws", "us-east-1", "p4d.24xlarge", Pricing.SPOT),
    ("aws", "eu-west-1", "p5.48xlarge", Pricing.ON_DEMAND),
    ("azure", "eastus", "Standard_NC24ads_A100_v4", Pricing.ON_DEMAND),
    ("azure", "EastUS", "Standard_NC24ads_A100_v4", Pricing.ON_DEMAND),  # same key but the region's case
    ("azure", "westeurope", "Standard_ND96asr_v4", Pricing.RESERVED_1Y),
]


def _reference_body(query: HistoryQuery, found: History) -> bytes:
    """The answer as api.history wrote it before its fast path: point dicts, then `dumps` (the heads
    of the answer and of each series are not part of the fast path: they are shared)."""
    head = answer_head(query, found)
    head["series"] = [
        {**series_head(s), "points": [{**p, "observed_at": iso_utc(p["observed_at"])} for p in s.points]}
        for s in found.series
    ]
    return dumps(head)


def _rounds(store: PriceStore, rng: random.Random, start: datetime, count: int) -> datetime:
    """`count` runs per provider at random moments after `start`, each listing a random subset of its
    offers (gaps) in a random currency and unit (changes), FX only on some days (unpriced points)."""
    at = start
    for _ in range(count):
        at += timedelta(hours=rng.uniform(1, 40), microseconds=rng.randrange(1_000_000))
        if rng.random() < 0.6:
            seed_fx(store, at, cny=rng.choice([7.0, 7.123456789, 6.9]))
        for provider in ("aws", "azure"):
            quotes = [
                make_quote(
                    provider=p, region=r, sku=s, pricing=k, observed_at=at,
                    price=rng.choice([rng.lognormvariate(1, 2), round(rng.uniform(0, 50), 2), 1e-7, 123456789.125]),
                    currency=rng.choice(["USD", "USD", "USD", "CNY", "INR"]),
                    unit=rng.choice([Unit.HOUR, Unit.HOUR, Unit.HOUR, Unit.MONTH]),
                    gpu_model=rng.choice(["A100", "A100", "H100"]),
                    availability=rng.choice(list(Availability)),
                )
                for p, r, s, k in OFFERS
                if p == provider and rng.random() < 0.7
            ]  # fmt: skip
            if quotes:
                store.record_run(make_run(provider, quotes, finished_at=at))
    return at


def _questions(rng: random.Random, start: datetime, end: datetime) -> list[HistoryQuery]:
    questions = []
    for p, r, s, k in [*OFFERS, *rng.sample(OFFERS, 3)]:
        since = start + (end - start) * rng.uniform(-0.1, 0.6)
        until = since + (end - since) * rng.uniform(0.3, 1.2)
        named = OfferFilter(providers=(p,), regions=(rng.choice([r, r.upper(), r.lower()]),), skus=(s,),
                            pricings=(k.value,), gpus=rng.choice([(), ("A100",), ("H100",), ("A100", "L4")]),
                            include_interruptible=rng.random() < 0.7,
                            include_unavailable=rng.random() < 0.7)  # fmt: skip
        questions.append(HistoryQuery(utc_naive(since), utc_naive(until), named))
        one_provider = OfferFilter(providers=(p,))
        questions.append(HistoryQuery(utc_naive(since), utc_naive(until), one_provider, limit=rng.randint(1, 3),
                                      offset=rng.randint(0, 2)))  # fmt: skip
    several = OfferFilter(providers=("aws", "azure"), regions=("us-east-1", "eastus"),
                          skus=(OFFERS[0][2], OFFERS[3][2], "absent"), pricings=("on_demand", "spot"))  # fmt: skip
    questions.append(HistoryQuery(utc_naive(start - timedelta(days=1)), utc_naive(end + timedelta(days=1)), several))
    no_spot = OfferFilter(providers=several.providers, regions=several.regions, skus=several.skus,
                          pricings=several.pricings, include_interruptible=False)  # fmt: skip
    questions.append(HistoryQuery(utc_naive(start - timedelta(days=1)), utc_naive(end + timedelta(days=1)), no_spot))
    questions.append(HistoryQuery(utc_naive(start - timedelta(days=1)), utc_naive(end + timedelta(days=1))))
    return questions


def _same_answers(state: AppState, rng: random.Random, start: datetime, end: datetime) -> int:
    points = 0
    for query in _questions(rng, start, end):
        plain = history(state.store.cursor(), query, laid_out=False)
        assert _history_body(state, query) == _reference_body(query, plain), query
        points += plain.points
    return points


def test_fast_history_answers_are_the_reference_bytes(settings: Settings, store: PriceStore) -> None:
    """Before any compaction (every point a tail), after one (no tail), and with runs appended since
    (layout plus tail), over random series with gaps, currency and unit changes and unpriced points."""
    rng = random.Random(14)
    state = AppState(store, settings, clock=lambda: NOW)
    start = NOW - timedelta(days=200)
    end = _rounds(store, rng, start, 25)
    seen = _same_answers(state, rng, start, end)
    store.compact_history()
    seen += _same_answers(state, rng, start, end)
    end = _rounds(store, rng, end, 15)
    seen += _same_answers(state, rng, start, end)
    store.compact_history()
    end = _rounds(store, rng, end, 5)
    seen += _same_answers(state, rng, start, end)
    assert seen > 500
    plain = history(store.cursor(), HistoryQuery(utc_naive(start), utc_naive(end)), laid_out=False)
    points = [p for s in plain.series for p in s.points]
    assert any("currency" in p for p in points) and any(p["cny_per_hour"] is None for p in points)
