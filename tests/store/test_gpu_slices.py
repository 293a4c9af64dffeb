"""Slices of one GPU (MIG instances, vGPU shares) are marked as such from the name to the answers:
never a whole card, memory the slice's, ¥/GB·h on that memory, checked against the card they are
cut from, stored (migration 6) and shown in the price sheet, /offers and /cheapest."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from collectors.sanity import check_quote
from pricedb import schema
from pricedb.card_names import UnknownGpu, identify
from pricedb.formats.sheet import SHEET_COLUMNS
from pricedb.fx import FxTable
from pricedb.models import FxRate, Quote
from pricedb.normalize import normalize
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

SEVENTH = 1 / 7
FX = FxTable.from_rates(FxRate(date=NOW.date(), currency=c, rate=r, source="test") for c, r in (("USD", 1), ("CNY", 7)))


def mig_quote(price: float = 0.5, **fields: object) -> Quote:
    spec = identify("NVIDIA A100-SXM4-80GB MIG 1g.10gb")
    values = {**spec.quote_fields(), **fields}
    return Quote(
        provider="vast", region="us", sku="A100 MIG 1g.10gb x2", gpu_count=2, pricing="on_demand", price=price,
        currency="USD", unit="hour", source_url="https://example.test/vast", observed_at=NOW, **values,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("A100-SXM4-80GB MIG 1g.10gb", ("A100", 10.0, "SXM4", SEVENTH, "MIG 1g.10gb")),
        ("NVIDIA A100-SXM4-80GB MIG 3g.40gb", ("A100", 40.0, "SXM4", 3 / 7, "MIG 3g.40gb")),
        ("nvidia.com/mig-2g.20gb NVIDIA A100 80GB PCIe", ("A100", 20.0, "PCIe", 2 / 7, "MIG 2g.20gb")),
        ("A100-SXM4-40GB MIG 1g.5gb", ("A100", 5.0, "SXM4", SEVENTH, "MIG 1g.5gb")),
        ("NVIDIA H100 80GB HBM3 MIG 1g.10gb+me", ("H100", 10.0, "SXM5", SEVENTH, "MIG 1g.10gb")),
        ("H100 NVL MIG 1g.12gb", ("H100", 12.0, "PCIe", SEVENTH, "MIG 1g.12gb")),
        ("H200 MIG 1g.18gb", ("H200", 18.0, "SXM5", SEVENTH, "MIG 1g.18gb")),
        ("A30 MIG 2g.12gb", ("A30", 12.0, "PCIe", 2 / 4, "MIG 2g.12gb")),  # the A30 has 4 slices
        ("H100 SXM MIG 7g.80gb", ("H100", 80.0, "SXM5", 1.0, "MIG 7g.80gb")),  # all of it, still a MIG instance
    ],
)
def test_a_mig_name_is_a_slice_of_its_card(name: str, expected: tuple) -> None:
    spec = identify(name, memory_gb=79.6)  # a stated card memory does not override the profile's
    assert (spec.model, spec.memory_gb, spec.form_factor, spec.gpu_fraction, spec.gpu_partition) == expected


@pytest.mark.parametrize(
    "name",
    [
        "RTX 4090 MIG 1g.6gb",  # no MIG on GeForce
        "A800 80GB MIG 1g.10gb",  # not in NVIDIA's MIG guide
        "A100 80GB MIG 8g.80gb",  # more slices than the card has
        "A100 40GB MIG 3g.40gb",  # a profile as large as the card but only 3 of its 7 slices
        "A100 40GB MIG 7g.80gb",  # larger than the card
        "RTX 3080 MIG 1g.10gb",  # the card itself is unknown
    ],
)
def test_a_mig_name_that_cannot_be_a_slice_of_its_card_is_unknown(name: str) -> None:
    with pytest.raises(UnknownGpu):
        identify(name)


def test_a_fraction_sold_by_instance_type_is_marked_by_the_collector_s_rule() -> None:
    sixth = identify("A10").slice(1 / 6, "1/6 GPU (vGPU)", 4)  # Azure NV6ads_A10_v5
    assert (sixth.model, sixth.memory_gb, sixth.gpu_fraction, sixth.gpu_partition) == (
        "A10",
        4.0,
        1 / 6,
        "1/6 GPU (vGPU)",
    )
    assert sixth.quote_fields()["gpu_partition"] == "1/6 GPU (vGPU)"
    for fraction, memory in ((0, 4), (1.5, 4), (1 / 6, 48)):
        with pytest.raises(UnknownGpu):
            identify("A10").slice(fraction, "bad", memory)
    whole = identify("NVIDIA A100-SXM4-80GB").quote_fields()
    assert (whole["gpu_fraction"], whole["gpu_partition"]) == (None, None)


def test_a_quote_marks_a_slice_with_both_fields_or_neither() -> None:
    assert mig_quote().gpu_fraction == pytest.approx(SEVENTH)
    with pytest.raises(ValidationError, match="both gpu_fraction and gpu_partition"):
        mig_quote(gpu_partition=None)
    with pytest.raises(ValidationError, match="both gpu_fraction and gpu_partition"):
        make_quote(gpu_partition="MIG 1g.10gb")
    with pytest.raises(ValidationError, match="gpu_fraction"):
        mig_quote(gpu_fraction=1.5)


def test_per_gb_hour_is_on_the_slice_s_memory(settings: Settings) -> None:
    figures = normalize(mig_quote(price=0.5), FX, settings)  # 2 slices of 10 GB for $0.5/h = ¥3.5/h
    assert (figures.cny_per_hour, figures.cny_per_gpu_hour, figures.cny_per_gb_hour) == (3.5, 1.75, 0.175)


def test_sanity_accepts_a_marked_slice_and_never_an_unmarked_odd_size(settings: Settings) -> None:
    assert check_quote(mig_quote(), FX, settings) is None
    unmarked = make_quote(gpu_memory_gb=10.0, gpu_count=2, price=0.5)
    assert check_quote(unmarked, FX, settings) == "A100 with 10 GB is not a known size (40, 80 GB)"
    too_big = mig_quote(gpu_memory_gb=96.0)
    assert check_quote(too_big, FX, settings) == "A100 slice of 96 GB is larger than the card (80 GB)"


def test_a_slice_s_price_is_judged_per_whole_gpu(settings: Settings) -> None:
    # $0.02 per 1/7 slice is $0.14 for the whole A100: plausible; $0.01 ($0.07 whole) is not.
    assert check_quote(mig_quote(price=0.04), FX, settings) is None
    assert check_quote(mig_quote(price=0.02), FX, settings) == (
        "0.010 USD per slice-hour (0.070 per whole GPU, MIG 1g.10gb) is outside the plausible 0.1–12 for A100"
    )
    assert check_quote(make_quote(price=0.7, gpu_count=8), FX, settings) == (
        "0.087 USD per GPU-hour is outside the plausible 0.1–12 for A100"  # whole GPUs: as before
    )


def test_slices_are_stored_and_shown_in_the_sheet_offers_and_cheapest(store: PriceStore, settings: Settings) -> None:
    seed_fx(store)
    store.record_run(make_run("vast", [mig_quote()]))
    store.record_run(make_run("aws", [make_quote()]))
    offers = {o.provider: o for o in current_offers(store.cursor(), utc_naive(NOW)).offers}
    assert (offers["vast"].gpu_fraction, offers["vast"].gpu_partition) == (pytest.approx(SEVENTH), "MIG 1g.10gb")
    assert (offers["aws"].gpu_fraction, offers["aws"].gpu_partition) == (None, None)
    assert SHEET_COLUMNS[-2:] == ("gpu_fraction", "gpu_partition") and SHEET_COLUMNS[:3] == (
        "provider",
        "region",
        "sku",
    )
    with serving(settings, store, NOW + timedelta(minutes=5)) as client:
        sheet = client.get("/export?format=csv&provider=vast").text.splitlines()
        assert sheet[0].endswith(",vcpus,memory_gib,gpu_fraction,gpu_partition")
        assert sheet[1].endswith(",0.1428571429,MIG 1g.10gb")
        listed = {o["provider"]: o for o in client.get("/offers").json()["offers"]}
        assert (listed["vast"]["gpu_memory_gb"], listed["vast"]["gpu_partition"]) == (10.0, "MIG 1g.10gb")
        assert (listed["aws"]["gpu_fraction"], listed["aws"]["gpu_partition"]) == (None, None)
        options = client.get("/cheapest?mem=16GB&provider=vast").json()["options"]
        assert [(o["gpu_count"], o["gpu_memory_gb"], o["gpu_fraction"], o["gpu_partition"]) for o in options] == [
            (2, 10.0, pytest.approx(SEVENTH), "MIG 1g.10gb")
        ]


def test_migration_6_adds_the_slice_columns_to_a_version_5_database(settings: Settings, monkeypatch) -> None:
    from pricedb import store as store_module

    monkeypatch.setattr(store_module, "MIGRATIONS", [m for m in schema.MIGRATIONS if m[0] <= 5])
    monkeypatch.setattr(store_module, "QUOTE_COLUMNS", schema.QUOTE_COLUMNS[: -len(schema.SLICE_COLUMNS)])
    old = PriceStore(settings)
    seed_fx(old)
    old.record_run(make_run("aws", [make_quote()]))
    old.close()
    monkeypatch.undo()

    upgraded = PriceStore(settings)
    for table in ("observations", "offers"):
        columns = [c[0] for c in upgraded.cursor().execute(f"DESCRIBE {table}").fetchall()]
        assert columns[-2:] == list(schema.SLICE_COLUMNS) and columns[2:] == list(schema.QUOTE_COLUMNS)
    (before,) = current_offers(upgraded.cursor(), utc_naive(NOW)).offers
    assert (before.gpu_fraction, before.gpu_partition, before.price) == (None, None, 21.957642)  # old rows: NULL
    upgraded.record_run(make_run("vast", [mig_quote()]))
    assert {o.gpu_partition for o in current_offers(upgraded.cursor(), utc_naive(NOW)).offers} == {None, "MIG 1g.10gb"}
    upgraded.close()
