"""GCP collector, parsing: A2 machine prices composed from the recorded SKU pages, per pricing and
region, every trap left out, shape changes caught, and the shared sanity checks passed."""

from __future__ import annotations

import copy
import json

import pytest

from collectors.base import RawResponse
from collectors.errors import ParseError
from collectors.gcp import GcpCollector
from collectors.gcp import skus as gcp_skus
from collectors.gcp.machines import MACHINE_TYPES
from collectors.gcp.skus import Part, classify
from collectors.sanity import check_quotes
from pricedb.models import Pricing, Unit
from pricedb.normalize import normalize
from tests.conftest import FIXTURES, OBSERVED, fetched_of, fixture_bytes

PAGES = ("skus_page1.json", "skus_page2.json", "skus_page3.json")
URLS = [route["url"] for route in json.loads((FIXTURES / "gcp" / "replay.json").read_text())["routes"]]
OD, SPOT, R1, R3 = Pricing.ON_DEMAND, Pricing.SPOT, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y
AMERICAS = ("us-central1", "us-east1", "us-west1")

# Per instance-hour, USD. On-demand figures are Google's public machine prices; see fixtures/README.md.
HIGHGPU = {
    "a2-highgpu-1g": (3.673385, 1.80385),
    "a2-highgpu-2g": (7.34677, 3.6077),
    "a2-highgpu-4g": (14.69354, 7.2154),
    "a2-highgpu-8g": (29.38708, 14.4308),
    "a2-megagpu-16g": (55.739504, 27.34384),
}
ULTRA_1G = {OD: 5.06879789, SPOT: 2.546656712, R1: 4.199690411, R3: 3.499997559}
EXPECTED = {
    **{(sku, region, OD): od for sku, (od, _) in HIGHGPU.items() for region in AMERICAS},
    **{(sku, region, SPOT): spot for sku, (_, spot) in HIGHGPU.items() for region in AMERICAS},
    **{(f"a2-ultragpu-{n}g", "us-central1", p): n * price for n in (1, 2, 4, 8) for p, price in ULTRA_1G.items()},
}
# Prices only traps carry: the DWS GPU, the APAC commitment, N1, licence, PD and Sydney SKUs.
TRAP_PRICES = {1.846198, 0.0230593, 2.961, 0.021925, 0.204, 0.00898}


def bodies() -> list[dict]:
    return [json.loads(fixture_bytes("gcp", name)) for name in PAGES]


def fetched(pages: list[dict] | None = None):
    pages = bodies() if pages is None else pages
    return fetched_of(
        *(
            RawResponse(url=url, fetched_at=OBSERVED, body=json.dumps(page).encode(), label=f"page {n}")
            for n, (url, page) in enumerate(zip(URLS, pages, strict=True), 1)
        )
    )


def all_skus(pages: list[dict]) -> list[dict]:
    return [sku for page in pages for sku in page["skus"]]


def sku_by_description(pages: list[dict], description: str) -> dict:
    return next(s for s in all_skus(pages) if s["description"] == description)


@pytest.fixture
def collector(settings) -> GcpCollector:
    return GcpCollector(settings)


@pytest.fixture
def quotes(collector):
    return collector.parse(fetched())


def test_parse_gives_exactly_the_expected_offers(quotes) -> None:
    got = {(q.sku, q.region, q.pricing): q.price for q in quotes}
    assert got.keys() == EXPECTED.keys()
    for key, price in EXPECTED.items():
        assert got[key] == pytest.approx(price, abs=1e-8), key


def test_every_quote_is_per_instance_with_the_right_hardware(quotes) -> None:
    shapes = {m.name: m for m in MACHINE_TYPES}
    for q in quotes:
        machine = shapes[q.sku]
        memory = 80.0 if q.sku.startswith("a2-ultragpu") else 40.0
        assert (q.provider, q.gpu_model, q.gpu_memory_gb, q.gpu_count) == ("gcp", "A100", memory, machine.gpus)
        assert (q.form_factor, q.interconnect, q.currency, q.unit) == ("SXM4", "NVLink", "USD", Unit.HOUR)
        assert (q.billing_increment_s, q.billing_minimum_s, q.tax_included) == (1, 60, False)
        assert q.observed_at == OBSERVED and q.source_url in URLS and "key=" not in q.source_url
        assert q.term_hours == {R1: 8760, R3: 26280}.get(q.pricing)


def test_notes_spell_out_the_composition(quotes) -> None:
    by_key = {(q.sku, q.region, q.pricing): q for q in quotes}
    eight = by_key[("a2-ultragpu-8g", "us-central1", OD)].notes
    assert eight.startswith(
        "8 × A100 80GB GPU 3.92808 + 96 vCPU × 0.031611 + 1360 GiB × 0.004237 + "
        "3000 GB local SSD × 0.08/GB-month ÷ 730 = 40.550383 USD/h (on-demand)"
    )
    assert "81F1-3B5D-57C2 'Nvidia Tesla A100 80GB GPU running in Americas'" in eight
    one = by_key[("a2-highgpu-1g", "us-east1", SPOT)].notes
    assert one.startswith("1 × A100 40GB GPU 1.4341 + 12 vCPU × 0.01581 + 85 GiB × 0.002118 = 1.803850 USD/h (Spot")
    assert "every hour of the term" in by_key[("a2-ultragpu-1g", "us-central1", R3)].notes


def test_traps_are_left_out(quotes) -> None:
    notes = " ".join(q.notes or "" for q in quotes)
    assert "E4A7-33C0-91D5" not in notes and "DWS" not in notes  # the DWS GPU is never a part
    assert not any(f"{price:g}" in notes for price in TRAP_PRICES)
    assert {q.region for q in quotes} == set(AMERICAS)  # no asia-east1 offer from the APAC commitment


def test_a100_80gb_only_where_every_part_is_priced(quotes) -> None:
    """The 80GB GPU SKUs also cover us-east4/us-east5, but no A2 core/RAM SKU in the pages does."""
    ultra = {q.region for q in quotes if q.sku.startswith("a2-ultragpu")}
    assert ultra == {"us-central1"}


def test_no_highgpu_commitment_without_an_a100_40gb_commitment_sku(quotes) -> None:
    assert not [q for q in quotes if q.sku.startswith(("a2-highgpu", "a2-megagpu")) and q.pricing.is_reserved]


def test_dropping_one_part_drops_the_machine_in_that_pricing_only(collector) -> None:
    pages = bodies()
    for page in pages:
        page["skus"] = [s for s in page["skus"] if s["description"] != "SSD backed Local Storage"]
    quotes = collector.parse(fetched(pages))
    assert not [q for q in quotes if q.sku.startswith("a2-ultragpu") and q.pricing is OD]
    assert [q for q in quotes if q.sku.startswith("a2-ultragpu") and q.pricing is SPOT]
    assert [q for q in quotes if q.sku == "a2-highgpu-1g" and q.pricing is OD]


def test_spot_is_never_dearer_than_on_demand_and_sanity_checks_pass(quotes, fx_table, settings) -> None:
    on_demand = {(q.sku, q.region): q.price for q in quotes if q.pricing is OD}
    for q in quotes:
        if q.pricing is SPOT:
            assert q.price < on_demand[(q.sku, q.region)]
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes)


def test_commitments_cost_the_whole_term(quotes, fx_table, settings) -> None:
    one = next(q for q in quotes if (q.sku, q.pricing) == ("a2-ultragpu-1g", R1))
    usd_cny = 6.8095 / 1.0163
    assert normalize(one, fx_table, settings).cny_per_hour == pytest.approx(4.199690411 * usd_cny)
    assert one.term_hours == 8760


def test_regions_setting_narrows_the_offers(settings) -> None:
    narrowed = GcpCollector(settings.model_copy(update={"regions": {"gcp": ["us-west1"]}})).parse(fetched())
    assert {q.region for q in narrowed} == {"us-west1"}
    assert {q.sku for q in narrowed} == set(HIGHGPU)


def test_a_regional_sku_wins_over_the_multi_regional_one(collector) -> None:
    pages = bodies()
    regional = copy.deepcopy(sku_by_description(pages, "Nvidia Tesla A100 GPU running in Americas"))
    regional.update(skuId="0F0F-1234-ABCD", description="Nvidia Tesla A100 GPU running in Oregon")
    regional["serviceRegions"] = ["us-west1"]
    regional["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units="3", nanos=0)
    pages[0]["skus"].append(regional)
    by_key = {(q.sku, q.region, q.pricing): q.price for q in collector.parse(fetched(pages))}
    assert by_key[("a2-highgpu-1g", "us-west1", OD)] == pytest.approx(3.673385 - 2.933908 + 3)
    assert by_key[("a2-highgpu-1g", "us-east1", OD)] == pytest.approx(3.673385)


RAW = RawResponse(url=URLS[0], fetched_at=OBSERVED)


def _sku(description: str) -> dict:
    return copy.deepcopy(sku_by_description(bodies(), description))


@pytest.mark.parametrize(
    ("description", "change", "expected"),
    [
        ("Nvidia Tesla A100 GPU running in Americas", {}, (Part.GPU40, OD)),
        ("Nvidia Tesla A100 80GB GPU running in Americas", {}, (Part.GPU80, OD)),
        ("A2 Instance Core running in Americas", {}, (Part.CORE, OD)),
        ("Spot Preemptible A2 Instance Ram running in Americas", {}, (Part.RAM, SPOT)),
        ("SSD backed Local Storage", {}, (Part.SSD, OD)),
        ("Commitment v1: A2 Ram in Americas for 3 Years", {}, (Part.RAM, R3)),
        # filed OnDemand, but "attached to Spot Preemptible VMs": spot
        ("SSD backed Local Storage attached to Spot Preemptible VMs", {"usageType": "OnDemand"}, (Part.SSD, SPOT)),
        ("A2 Instance Core running in Americas", {"description": "A2 Custom Instance Core running in Americas"},
         gcp_skus.SKIP_OTHER),
        ("Nvidia Tesla A100 GPU running in Americas",
         {"description": "Nvidia Tesla A100 GPU attached to Calendar mode reservations running in Americas"},
         gcp_skus.SKIP_EXCLUDED),
        ("Nvidia Tesla A100 GPU running in Americas", {"description": "Reserved Nvidia Tesla A100 GPU in Americas"},
         gcp_skus.SKIP_EXCLUDED),
        ("Nvidia Tesla A100 GPU running in Americas", {"description": "Nvidia H100 80GB GPU running in Americas"},
         gcp_skus.SKIP_OTHER_GPU),
        ("Nvidia Tesla A100 GPU running in Americas", {"usageType": "FlexCommit1Yr"}, gcp_skus.SKIP_USAGE),
        ("A2 Instance Ram running in Americas", {"resourceGroup": "N1Standard"}, gcp_skus.SKIP_OTHER),
    ],
)  # fmt: skip
def test_each_sku_rule_on_its_own(description, change, expected) -> None:
    sku = _sku(description)
    if "description" in change:
        sku["description"] = change.pop("description")
    sku["category"].update(change)
    verdict = classify(sku, RAW)
    if isinstance(expected, tuple):
        assert (verdict.part, verdict.pricing) == expected
    else:
        assert verdict == expected


def test_price_is_units_plus_nanos_of_the_tier_starting_at_zero() -> None:
    sku = _sku("Nvidia Tesla A100 GPU running in Americas")
    rates = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    rates.insert(0, {"startUsageAmount": 100, "unitPrice": {"currencyCode": "USD", "units": "1", "nanos": 0}})
    assert classify(sku, RAW).price == 2.933908
    rates[1]["unitPrice"].update(units="0", nanos=0)
    assert classify(sku, RAW) == gcp_skus.SKIP_ZERO


def test_the_latest_pricing_info_entry_is_used() -> None:
    sku = _sku("A2 Instance Core running in Americas")
    older = copy.deepcopy(sku["pricingInfo"][0])
    older["effectiveTime"] = "2021-01-01T00:00:00Z"
    older["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = 99_000_000
    sku["pricingInfo"].append(older)
    assert classify(sku, RAW).price == 0.031611


def test_a_part_billed_in_an_unexpected_unit_is_a_parse_error(collector) -> None:
    pages = bodies()
    ram = sku_by_description(pages, "A2 Instance Ram running in Americas")
    ram["pricingInfo"][0]["pricingExpression"]["usageUnit"] = "GiBy.mo"
    with pytest.raises(ParseError, match=r"'A2 Instance Ram running in Americas' is billed per 'GiBy.mo'"):
        collector.parse(fetched(pages))


@pytest.mark.parametrize("path", ["description", "category", "pricingInfo"])
def test_a_sku_missing_a_needed_field_is_a_parse_error_naming_it(collector, path) -> None:
    pages = bodies()
    del sku_by_description(pages, "Nvidia Tesla A100 GPU running in Americas")[path]
    with pytest.raises(ParseError, match=f"no '{path}"):
        collector.parse(fetched(pages))


def test_no_a100_sku_is_a_parse_error_with_the_reasons(collector) -> None:
    pages = bodies()
    for page in pages:
        page["skus"] = [s for s in page["skus"] if s["category"]["resourceGroup"] != "GPU"]
    with pytest.raises(ParseError, match=r"no A100 GPU SKU among the \d+ SKUs read .*not a part of an A2 machine"):
        collector.parse(fetched(pages))


def test_gpus_without_any_host_part_is_a_parse_error_not_an_empty_success(collector) -> None:
    pages = bodies()
    for page in pages:
        page["skus"] = [s for s in page["skus"] if s["category"]["resourceGroup"] == "GPU"]
    with pytest.raises(ParseError, match=r"no A2 machine type has all its parts priced anywhere: .*A2 vCPU"):
        collector.parse(fetched(pages))


def test_a_page_without_skus_is_a_parse_error_unless_it_is_an_empty_page(collector) -> None:
    pages = bodies()
    pages[1] = {"error": "moved"}
    with pytest.raises(ParseError, match=r"no 'skus' in the response \(found: error\)"):
        collector.parse(fetched(pages))
    pages = bodies()
    del pages[1]["skus"]  # Google's JSON leaves an empty list out
    assert len(collector.parse(fetched(pages))) < len(EXPECTED)


def test_non_json_body_is_a_parse_error(collector) -> None:
    with pytest.raises(ParseError, match="not JSON"):
        collector.parse(fetched_of(RawResponse(url=URLS[0], fetched_at=OBSERVED, body=b"<html>busy</html>")))


def test_fixture_pages_have_the_real_sku_shape() -> None:
    for page in bodies():
        assert set(page) == {"skus", "nextPageToken"}
        for sku in page["skus"]:
            assert list(sku) == [
                "name", "skuId", "description", "category", "serviceRegions", "pricingInfo", "serviceProviderName",
                "geoTaxonomy",
            ]  # fmt: skip
            assert sku["name"] == f"services/6F81-5844-456A/skus/{sku['skuId']}"
            money = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]
            assert isinstance(money["units"], str) and isinstance(money["nanos"], int)
    assert [page["nextPageToken"] for page in bodies()][-1] == ""
