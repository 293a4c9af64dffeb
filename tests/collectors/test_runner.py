"""The runner: providers run concurrently and in isolation; every outcome lands in `runs`; a
failure keeps the provider's last good offers (stale) and never touches the others."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from collectors import registry, runner
from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import FetchError, MissingCredentials, ParseError
from pricedb import clock
from pricedb.models import Pricing, Quote, Unit
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import seed_fx

ALL = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})


class FakeCollector(Collector):
    """A provider whose behaviour the test decides: quotes to return, or an error to raise."""

    title = "Fake"
    source_urls = ("https://fake.test/prices",)
    pricings = ALL
    scopes = (Scope("all", ALL, 60),)
    behaviour: ClassVar[dict[str, object]] = {}

    async def fetch(self, http, scope) -> Fetched:
        outcome = self.behaviour.get(self.name)
        if isinstance(outcome, BaseException):
            raise outcome
        return Fetched([RawResponse(url=self.source_urls[0], fetched_at=clock.now(), body=b"[]")])

    def parse(self, fetched: Fetched) -> list[Quote]:
        outcome = self.behaviour.get(self.name)
        if callable(outcome):
            return outcome()
        return list(outcome or [])


def fake(name: str) -> type[FakeCollector]:
    return type(f"Fake_{name}", (FakeCollector,), {"name": name})


def quote(provider: str, price: float, pricing: Pricing = Pricing.ON_DEMAND, sku: str = "8xA100", **kw) -> Quote:
    return Quote(
        provider=provider, region="r1", sku=sku, gpu_model="A100", gpu_memory_gb=kw.pop("mem", 80.0),
        gpu_count=8, pricing=pricing, price=price, currency="USD", unit=Unit.HOUR,
        source_url="https://fake.test/prices", observed_at=clock.now(), **kw,
    )  # fmt: skip


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch):
    names = ["good", "slow", "broken", "nokeys", "buggy", "absurd", "empty"]
    collectors = {n: fake(n) for n in names}
    monkeypatch.setattr(registry, "COLLECTORS", collectors)
    monkeypatch.setattr(runner, "COLLECTORS", collectors)
    FakeCollector.behaviour = {}
    return FakeCollector.behaviour


def run_round(store: PriceStore, settings: Settings, providers: list[str]):
    return asyncio.run(runner.collect(store, settings, providers, include_fx=False))


def test_one_failure_never_stops_the_others(store: PriceStore, settings: Settings, fakes) -> None:
    seed_fx(store, day=clock.now())
    fakes.update(
        good=[quote("good", 20.0), quote("good", 8.0, Pricing.SPOT)],
        broken=FetchError("HTTP 503 from https://fake.test/prices (gave up after 4 attempts)"),
        nokeys=MissingCredentials("set GPUPRICE_NOKEYS_API_KEY"),
        buggy=ZeroDivisionError("division by zero"),
        absurd=[quote("absurd", 5000.0)],
        empty=[],
        slow=lambda: [quote("slow", 30.0)],
    )
    summaries = {s.provider: s for s in run_round(store, settings, list(fakes))}
    assert summaries["good"].status.value == "ok" and summaries["good"].quotes == 2
    assert summaries["slow"].status.value == "ok"
    assert summaries["broken"].status.value == "failed" and "HTTP 503" in summaries["broken"].error
    assert summaries["nokeys"].status.value == "skipped" and "GPUPRICE_NOKEYS_API_KEY" in summaries["nokeys"].error
    assert summaries["buggy"].status.value == "failed" and "ZeroDivisionError" in summaries["buggy"].error
    assert summaries["absurd"].status.value == "failed" and "rejected" in summaries["absurd"].error
    assert summaries["empty"].status.value == "failed" and "no quotes" in summaries["empty"].error
    rows = store.cursor().execute("SELECT provider, status FROM runs WHERE provider <> 'fx' ORDER BY provider")
    assert dict(rows.fetchall()) == {s: summaries[s].status.value for s in summaries}
    offers = current_offers(store.cursor(), clock.now_naive()).offers
    assert {o.provider for o in offers} == {"good", "slow"}


def test_failed_provider_keeps_its_offers_stale_others_fresh(store: PriceStore, settings: Settings, fakes) -> None:
    seed_fx(store, day=clock.now())
    fakes.update(good=[quote("good", 20.0)], slow=[quote("slow", 30.0)])
    run_round(store, settings, ["good", "slow"])
    fakes["good"] = ParseError("the pricing page changed: no table.price-list")
    run_round(store, settings, ["good", "slow"])
    offers = {o.provider: o for o in current_offers(store.cursor(), clock.now_naive()).offers}
    assert offers["good"].price == 20.0 and offers["good"].stale
    assert not offers["slow"].stale


def test_implausible_quotes_are_rejected_with_reasons_and_the_rest_stored(store, settings, fakes) -> None:
    seed_fx(store, day=clock.now())
    fakes["good"] = [quote("good", 20.0), quote("good", 25.0, Pricing.SPOT), quote("good", 18.0, mem=60.0, sku="x")]
    summary = run_round(store, settings, ["good"])[0]
    assert summary.status.value == "ok" and summary.quotes == 1 and summary.rejected == 2
    stored = store.cursor().execute("SELECT rejected FROM runs WHERE provider='good'").fetchone()[0]
    assert "dearer than on-demand" in stored and "60 GB is not a known size" in stored


def test_not_covered_pricings_are_noted_and_keep_their_offers(store, settings, fakes, monkeypatch) -> None:
    seed_fx(store, day=clock.now())
    fakes["good"] = [quote("good", 20.0), quote("good", 8.0, Pricing.SPOT)]
    run_round(store, settings, ["good"])

    async def no_spot(self, http, scope):
        return Fetched([], not_covered={Pricing.SPOT: "no credentials"})

    monkeypatch.setattr(FakeCollector, "fetch", no_spot)
    fakes["good"] = [quote("good", 21.0), quote("good", 9.0, Pricing.SPOT)]
    summary = run_round(store, settings, ["good"])[0]
    assert summary.status.value == "ok" and "spot not collected: no credentials" in summary.notes
    offers = {o.pricing: o for o in current_offers(store.cursor(), clock.now_naive()).offers}
    assert offers["on_demand"].price == 21.0 and offers["spot"].price == 8.0  # spot carried from before


def test_exports_are_written_after_each_run(store: PriceStore, settings: Settings, fakes) -> None:
    seed_fx(store, day=clock.now())
    fakes["good"] = [quote("good", 20.0)]
    run_round(store, settings, ["good"])
    csv_text = (settings.export_path / "offers.csv").read_text()
    assert csv_text.splitlines()[0].startswith("provider,region,sku,gpu_model,gpu_memory_gb,gpu_count")
    assert csv_text.splitlines()[1].startswith("good,r1,8xA100,A100,80,8,")
    assert (settings.export_path / "offers.parquet").stat().st_size > 0
    assert not list(settings.export_path.glob(".*tmp"))


def test_unknown_provider_is_refused(store: PriceStore, settings: Settings, fakes) -> None:
    with pytest.raises(KeyError, match="unknown provider"):
        run_round(store, settings, ["nope"])
