"""The store: migrations, one transaction per run, append-only observations, current offers and
staleness, failed runs that keep the last good offers."""

from __future__ import annotations

from datetime import timedelta

import duckdb
import pytest

from pricedb.models import Availability, PriceStep, Pricing, RunStatus
from pricedb.queries import current_offers, provider_states
from pricedb.store import PriceStore, StoreBusy, utc_naive
from tests.helpers import NOW, held_by_another_process, make_quote, make_run, seed_fx

NAIVE_NOW = utc_naive(NOW)


def offers_by_key(store: PriceStore, now=NAIVE_NOW):
    return {o.key: o for o in current_offers(store.cursor(), now).offers}


def test_migrations_are_recorded_and_idempotent(store: PriceStore, settings) -> None:
    assert store.schema_version() >= 1
    store.close()
    again = PriceStore(settings)
    assert again.schema_version() >= 1
    count = again.cursor().execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
    assert count == again.schema_version()
    again.close()


def test_ok_run_stores_observations_and_normalized_offers(store: PriceStore) -> None:
    seed_fx(store)
    quotes = [
        make_quote(),
        make_quote(sku="p4de.24xlarge", price=27.44705, gpu_memory_gb=80.0),
        make_quote(pricing=Pricing.SPOT, price=8.1915, notes="cheapest of 4 zones: us-east-1d"),
    ]
    store.record_run(make_run("aws", quotes))
    offers = offers_by_key(store)
    assert set(offers) == {
        ("aws", "us-east-1", "p4d.24xlarge", "on_demand"),
        ("aws", "us-east-1", "p4de.24xlarge", "on_demand"),
        ("aws", "us-east-1", "p4d.24xlarge", "spot"),
    }
    p4de = offers[("aws", "us-east-1", "p4de.24xlarge", "on_demand")]
    assert p4de.fx_rate == pytest.approx(7.0)
    assert p4de.fx_date == NOW.date()
    assert p4de.cny_per_hour == pytest.approx(27.44705 * 7)
    assert p4de.cny_per_gpu_hour == pytest.approx(27.44705 * 7 / 8)
    assert p4de.cny_per_gb_hour == pytest.approx(27.44705 * 7 / 640)
    assert not p4de.stale
    assert offers[("aws", "us-east-1", "p4d.24xlarge", "spot")].notes == "cheapest of 4 zones: us-east-1d"


def test_observations_are_append_only_and_offers_are_the_latest(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote(price=20.0)], finished_at=NOW))
    later = NOW + timedelta(hours=1)
    store.record_run(make_run("aws", [make_quote(price=21.0, observed_at=later)], finished_at=later))
    prices = [r[0] for r in store.cursor().execute("SELECT price FROM observations ORDER BY observation_id").fetchall()]
    assert prices == [20.0, 21.0]
    offers = offers_by_key(store, utc_naive(later))
    assert [o.price for o in offers.values()] == [21.0]


def test_failed_run_keeps_last_offers_and_marks_them_stale(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote()]))
    store.record_run(make_run("azure", [make_quote(provider="azure", sku="Standard_ND96asr_v4", price=27.197)]))
    later = NOW + timedelta(minutes=30)
    store.record_run(make_run("aws", [], status=RunStatus.FAILED, finished_at=later, error="timed out"))
    offers = offers_by_key(store, utc_naive(later))
    assert offers[("aws", "us-east-1", "p4d.24xlarge", "on_demand")].stale
    assert offers[("aws", "us-east-1", "p4d.24xlarge", "on_demand")].price == 21.957642
    assert not offers[("azure", "us-east-1", "Standard_ND96asr_v4", "on_demand")].stale
    runs = store.cursor().execute("SELECT status, error, quote_count FROM runs WHERE provider='aws' ORDER BY run_id")
    assert runs.fetchall() == [("ok", None, 1), ("failed", "timed out", 0)]
    observed = store.cursor().execute("SELECT count(*) FROM observations WHERE provider='aws'").fetchone()[0]
    assert observed == 1


def test_offers_go_stale_when_the_last_success_is_old(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote()], stale_after_minutes=120))
    current = current_offers(store.cursor(), NAIVE_NOW + timedelta(minutes=119))
    assert not current.offers[0].stale
    assert current.valid_until == NAIVE_NOW + timedelta(minutes=120)
    assert current_offers(store.cursor(), NAIVE_NOW + timedelta(minutes=120)).offers[0].stale


def test_a_run_replaces_only_the_pricings_it_covered(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote(), make_quote(pricing=Pricing.SPOT, price=8.0)]))
    later = NOW + timedelta(hours=1)
    list_only = frozenset({Pricing.ON_DEMAND, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
    store.record_run(
        make_run("aws", [make_quote(price=22.0, observed_at=later)], finished_at=later, pricings=list_only)
    )
    offers = offers_by_key(store, utc_naive(later))
    assert offers[("aws", "us-east-1", "p4d.24xlarge", "on_demand")].price == 22.0
    assert offers[("aws", "us-east-1", "p4d.24xlarge", "spot")].price == 8.0  # carried, from its own last run


def test_a_successful_run_that_no_longer_lists_an_offer_withdraws_it(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote(), make_quote(sku="p4de.24xlarge", gpu_memory_gb=80.0, price=27.4)]))
    later = NOW + timedelta(hours=1)
    store.record_run(make_run("aws", [make_quote(observed_at=later)], finished_at=later))
    assert set(offers_by_key(store, utc_naive(later))) == {("aws", "us-east-1", "p4d.24xlarge", "on_demand")}


def test_without_fx_the_quote_is_kept_with_null_cny_and_a_reason(store: PriceStore) -> None:
    store.record_run(make_run("aws", [make_quote()]))
    offer = next(iter(offers_by_key(store).values()))
    assert offer.price == 21.957642 and offer.currency == "USD"
    assert offer.cny_per_hour is None and offer.cny_per_gb_hour is None and offer.fx_rate is None
    assert offer.fx_note == "no USD→CNY reference rate on or before 2026-11-29"


def test_extra_fields_round_trip(store: PriceStore) -> None:
    seed_fx(store)
    quote = make_quote(
        provider="tencent", currency="CNY", price=30.0, availability=Availability.SOLD_OUT, list_price=40.0,
        tax_included=True, price_steps=(PriceStep(after_hours=96, price=25.0),), billing_increment_s=60,
    )  # fmt: skip
    store.record_run(make_run("tencent", [quote]))
    offer = next(iter(offers_by_key(store).values()))
    assert offer.availability == "sold_out"
    assert offer.list_price == 40.0 and offer.tax_included is True
    assert offer.price_steps == (PriceStep(after_hours=96, price=25.0),)
    assert offer.billing_increment_s == 60
    assert offer.fx_rate == 1.0 and offer.cny_per_hour == 30.0


def test_a_run_is_one_transaction(store: PriceStore, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote(price=20.0)]))
    broken = make_run("aws", [make_quote(price=21.0)], finished_at=NOW + timedelta(hours=1))
    original = store._observation_row
    monkeypatch.setattr(store, "_observation_row", lambda q, o, fx: [*original(q, o, fx)[:-1], "not a number"])
    with pytest.raises(duckdb.Error):
        store.record_run(broken)
    assert store.cursor().execute("SELECT count(*) FROM runs WHERE provider='aws'").fetchone()[0] == 1
    assert [o.price for o in offers_by_key(store).values()] == [20.0]


def test_provider_states(store: PriceStore) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote()]))
    store.record_run(make_run("azure", [], status=RunStatus.FAILED, error="HTTP 503"))
    states = {s.provider: s for s in provider_states(store.cursor(), NAIVE_NOW, ["aws", "azure", "gcp"])}
    assert states["aws"].last_status == "ok" and states["aws"].offers == 1 and not states["aws"].stale
    assert states["azure"].last_status == "failed" and states["azure"].last_error == "HTTP 503"
    assert states["gcp"].last_status is None and states["gcp"].offers == 0
    assert states["fx"].last_status == "ok"


def test_a_second_process_gets_a_clear_error(settings) -> None:
    with held_by_another_process(settings.db), pytest.raises(StoreBusy, match="in use by another gpuprice process"):
        PriceStore(settings)


def test_migration_3_adds_the_host_shape_to_a_version_2_database(settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from pricedb import schema
    from pricedb import store as store_module
    from pricedb.snapshot import snapshot_at

    # A database as version 2 left it: quote columns without the host shape, one run stored.
    v2 = [m for m in schema.MIGRATIONS if m[0] <= 2]
    old_columns = schema.QUOTE_COLUMNS[: schema.QUOTE_COLUMNS.index("vcpus")]
    monkeypatch.setattr(store_module, "MIGRATIONS", v2)
    monkeypatch.setattr(store_module, "QUOTE_COLUMNS", old_columns)
    old = PriceStore(settings)
    seed_fx(old)
    old.record_run(make_run("aws", [make_quote()]))
    assert "vcpus" not in {c[0] for c in old.cursor().execute("DESCRIBE offers").fetchall()}
    old.close()
    monkeypatch.undo()

    upgraded = PriceStore(settings)
    assert upgraded.schema_version() == schema.MIGRATIONS[-1][0]  # 3 and every later one
    for table in ("observations", "offers"):
        columns = [c[0] for c in upgraded.cursor().execute(f"DESCRIBE {table}").fetchall()]
        assert columns[-4:-2] == ["vcpus", "memory_gib"] and columns[2:] == list(schema.QUOTE_COLUMNS)
    before = offers_by_key(upgraded)[("aws", "us-east-1", "p4d.24xlarge", "on_demand")]
    assert (before.vcpus, before.memory_gib, before.price) == (None, None, 21.957642)  # old rows: NULL
    later = NOW + timedelta(hours=1)
    upgraded.record_run(
        make_run("aws", [make_quote(price=20.0, observed_at=later, vcpus=96, memory_gib=1152.0)], finished_at=later)
    )
    after = offers_by_key(upgraded, utc_naive(later))[("aws", "us-east-1", "p4d.24xlarge", "on_demand")]
    assert (after.vcpus, after.memory_gib, after.price, after.cny_per_hour) == (96, 1152.0, 20.0, 140.0)
    # Snapshots and history read the same columns by name: the old observation keeps NULLs.
    then = snapshot_at(upgraded.cursor(), utc_naive(NOW) + timedelta(minutes=1)).offers
    assert [(o.price, o.vcpus) for o in then] == [(21.957642, None)]
    upgraded.close()


def test_the_memory_limit_is_lifted_for_one_piece_of_work_and_set_again(tmp_path) -> None:
    """Reading the runs held since the compaction is done with DuckDB's limit lifted (they need more
    than serving's share of the memory budget), and the limit is set again after, even on an error."""
    from pricedb.settings import Settings

    store = PriceStore(Settings(db=tmp_path / "prices.duckdb", db_memory_mb=16))

    def limit() -> str:
        return store.conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    bounded = limit()
    assert "MiB" in bounded and float(bounded.split()[0]) < 17
    with store.memory_lifted():
        assert limit() != bounded and "GiB" in limit()
    assert limit() == bounded
    with pytest.raises(RuntimeError), store.memory_lifted():
        raise RuntimeError("the work failed")
    assert limit() == bounded
    store.close()


def test_the_memory_limit_comes_back_only_when_the_last_lifted_work_ends(tmp_path) -> None:
    from pricedb.settings import Settings

    store = PriceStore(Settings(db=tmp_path / "prices.duckdb", db_memory_mb=16))

    def limit() -> str:
        return store.conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    bounded = limit()
    with store.memory_lifted():
        with store.memory_lifted():  # a history question's read while the compaction sorts
            lifted = limit()
        assert limit() == lifted != bounded  # the compaction still runs: its limit stays lifted
    assert limit() == bounded
    store.close()
