"""CONTRACT §2 arithmetic, exactly, including the seed examples."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pricedb.fx import FxTable
from pricedb.models import FxRate, Pricing, Quote, Unit
from pricedb.normalize import normalize, term_hours_of
from pricedb.settings import Settings

SETTINGS = Settings()
ON = datetime(2026, 11, 29, 8, tzinfo=UTC)


def quote(
    price: float, currency: str = "CNY", unit: Unit = Unit.HOUR, count: int = 1, mem: float = 40.0, **kw
) -> Quote:
    return Quote(
        provider="test", region="r", sku="s", gpu_model="A100", gpu_memory_gb=mem, gpu_count=count,
        pricing=kw.pop("pricing", Pricing.ON_DEMAND), price=price, currency=currency, unit=unit,
        source_url="https://example.test/", observed_at=kw.pop("observed_at", ON), **kw,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("price", "mem", "expected"),
    [(10.0, 40.0, 0.25), (18.0, 80.0, 0.225), (22.0, 80.0, 0.275)],
)
def test_seed_examples(price: float, mem: float, expected: float) -> None:
    figures = normalize(quote(price, mem=mem), FxTable(), SETTINGS)
    assert figures.cny_per_hour == pytest.approx(price)
    assert figures.cny_per_gpu_hour == pytest.approx(price)
    assert figures.cny_per_gb_hour == pytest.approx(expected)
    assert figures.fx_rate == 1.0 and figures.fx_date is None


def test_usd_instance_price_through_eur_cross_rate(fx_table: FxTable) -> None:
    # p4d.24xlarge, us-east-1: 21.957642 USD per instance-hour, 8 × A100 40GB.
    figures = normalize(quote(21.957642, "USD", count=8, mem=40.0), fx_table, SETTINGS)
    rate = 6.8095 / 1.0163
    assert figures.fx_rate == pytest.approx(rate)
    assert figures.fx_date == date(2022, 7, 8)
    assert figures.cny_per_hour == pytest.approx(21.957642 * rate)
    assert figures.cny_per_gpu_hour == pytest.approx(21.957642 * rate / 8)
    assert figures.cny_per_gb_hour == pytest.approx(21.957642 * rate / 320)


def test_month_year_and_term_units(fx_table: FxTable) -> None:
    assert normalize(quote(7300.0, unit=Unit.MONTH), fx_table, SETTINGS).cny_per_hour == pytest.approx(10.0)
    assert normalize(quote(87600.0, unit=Unit.YEAR), fx_table, SETTINGS).cny_per_hour == pytest.approx(10.0)
    three_years = quote(262800.0, unit=Unit.TERM, term_hours=26280.0, pricing=Pricing.RESERVED_3Y)
    assert normalize(three_years, fx_table, SETTINGS).cny_per_hour == pytest.approx(10.0)
    custom = Settings(hours_per_month=720.0)
    assert normalize(quote(7200.0, unit=Unit.MONTH), fx_table, custom).cny_per_hour == pytest.approx(10.0)


def test_euro_and_inr(fx_table: FxTable) -> None:
    assert normalize(quote(1.0, "EUR"), fx_table, SETTINGS).cny_per_hour == pytest.approx(6.8095)
    assert normalize(quote(80.528, "INR"), fx_table, SETTINGS).cny_per_hour == pytest.approx(6.8095)


def test_no_rate_gives_null_figures_and_a_reason() -> None:
    figures = normalize(quote(3.0, "USD"), FxTable(), SETTINGS)
    assert figures.cny_per_hour is None and figures.cny_per_gb_hour is None and figures.fx_rate is None
    assert figures.fx_note == "no USD→CNY reference rate on or before 2026-11-29"


def test_rate_of_the_day_else_latest_earlier() -> None:
    table = FxTable.from_rates(
        [
            FxRate(date=date(2026, 11, 26), currency="USD", rate=1.0, source="t"),
            FxRate(date=date(2026, 11, 26), currency="CNY", rate=7.0, source="t"),
            FxRate(date=date(2026, 11, 27), currency="USD", rate=1.0, source="t"),
            FxRate(date=date(2026, 11, 27), currency="CNY", rate=7.2, source="t"),
            FxRate(date=date(2026, 11, 30), currency="USD", rate=1.0, source="t"),
            FxRate(date=date(2026, 11, 30), currency="CNY", rate=9.9, source="t"),
        ]
    )
    on_day = normalize(quote(1.0, "USD", observed_at=datetime(2026, 11, 27, 23, tzinfo=UTC)), table, SETTINGS)
    assert (on_day.fx_rate, on_day.fx_date) == (pytest.approx(7.2), date(2026, 11, 27))
    weekend = normalize(quote(1.0, "USD", observed_at=datetime(2026, 11, 29, tzinfo=UTC)), table, SETTINGS)
    assert (weekend.fx_rate, weekend.fx_date) == (pytest.approx(7.2), date(2026, 11, 27))
    before_any = normalize(quote(1.0, "USD", observed_at=datetime(2026, 11, 1, tzinfo=UTC)), table, SETTINGS)
    assert before_any.cny_per_hour is None


def test_reserved_terms() -> None:
    assert term_hours_of(Pricing.RESERVED_1Y, None, SETTINGS) == 8760
    assert term_hours_of(Pricing.RESERVED_3Y, None, SETTINGS) == 26280
    assert term_hours_of(Pricing.RESERVED_3Y, 2160.0, SETTINGS) == 2160.0
    assert term_hours_of(Pricing.ON_DEMAND, None, SETTINGS) is None


def test_term_price_needs_its_length() -> None:
    with pytest.raises(ValueError, match="term_hours"):
        quote(1.0, unit=Unit.TERM)
