"""E2E Networks, parsing the pricing page: every GPU plan of the recorded page, each offer's card,
memory and count checked against its row; the exact A100 offers with their prices; a card the table
lacks reported, not guessed; each pricing model normalized INR → CNY with the ECB fixture rates, GST
and per-minute billing recorded; a changed page failing loudly. Offline: fixtures only."""

from __future__ import annotations

import re

import pytest
from selectolax.lexbor import LexborHTMLParser

from api.cheapest import billed_hours_for, job_cost
from collectors.base import Fetched
from collectors.e2e import E2eCollector
from collectors.e2e.collector import PRICING_URL
from collectors.e2e.page import Term, gpu_count_of, read_price
from collectors.e2e.plans import PLACEHOLDER_NOTE
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from pricedb.models import Availability, Pricing, Unit
from pricedb.normalize import normalize
from pricedb.queries import Offer
from pricedb.settings import Settings
from tests.conftest import fetched_of, fixture_bytes, raw_fixture

OD, MO, R1 = Pricing.ON_DEMAND, Pricing.MONTHLY, Pricing.RESERVED_1Y
INR_TO_CNY = 6.8095 / 80.5280  # ECB 2022-07-08 (fixtures/fx): CNY and INR per EUR

# (sku, pricing) -> INR as published (per hour; per whole term for the committed plans): the A100 plans
A100_EXPECTED = {
    ("GDC3.A10080-16.115GB", OD): 226.0,
    ("GDC3.A10080-16.115GB", MO): 146000.0,
    ("GDC3.A10080-16.115GB", R1): 1584000.0,
    ("GDC3.2xA10080-32.230GB", OD): 452.0,
    ("GDC3.2xA10080-32.230GB", MO): 292000.0,
    ("GDC3.2xA10080-32.230GB", R1): 3168000.0,
    ("GDC3.4xA10080-64.460GB", OD): 904.0,
    ("GDC3.4xA10080-64.460GB", MO): 584000.0,
    ("GDC3.4xA10080-64.460GB", R1): 6336000.0,
    ("GDC3.8xA10080-128.920GB", OD): 1808.0,
    ("GDC3.8xA10080-128.920GB", MO): 1168000.0,
    ("GDC3.8xA10080-128.920GB", R1): 12672000.0,
    ("GDC.A10040-16.115GB", OD): 170.0,
    ("GDC.A10040-16.115GB", MO): 110000.0,
    ("GDC.A10040-16.115GB", R1): 1190000.0,
    ("GDC.2xA10040-32.230GB", OD): 340.0,
    ("GDC.2xA10040-32.230GB", MO): 220000.0,
    ("GDC.2xA10040-32.230GB", R1): 2380000.0,
    ("GDC.4xA10040-64.460GB", OD): 680.0,
    ("GDC.4xA10040-64.460GB", MO): 440000.0,
    ("GDC.8xA10040-128.920GB", OD): 1360.0,
}
UNKNOWN = {"GDC.RTX3080-8.30GB"}  # an RTX 3080 10 GB: a card the card table does not have
# The page's price columns (after Plan, GPU, vCPUs, RAM, Storage) -> the pricing each becomes, if any.
COLUMNS = ((5, OD), (6, MO), (7, None), (8, R1))  # Hourly, 30 Days, 90 Days (no pricing), 365 Days
GPU_CELL = re.compile(r"^(\d+) x (.+) (\d+) GB$")  # "2 x A100 80 GB"
# the published figures in the fixture (fixtures/README.md): E2E's own A100 figure, a crawl's H100 one
REAL = {("GDC3.A10080-16.115GB", OD), ("GDC-A.H100-1.120GB", OD)}


def page(name: str = "pricing.html") -> Fetched:
    return fetched_of(raw_fixture("e2e", name, PRICING_URL, label="pricing page"))


@pytest.fixture
def quotes():
    return E2eCollector(Settings()).parse(page())


def by_key(quotes):
    return {(q.sku, q.pricing): q for q in quotes}


def gpu_rows() -> dict[str, list[str]]:
    """The GPU table's rows of the recorded page, cell texts by plan name (the first of a plan shown twice)."""
    page_tree = LexborHTMLParser(fixture_bytes("e2e", "pricing.html").decode())
    rows: dict[str, list[str]] = {}
    for tr in page_tree.css("table.gpu-pricing-table tbody tr"):
        cells = [td.text(strip=True) for td in tr.css("td")]
        rows.setdefault(cells[0], cells)
    return rows


def test_every_offer_has_the_card_memory_count_and_prices_of_its_row(quotes) -> None:
    rows = gpu_rows()
    offered = {(sku, pricing) for sku, cells in rows.items() for col, pricing in COLUMNS
               if pricing and any(ch.isdigit() for ch in cells[col])}  # fmt: skip
    assert set(by_key(quotes)) == {(sku, pricing) for sku, pricing in offered if sku not in UNKNOWN}
    assert len(quotes) == len(by_key(quotes))  # no duplicates
    for q in quotes:
        count, card, memory = GPU_CELL.match(rows[q.sku][1]).groups()
        assert (q.gpu_model, q.gpu_memory_gb, q.gpu_count) == (card.replace(" ", ""), float(memory), int(count)), q.sku
        assert (q.vcpus, q.memory_gib) == (int(rows[q.sku][2]), float(rows[q.sku][3].removesuffix(" GB")))
        column = next(col for col, pricing in COLUMNS if pricing is q.pricing)
        assert q.price == float(re.sub(r"[^\d.]", "", rows[q.sku][column])), (q.sku, q.pricing)
    assert len({q.gpu_model for q in quotes}) == 10


def test_exactly_the_a100_offers_of_the_page_with_their_published_prices(quotes) -> None:
    a100 = {key: q.price for key, q in by_key(quotes).items() if q.gpu_model == "A100"}
    assert a100 == A100_EXPECTED


def test_a_card_the_table_lacks_is_reported_by_plan_not_guessed() -> None:
    collector = E2eCollector(Settings())
    assert not any(q.sku in UNKNOWN for q in collector.parse(page()))
    assert collector.left_out(page()) == [
        "unknown GPU, not collected: plan GDC.RTX3080-8.30GB (no GPU rule matches '1 x RTX 3080 10 GB')"
    ]


def test_every_quote_is_inr_without_gst_and_says_so(quotes) -> None:
    for q in quotes:
        assert (q.provider, q.region, q.currency) == ("e2e", "india", "INR")
        assert q.tax_included is False
        assert "excludes 18% GST" in q.notes
        assert q.source_url == PRICING_URL
        assert q.availability is Availability.UNKNOWN
        assert q.billing_increment_s == 60 and q.billing_minimum_s == 0


def test_units_per_pricing_model(quotes) -> None:
    for q in quotes:
        if q.pricing is OD:
            assert (q.unit, q.term_hours) == (Unit.HOUR, None)
            assert "billed per minute" in q.notes
        elif q.pricing is MO:
            assert (q.unit, q.term_hours) == (Unit.TERM, 720.0)
            assert "30-day committed plan, charged upfront for the whole term" in q.notes
        else:
            assert (q.unit, q.term_hours) == (Unit.TERM, 8760.0)
            assert "365-day committed plan" in q.notes


def test_the_90_day_plan_is_not_collected_but_kept_in_the_notes(quotes) -> None:
    offers = by_key(quotes)
    assert "a 90-day committed plan is also published (₹4,20,000)" in offers[("GDC3.A10080-16.115GB", MO)].notes
    assert "90-day" not in offers[("GDC3.A10080-16.115GB", R1)].notes
    assert "90-day" not in offers[("GDC.2xA10040-32.230GB", MO)].notes  # that plan has no 90-day price ("—")


def test_placeholders_are_marked_and_the_published_figure_is_not(quotes) -> None:
    for q in quotes:
        assert (PLACEHOLDER_NOTE in q.notes) is ((q.sku, q.pricing) not in REAL), (q.sku, q.pricing)
    assert "16 vCPU, 115 GB RAM, 1500 GB storage" in by_key(quotes)[("GDC3.A10080-16.115GB", OD)].notes


def test_fixture_quotes_pass_the_shared_sanity_checks(quotes, fx_table, settings) -> None:
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes)


def test_on_demand_normalizes_inr_to_cny_per_hour_gpu_and_gb(quotes, fx_table, settings) -> None:
    figures = normalize(by_key(quotes)[("GDC3.A10080-16.115GB", OD)], fx_table, settings)
    assert figures.fx_rate == pytest.approx(INR_TO_CNY)
    assert figures.cny_per_hour == pytest.approx(226 * INR_TO_CNY)  # ≈ ¥19.11
    assert figures.cny_per_gb_hour == pytest.approx(226 * INR_TO_CNY / 80)
    eight = normalize(by_key(quotes)[("GDC3.8xA10080-128.920GB", OD)], fx_table, settings)
    assert eight.cny_per_gpu_hour == pytest.approx(1808 * INR_TO_CNY / 8)


def test_committed_terms_normalize_over_their_own_hours(quotes, fx_table, settings) -> None:
    monthly = normalize(by_key(quotes)[("GDC3.A10080-16.115GB", MO)], fx_table, settings)
    assert monthly.cny_per_hour == pytest.approx(146000 * INR_TO_CNY / 720)
    yearly = normalize(by_key(quotes)[("GDC.A10040-16.115GB", R1)], fx_table, settings)
    assert yearly.cny_per_gb_hour == pytest.approx(1190000 * INR_TO_CNY / 8760 / 40)


def offer_of(quote, fx_table, settings) -> Offer:
    f = normalize(quote, fx_table, settings)
    fields = quote.model_dump(exclude={"price_steps"}) | {"pricing": quote.pricing.value, "unit": quote.unit.value}
    fields["availability"] = quote.availability.value
    return Offer(
        observation_id=1, run_id=1, **fields, price_steps=(), offline=True, fx_rate=f.fx_rate, fx_date=f.fx_date,
        fx_note=None, cny_per_hour=f.cny_per_hour, cny_per_gpu_hour=f.cny_per_gpu_hour,
        cny_per_gb_hour=f.cny_per_gb_hour, stale=False,
    )  # fmt: skip


def test_job_cost_of_each_pricing_model(quotes, fx_table, settings) -> None:
    offers = {k: offer_of(q, fx_table, settings) for k, q in by_key(quotes).items()}
    on_demand = job_cost(offers[("GDC3.A10080-16.115GB", OD)], 200.0, settings)
    assert on_demand.total_cny == pytest.approx(200 * 226 * INR_TO_CNY)
    # per-minute billing: 10.5 minutes are billed as 11
    assert billed_hours_for(offers[("GDC3.A10080-16.115GB", OD)], 10.5 / 60) == pytest.approx(11 / 60)
    # a 30-day plan is bought in whole 30-day terms (not 730-hour months): 200 h = one term, 721 h = two
    thirty = offers[("GDC3.A10080-16.115GB", MO)]
    one = job_cost(thirty, 200.0, settings)
    assert (one.billed_hours, one.total_cny) == (pytest.approx(720.0), pytest.approx(146000 * INR_TO_CNY))
    assert "1 term(s) of 720 h" in one.basis
    two = job_cost(thirty, 721.0, settings)
    assert two.total_cny == pytest.approx(2 * 146000 * INR_TO_CNY)
    # the 365-day plan: the whole year is paid, however short the job
    year = job_cost(offers[("GDC3.A10080-16.115GB", R1)], 200.0, settings)
    assert (year.billed_hours, year.total_cny) == (pytest.approx(8760.0), pytest.approx(1584000 * INR_TO_CNY))


def test_a_page_without_gpu_rows_fails_instead_of_storing_nothing() -> None:
    with pytest.raises(ParseError, match=r"no priced GPU plan in the GPU price table \(0 rows\); has the page changed"):
        E2eCollector(Settings()).parse(page("pricing_no_gpu_rows.html"))


def test_a_redesigned_page_without_a_gpu_table_fails_listing_the_tables_seen() -> None:
    with pytest.raises(ParseError, match=r"no GPU price table .*tables seen: Plan \| vCPUs \| RAM"):
        E2eCollector(Settings()).parse(page("pricing_redesigned.html"))


def test_an_error_page_served_with_200_is_a_parse_error_not_an_empty_result() -> None:
    with pytest.raises(ParseError, match=r"no GPU price table .*no <table> at all"):
        E2eCollector(Settings()).parse(page("error_503.html"))


def test_an_unreadable_price_is_an_error_naming_the_plan() -> None:
    raw = raw_fixture("e2e", "pricing.html", PRICING_URL)
    broken = raw.body.replace("₹1,808/hr".encode(), "₹1,808 or ₹1,900/hr".encode())
    with pytest.raises(ParseError, match=r"plan 'GDC3.8xA10080-128.920GB' \(row 5\): cannot read the hourly price"):
        E2eCollector(Settings()).parse(fetched_of(raw.__class__(raw.url, raw.fetched_at, body=broken)))


def test_a_gpu_cell_without_memory_is_an_error_not_a_guess() -> None:
    raw = raw_fixture("e2e", "pricing.html", PRICING_URL)
    broken = raw.body.replace(b"<td>1 x A100 40 GB</td>", b"<td>1 x A100</td>")
    with pytest.raises(ParseError, match=r"'GDC.A10040-16.115GB': cannot read the GPU memory"):
        E2eCollector(Settings()).parse(fetched_of(raw.__class__(raw.url, raw.fetched_at, body=broken)))


@pytest.mark.parametrize(
    ("text", "term", "expected"),
    [
        ("₹226/hr", Term.HOURLY, (226.0, "INR", "hour")),
        ("₹1,26,72,000", Term.DAYS_365, (12672000.0, "INR", "term")),  # Indian digit grouping
        ("Rs. 1,46,000", Term.DAYS_30, (146000.0, "INR", "term")),
        ("$2.80/hr", Term.HOURLY, (2.8, "USD", "hour")),
        ("₹190/hr", Term.DAYS_365, (190.0, "INR", "hour")),  # an effective rate shown in a committed column
        ("₹1,40,000/mo", Term.DAYS_365, (140000.0, "INR", "month")),
    ],
)
def test_price_cells(text: str, term: Term, expected: tuple[float, str, str]) -> None:
    price = read_price(text, term)
    assert (price.amount, price.currency, price.per) == expected


@pytest.mark.parametrize("text", ["—", "NA", "Contact Sales", ""])
def test_cells_without_digits_mean_not_offered(text: str) -> None:
    assert read_price(text, Term.DAYS_90) is None


@pytest.mark.parametrize("text", ["226", "€226/hr", "₹226 – ₹240"])
def test_cells_with_digits_that_cannot_be_read_are_errors(text: str) -> None:
    with pytest.raises(ParseError):
        read_price(text, Term.HOURLY)


@pytest.mark.parametrize(("text", "count"), [("1 x A100 80 GB", 1), ("8xA100-80GB", 8), ("A100 80GB × 4", 4)])
def test_gpu_count_spellings(text: str, count: int) -> None:
    assert gpu_count_of(text) == count


def test_the_vcpu_and_ram_cells_become_the_host_shape(quotes) -> None:
    shapes = {(q.sku, q.vcpus, q.memory_gib) for q in quotes}
    assert ("GDC3.A10080-16.115GB", 16, 115.0) in shapes and ("GDC3.8xA10080-128.920GB", 128, 920.0) in shapes
    assert all(vcpus and memory for _, vcpus, memory in shapes)
