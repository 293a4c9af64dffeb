"""GCP collector, parsing: A2 machine and N1 + attached GPU prices composed from the recorded SKU
pages (A3 and G2 from SKUs added in the tests), per pricing and region, every offer's card, memory
and count checked, every trap left out, shape changes caught, and the shared sanity checks passed."""

from __future__ import annotations

import copy
import json

import pytest

from collectors.base import RawResponse
from collectors.errors import ParseError
from collectors.gcp import GcpCollector
from collectors.gcp import skus as gcp_skus
from collectors.gcp.machines import MACHINE_TYPES
from collectors.gcp.skus import CORE, GPU, LOCAL_SSD, RAM, Part, classify
from collectors.sanity import check_quotes
from pricedb.card_names import identify
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
A100_EXPECTED = {
    **{(sku, region, OD): od for sku, (od, _) in HIGHGPU.items() for region in AMERICAS},
    **{(sku, region, SPOT): spot for sku, (_, spot) in HIGHGPU.items() for region in AMERICAS},
    **{(f"a2-ultragpu-{n}g", "us-central1", p): n * price for n in (1, 2, 4, 8) for p, price in ULTRA_1G.items()},
}
# N1 + attached GPUs, on-demand: n GPUs at Google's list price on n1-standard-4n (0.031611 per vCPU, 0.004237 per GiB).
N1_GPUS = {"nvidia-tesla-t4": (0.35, (1, 2, 4), AMERICAS), "nvidia-tesla-p100": (1.46, (1, 2, 4), AMERICAS),
           "nvidia-tesla-v100": (2.48, (1, 2, 4, 8), ("us-central1", "us-west1"))}  # fmt: skip
EXPECTED = A100_EXPECTED | {
    (f"n1-standard-{4 * n}+{n}x{gpu}", region, OD): n * price + 4 * n * 0.031611 + 15 * n * 0.004237
    for gpu, (price, counts, regions) in N1_GPUS.items()
    for n in counts
    for region in regions
}
# What Google publishes per GPU (its GPU and machine-type pages; independent of collectors.gcp.gpus):
# the card each accelerator is, and its memory in GB.
PUBLISHED_CARDS = {"nvidia-tesla-a100": ("NVIDIA A100", 40), "nvidia-a100-80gb": ("NVIDIA A100", 80),
                   "nvidia-tesla-t4": ("NVIDIA T4", 16), "nvidia-tesla-p100": ("NVIDIA P100", 16),
                   "nvidia-tesla-v100": ("NVIDIA V100", 16), "nvidia-h100-80gb": ("NVIDIA H100", 80),
                   "nvidia-l4": ("NVIDIA L4", 24)}  # fmt: skip
PUBLISHED_MACHINES = {**{f"a2-highgpu-{n}g": ("nvidia-tesla-a100", n) for n in (1, 2, 4, 8)},
                      "a2-megagpu-16g": ("nvidia-tesla-a100", 16),
                      **{f"a2-ultragpu-{n}g": ("nvidia-a100-80gb", n) for n in (1, 2, 4, 8)}}  # fmt: skip
# Prices only traps carry: the DWS GPU, the APAC commitment, licence, PD, Sydney, A3 Mega and T4 workstation SKUs.
TRAP_PRICES = {1.846198, 0.0230593, 2.961, 0.021925, 0.204, 0.00898, 11.06, 0.5713}


def published(sku: str) -> tuple[str, int]:
    """(accelerator id, GPUs) of an offer's machine: Google's table, or the N1 SKU's own words."""
    if sku.startswith("n1-standard-"):
        count, _, accelerator = sku.partition("+")[2].partition("x")
        return accelerator, int(count)
    return PUBLISHED_MACHINES[sku]


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


def test_every_offer_has_the_card_memory_and_count_google_publishes_and_its_gpu_sku_names_it(quotes) -> None:
    skus = {s["skuId"]: s for s in all_skus(bodies())}
    for q in quotes:
        accelerator, count = published(q.sku)
        card, memory = PUBLISHED_CARDS[accelerator]
        assert (q.gpu_model, q.gpu_memory_gb, q.gpu_count) == (identify(card).model, memory, count), q.sku
        gpu_sku = skus[q.notes.split("SKUs ")[1].split(" ")[0]]  # the first SKU of the sum is the GPU's
        assert gpu_sku["category"]["resourceGroup"] == "GPU"
        assert card.removeprefix("NVIDIA ") in gpu_sku["description"], q.sku
        assert (f"{memory}GB" in gpu_sku["description"]) == (q.sku.startswith("a2-ultragpu")), q.sku
        assert q.gpu_fraction is None and q.gpu_partition is None


def test_every_quote_is_per_instance_with_the_right_hardware(quotes) -> None:
    shapes = {m.name: m for m in MACHINE_TYPES}
    for q in quotes:
        machine = shapes[q.sku]
        assert (q.provider, q.gpu_count, q.vcpus, q.memory_gib) == ("gcp", machine.gpus, machine.vcpus, machine.ram_gib)
        if q.gpu_model == "A100":
            assert (q.form_factor, q.interconnect) == ("SXM4", "NVLink")
        assert (q.currency, q.unit) == ("USD", Unit.HOUR)
        assert (q.billing_increment_s, q.billing_minimum_s, q.tax_included) == (1, 60, False)
        assert q.observed_at == OBSERVED and q.source_url in URLS and "key=" not in q.source_url
        assert q.term_hours == {R1: 8760, R3: 26280}.get(q.pricing)


def test_the_a100_offers_keep_their_meaning(quotes) -> None:
    got = {(q.sku, q.region, q.pricing): q.price for q in quotes if q.gpu_model == "A100"}
    assert got == pytest.approx(A100_EXPECTED, abs=1e-8)


def test_n1_offers_say_their_host(quotes) -> None:
    (t4,) = [q for q in quotes if (q.sku, q.region) == ("n1-standard-8+2xnvidia-tesla-t4", "us-east1")]
    assert t4.notes.startswith(
        "2 × T4 GPU 0.35 + 8 vCPU × 0.031611 + 30 GiB × 0.004237 = 1.079998 USD/h (on-demand); "
        "Google prices the parts, not the machine; the host is n1-standard-8, one choice of many"
    )
    assert not [q for q in quotes if q.sku.startswith("n1-") and q.pricing is not OD]  # no N1 spot / CUD SKU here


def _with(pages: list[dict], template: str, **changes) -> None:
    """A copy of the SKU described `template`, changed, added to the first page (prices in tests only)."""
    sku = copy.deepcopy(sku_by_description(pages, template))
    price = changes.pop("price")
    sku.update(skuId=changes.pop("skuId"), description=changes.pop("description"))
    sku["category"].update(changes)
    money = sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]
    money.update(units=str(int(price)), nanos=round((price - int(price)) * 1e9))
    pages[0]["skus"].append(sku)


def test_g2_and_a3_machine_types_compose_from_their_family_s_skus(collector) -> None:
    """G2 (L4) and A3 (H100 80GB): each from its own GPU, core and RAM SKUs (figures made up for the test)."""
    pages = bodies()
    _with(
        pages,
        "Nvidia Tesla T4 GPU running in Americas",
        skuId="T1",
        description="Nvidia L4 GPU running in Americas",
        price=0.5,
    )
    _with(
        pages,
        "N1 Predefined Instance Core running in Americas",
        skuId="T2",
        description="G2 Instance Core running in Americas",
        price=0.02,
    )
    _with(
        pages,
        "N1 Predefined Instance Ram running in Americas",
        skuId="T3",
        description="G2 Instance Ram running in Americas",
        price=0.003,
    )
    _with(
        pages,
        "Nvidia Tesla T4 GPU running in Americas",
        skuId="T4",
        description="Nvidia H100 80GB GPU running in Americas",
        price=10.0,
    )
    _with(
        pages,
        "N1 Predefined Instance Core running in Americas",
        skuId="T5",
        description="A3 Instance Core running in Americas",
        price=0.03,
    )
    _with(
        pages,
        "N1 Predefined Instance Ram running in Americas",
        skuId="T6",
        description="A3 Instance Ram running in Americas",
        price=0.004,
    )
    by_key = {(q.sku, q.region, q.pricing): q for q in collector.parse(fetched(pages))}
    g2 = by_key[("g2-standard-24", "us-east1", OD)]
    assert (g2.gpu_model, g2.gpu_memory_gb, g2.gpu_count) == ("L4", 24.0, 2)
    assert g2.price == pytest.approx(2 * 0.5 + 24 * 0.02 + 96 * 0.003)
    a3 = by_key[("a3-highgpu-8g", "us-central1", OD)]
    assert (a3.gpu_model, a3.gpu_memory_gb, a3.gpu_count, a3.form_factor) == ("H100", 80.0, 8, "SXM5")
    assert a3.price == pytest.approx(8 * 10 + 208 * 0.03 + 1872 * 0.004 + 6000 * 0.08 / 730)


def test_a_gpu_sku_the_card_table_does_not_know_is_reported_with_its_count(collector) -> None:
    pages = bodies()
    _with(
        pages,
        "Nvidia Tesla T4 GPU running in Americas",
        skuId="U1",
        description="Nvidia Tesla Z9 GPU running in Americas",
        price=1.0,
    )
    quotes, refused = collector.parse_report(fetched(pages))
    assert quotes and refused == [{
        "offer": "Nvidia Tesla Z9 GPU running in Americas",
        "reason": f"unknown GPU, not collected: {gcp_skus.SKIP_UNKNOWN_GPU} (1 items)",
    }]  # fmt: skip
    assert collector.parse_report(fetched())[1] == []  # the recorded pages name only known cards


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
    assert {q.sku for q in narrowed} == {sku for sku, region, _ in EXPECTED if region == "us-west1"}


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
        ("Nvidia Tesla A100 GPU running in Americas", {}, (Part(GPU, "nvidia-tesla-a100"), OD)),
        ("Nvidia Tesla A100 80GB GPU running in Americas", {}, (Part(GPU, "nvidia-a100-80gb"), OD)),
        ("A2 Instance Core running in Americas", {}, (Part(CORE, "a2"), OD)),
        ("Spot Preemptible A2 Instance Ram running in Americas", {}, (Part(RAM, "a2"), SPOT)),
        ("SSD backed Local Storage", {}, (LOCAL_SSD, OD)),
        ("Commitment v1: A2 Ram in Americas for 3 Years", {}, (Part(RAM, "a2"), R3)),
        ("N1 Predefined Instance Core running in Americas", {}, (Part(CORE, "n1"), OD)),
        ("Nvidia Tesla T4 GPU running in Americas", {}, (Part(GPU, "nvidia-tesla-t4"), OD)),
        ("Nvidia Tesla T4 GPU running in Americas", {"description": "Nvidia H100 80GB GPU running in Americas"},
         (Part(GPU, "nvidia-h100-80gb"), OD)),
        # filed OnDemand, but "attached to Spot Preemptible VMs": spot
        ("SSD backed Local Storage attached to Spot Preemptible VMs", {"usageType": "OnDemand"}, (LOCAL_SSD, SPOT)),
        ("Nvidia H100 80GB Mega GPU running in Americas", {}, gcp_skus.SKIP_OTHER_GPU),
        ("Nvidia Tesla T4 Virtual Workstation GPU running in Americas", {}, gcp_skus.SKIP_EXCLUDED),
        ("A2 Instance Core running in Americas", {"description": "Commitment v1: Cpu in Americas for 1 Year"},
         gcp_skus.SKIP_OTHER),
        ("A2 Instance Core running in Americas", {"description": "A2 Custom Instance Core running in Americas"},
         gcp_skus.SKIP_OTHER),
        ("Nvidia Tesla A100 GPU running in Americas",
         {"description": "Nvidia Tesla A100 GPU attached to Calendar mode reservations running in Americas"},
         gcp_skus.SKIP_EXCLUDED),
        ("Nvidia Tesla A100 GPU running in Americas", {"description": "Reserved Nvidia Tesla A100 GPU in Americas"},
         gcp_skus.SKIP_EXCLUDED),
        ("Nvidia Tesla A100 GPU running in Americas", {"description": "Nvidia Tesla Z9 GPU running in Americas"},
         gcp_skus.SKIP_UNKNOWN_GPU),
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


def test_no_gpu_sku_is_a_parse_error_with_the_reasons(collector) -> None:
    pages = bodies()
    for page in pages:
        page["skus"] = [s for s in page["skus"] if s["category"]["resourceGroup"] != "GPU"]
    with pytest.raises(
        ParseError,
        match=r"no GPU SKU of a known accelerator among the \d+ SKUs read .*not a part of a GPU machine type",
    ):
        collector.parse(fetched(pages))


def test_gpus_without_any_host_part_is_a_parse_error_not_an_empty_success(collector) -> None:
    pages = bodies()
    for page in pages:
        page["skus"] = [s for s in page["skus"] if s["category"]["resourceGroup"] == "GPU"]
    with pytest.raises(ParseError, match=r"no machine type has all its parts priced anywhere: .*A2 vCPU"):
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
