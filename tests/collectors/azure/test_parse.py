"""Azure collector, parsing: the exact offers in the recorded walk, every trap left out, shape
changes caught, and the shared sanity checks passed. Offline: fixtures only."""

from __future__ import annotations

import copy
import json
import re

import pytest

from collectors.azure import AzureCollector
from collectors.azure import rows as azure
from collectors.azure.query import odata_filter
from collectors.azure.rows import classify
from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from pricedb.card_names import identify
from pricedb.models import Pricing, Unit
from pricedb.normalize import normalize
from tests.conftest import FIXTURES, OBSERVED, fetched_of, fixture_bytes

PAGES = tuple(f"retail_prices_page{n}.json" for n in (1, 2, 3, 4))
URLS = [route["url"] for route in json.loads((FIXTURES / "azure" / "replay.json").read_text())["routes"]]

NC24, NC48, NC96 = "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_NC96ads_A100_v4"
ND, NDM = "Standard_ND96asr_v4", "Standard_ND96amsr_A100_v4"
OD, SPOT, R1, R3 = Pricing.ON_DEMAND, Pricing.SPOT, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y

# (sku, region, pricing) -> USD price as published (per VM-hour; per whole term for reservations)
EXPECTED = {
    (NC24, "eastus", OD): 3.673,
    (NC24, "eastus", SPOT): 0.67877,
    (NC24, "eastus2", OD): 3.673,
    (NC24, "westus2", OD): 3.673,
    (NC24, "westus3", OD): 3.673,
    (NC24, "centralus", OD): 4.15,
    (NC24, "southcentralus", OD): 4.408,
    (NC24, "westus", OD): 4.775,
    (NC48, "eastus", OD): 7.346,
    (NC48, "westus3", OD): 7.346,
    (NC96, "eastus", OD): 14.692,
    (NC96, "westus3", OD): 14.692,
    (ND, "eastus", OD): 27.197,
    (ND, "westus2", OD): 27.197,
    (ND, "southcentralus", OD): 32.63,
    (NDM, "eastus", OD): 32.77,
    (NDM, "eastus", R1): 183722.0,
    (NDM, "eastus", R3): 378926.0,
    (NDM, "eastus2", OD): 32.77,
    (NDM, "eastus2", SPOT): 14.4188,
    (NDM, "southcentralus", OD): 39.324,
}
A100_EXPECTED = dict(EXPECTED)
EXPECTED |= {
    ("Standard_NC40ads_H100_v5", "eastus", OD): 6.98,
    ("Standard_NC40ads_H100_v5", "eastus2", OD): 6.98,
    ("Standard_NC40ads_H100_v5", "southcentralus", OD): 8.38,
    ("Standard_NC80adis_H100_v5", "eastus", OD): 13.96,
    ("Standard_NCC40ads_H100_v5", "eastus2", OD): 6.98,
    ("Standard_ND96isr_H100_v5", "eastus", OD): 98.32,
    ("Standard_NC4as_T4_v3", "eastus", OD): 0.526,
    ("Standard_NC4as_T4_v3", "eastus", SPOT): 0.149174,
    ("Standard_NC64as_T4_v3", "eastus", OD): 4.352,
    ("Standard_NC6s_v3", "eastus", OD): 3.06,
    ("Standard_NC24s_v3", "eastus", OD): 12.24,
    ("Standard_NC24rs_v3", "eastus", OD): 13.46,
    ("Standard_ND40rs_v2", "eastus", OD): 22.032,
    ("Standard_NV12s_v3", "eastus", OD): 1.14,
    ("Standard_NV48s_v3", "eastus", OD): 4.56,
    ("Standard_NV32as_v4", "eastus", OD): 1.864,
    ("Standard_NV36ads_A10_v5", "eastus", OD): 3.2,
    ("Standard_NV36adms_A10_v5", "eastus", OD): 4.52,
    ("Standard_NV72ads_A10_v5", "eastus", OD): 6.52,
    ("Standard_NC6", "westus2", OD): 0.9,
    ("Standard_NV4as_v4", "eastus", OD): 0.233,
}
# What Microsoft publishes per size (its GPU size pages; independent of collectors.azure.sizes): the
# GPU's name, GPUs per VM and the VM's total GPU memory in GB.
PUBLISHED = {
    NC24: ("NVIDIA A100 PCIe", 1, 80), NC48: ("NVIDIA A100 PCIe", 2, 160), NC96: ("NVIDIA A100 PCIe", 4, 320),
    ND: ("NVIDIA A100 SXM4", 8, 320), NDM: ("NVIDIA A100 SXM4", 8, 640),
    "Standard_NC40ads_H100_v5": ("NVIDIA H100 NVL", 1, 94), "Standard_NC80adis_H100_v5": ("NVIDIA H100 NVL", 2, 188),
    "Standard_NCC40ads_H100_v5": ("NVIDIA H100 NVL", 1, 94), "Standard_ND96isr_H100_v5": ("NVIDIA H100 SXM", 8, 640),
    "Standard_NC4as_T4_v3": ("NVIDIA T4", 1, 16), "Standard_NC64as_T4_v3": ("NVIDIA T4", 4, 64),
    "Standard_NC6s_v3": ("NVIDIA V100 PCIe", 1, 16), "Standard_NC24s_v3": ("NVIDIA V100 PCIe", 4, 64),
    "Standard_NC24rs_v3": ("NVIDIA V100 PCIe", 4, 64), "Standard_ND40rs_v2": ("NVIDIA V100 SXM2", 8, 256),
    "Standard_NV12s_v3": ("NVIDIA Tesla M60", 1, 8), "Standard_NV48s_v3": ("NVIDIA Tesla M60", 4, 32),
    "Standard_NV32as_v4": ("AMD Radeon Instinct MI25", 1, 16), "Standard_NV36ads_A10_v5": ("NVIDIA A10", 1, 24),
    "Standard_NV36adms_A10_v5": ("NVIDIA A10", 1, 24), "Standard_NV72ads_A10_v5": ("NVIDIA A10", 2, 48),
    "Standard_NC6": ("NVIDIA Tesla K80", 1, 12), "Standard_NV4as_v4": ("AMD Radeon Instinct MI25", 1, 2),
}  # fmt: skip
# The sizes that get a share of one GPU (the NVv4 page: NV4as_v4 has 1/8 of an MI25, 2 GB).
PUBLISHED_SHARES = {"Standard_NV4as_v4": 1 / 8}
# Prices carried only by rows that must be left out (Windows, Low Priority, DevTest-only, 5-year,
# the older duplicate, zero, unknown, FPGA and promo sizes).
TRAP_PRICES = {4.777, 0.88279, 0.735, 31.6, 38.6, 6.554, 574130.0, 3.611254, 0.0,
               0.105, 0.71, 0.201356, 0.284, 7.42, 0.908, 1.65, 1.1, 0.18}  # fmt: skip


def bodies() -> list[dict]:
    return [json.loads(fixture_bytes("azure", name)) for name in PAGES]


def fetched(pages: list[dict] | None = None) -> Fetched:
    pages = bodies() if pages is None else pages
    return fetched_of(
        *(
            RawResponse(url=url, fetched_at=OBSERVED, body=json.dumps(page).encode(), label=f"page {n}")
            for n, (url, page) in enumerate(zip(URLS, pages, strict=True), 1)
        )
    )


def items_of(pages: list[dict]) -> list[dict]:
    return [item for page in pages for item in page["Items"]]


@pytest.fixture
def collector(settings) -> AzureCollector:
    return AzureCollector(settings)


@pytest.fixture
def quotes(collector):
    return collector.parse(fetched())


def test_parse_gives_exactly_the_expected_offers(quotes) -> None:
    assert {(q.sku, q.region, q.pricing): q.price for q in quotes} == EXPECTED
    assert len(quotes) == len(EXPECTED)  # one quote per offer: the duplicate spot row was merged


def test_every_offer_has_the_gpus_microsoft_publishes_for_its_row_s_size(quotes) -> None:
    """Per stored offer: its row's `armSkuName` is a size whose GPU, GPUs per VM and total GPU memory
    are Microsoft's; where the size's name says the card (`…_A100_v4`, `…_H100_v5`, `…_T4_v3`), so does the offer."""
    rows = {(i["armSkuName"], i["armRegionName"]) for i in items_of(bodies())}
    for q in quotes:
        assert (q.sku, q.region) in rows
        name, count, total_gb = PUBLISHED[q.sku]
        assert (q.gpu_model, q.gpu_count, q.gpu_count * q.gpu_memory_gb) == (identify(name).model, count, total_gb)
        assert q.gpu_fraction == PUBLISHED_SHARES.get(q.sku), q.sku
        assert (q.gpu_partition is None) == (q.sku not in PUBLISHED_SHARES), q.sku
        token = re.search(r"_(A100|H100|T4|A10)_v\d$", q.sku)
        if token:
            assert q.gpu_model == identify(token.group(1)).model, q.sku
    assert {q.sku for q in quotes} == set(PUBLISHED)


def test_a100_offers_keep_their_hardware(quotes) -> None:
    hardware = {NC24: (1, 80.0, "PCIe", "PCIe"), NC48: (2, 80.0, "PCIe", "PCIe"), NC96: (4, 80.0, "PCIe", "PCIe"),
                ND: (8, 40.0, "SXM4", "NVLink"), NDM: (8, 80.0, "SXM4", "NVLink")}  # fmt: skip
    a100 = [q for q in quotes if q.gpu_model == "A100"]
    assert {(q.sku, q.region, q.pricing): q.price for q in a100} == A100_EXPECTED
    for q in a100:
        assert (q.gpu_count, q.gpu_memory_gb, q.form_factor, q.interconnect) == hardware[q.sku]


def test_every_quote_carries_currency_unit_billing_and_host(quotes) -> None:
    for q in quotes:
        assert (q.provider, q.currency) == ("azure", "USD")
        assert q.vcpus is not None and q.memory_gib is not None
        assert (q.billing_increment_s, q.billing_minimum_s) == (1, 0)
        assert q.tax_included is False
        assert q.observed_at == OBSERVED
        assert q.source_url in URLS
        if q.pricing.is_reserved:
            assert q.unit is Unit.TERM
        else:
            assert (q.unit, q.term_hours) == (Unit.HOUR, None)


def test_reservations_are_whole_term_prices(quotes) -> None:
    by_key = {(q.sku, q.region, q.pricing): q for q in quotes}
    one, three = by_key[(NDM, "eastus", R1)], by_key[(NDM, "eastus", R3)]
    assert (one.price, one.unit, one.term_hours) == (183722.0, Unit.TERM, 8760)
    assert (three.price, three.unit, three.term_hours) == (378926.0, Unit.TERM, 26280)
    assert "whole 1-year term" in one.notes
    assert "5-year reservation is also published (574130 per term)" in three.notes


def test_reservations_normalize_per_hour_of_the_term(quotes, fx_table, settings) -> None:
    one = next(q for q in quotes if q.pricing is R1)
    usd_cny = 6.8095 / 1.0163
    assert normalize(one, fx_table, settings).cny_per_hour == pytest.approx(183722.0 / 8760 * usd_cny)


def test_traps_are_left_out(quotes) -> None:
    assert not {q.price for q in quotes} & TRAP_PRICES


def test_unknown_sizes_are_counted_not_stored_and_reported(collector) -> None:
    read = collector.read_rows(fetched())
    assert dict(read.not_stored) == {
        f"Standard_NG8ads_V620_v1: {azure.SKIP_UNKNOWN_SKU}": 1,
        f"Standard_NC8ads_A10_v4: {azure.SKIP_UNKNOWN_SKU}": 1,
    }
    assert (read.skipped[azure.SKIP_NOT_GPU], read.skipped[azure.SKIP_PROMO]) == (1, 1)
    _, refused = collector.parse_report(fetched())
    reason = f"unknown GPU, not collected: {azure.SKIP_UNKNOWN_SKU} (1 items)"
    assert refused == [
        {"offer": "Standard_NC8ads_A10_v4", "reason": reason},
        {"offer": "Standard_NG8ads_V620_v1", "reason": reason},
    ]


@pytest.mark.parametrize(
    ("sku", "share", "memory_gb"),
    [("Standard_NV6ads_A10_v5", "1/6", 4), ("Standard_NV12ads_A10_v5", "1/3", 8),
     ("Standard_NV18ads_A10_v5", "1/2", 12), ("Standard_NV8as_v4", "1/4", 4), ("Standard_NV16as_v4", "1/2", 8)],
)  # fmt: skip
def test_a_share_of_one_gpu_is_stored_as_a_slice_never_as_a_whole_card(collector, sku, share, memory_gb) -> None:
    """Memory per slice as the NVadsA10 v5 and NVv4 size pages list it (4 GB for 1/6 of an A10)."""
    pages = bodies()
    row = next(i for i in pages[3]["Items"] if i["armSkuName"] == "Standard_NV36ads_A10_v5")
    row["armSkuName"] = sku
    (q,) = [q for q in collector.parse(fetched(pages)) if q.sku == sku]
    numerator, denominator = map(int, share.split("/"))
    assert (q.gpu_count, q.gpu_memory_gb) == (1, memory_gb)
    assert (q.gpu_fraction, q.gpu_partition) == (numerator / denominator, f"{share} GPU")


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (1, {azure.SKIP_LOW_PRIORITY: 1, azure.SKIP_WINDOWS: 2, azure.SKIP_DEVTEST: 1, azure.SKIP_ZERO_PRICE: 1}),
        (2, {azure.SKIP_WINDOWS: 1, azure.SKIP_DEVTEST: 1, azure.SKIP_ZERO_PRICE: 1}),
        (
            3,
            {
                azure.SKIP_WINDOWS: 1,
                azure.SKIP_DEVTEST: 1,
                azure.SKIP_FIVE_YEAR: 1,
                azure.SKIP_LOW_PRIORITY: 1,
                azure.SKIP_ZERO_PRICE: 1,
            },
        ),
        (
            4,
            {
                azure.SKIP_LOW_PRIORITY: 1,
                azure.SKIP_WINDOWS: 4,
                azure.SKIP_UNKNOWN_SKU: 2,
                azure.SKIP_NOT_GPU: 1,
                azure.SKIP_PROMO: 1,
            },
        ),
    ],
)
def test_each_page_has_traps_and_each_is_skipped_for_its_reason(page, expected) -> None:
    verdicts = [classify(item, OBSERVED) for item in bodies()[page - 1]["Items"]]
    reasons = {v: verdicts.count(v) for v in verdicts if not isinstance(v, Pricing)}
    assert reasons == expected


def test_windows_rows_are_recognised_by_product_name_only() -> None:
    windows = [i for i in items_of(bodies()) if i["type"] == "Consumption" and "Windows" in i["productName"]]
    assert {i["armSkuName"] for i in windows} == {NC24, ND, NDM, "Standard_NC4as_T4_v3"}
    linux_twin = [i for i in items_of(bodies()) if i["armSkuName"] == NC24 and i["armRegionName"] == "eastus"]
    assert {i["meterName"] for i in windows} & {i["meterName"] for i in linux_twin}  # same meter, other OS


def _linux_row() -> dict:
    return copy.deepcopy(bodies()[0]["Items"][0])  # NC24ads eastus pay-as-you-go


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"type": "DevTestConsumption"}, azure.SKIP_DEVTEST),  # even on a Linux product name
        ({"productName": "NCads A100 v4 Series Windows"}, azure.SKIP_WINDOWS),
        ({"productName": "Virtual Machines NCCadsv5 Srs Win"}, azure.SKIP_WINDOWS),
        ({"productName": "Virtual Machines Winnable Series"}, Pricing.ON_DEMAND),  # a word, not a prefix
        ({"productName": "NCads A100 v4 Series Cloud Services"}, azure.SKIP_CLOUD_SERVICES),
        ({"retailPrice": 0.0, "unitPrice": 0.0}, azure.SKIP_ZERO_PRICE),
        ({"meterName": "NC24ads_A100_v4 Low Priority"}, azure.SKIP_LOW_PRIORITY),
        ({"skuName": "Standard_NC24ads_A100_v4 Low Priority"}, azure.SKIP_LOW_PRIORITY),
        ({"armSkuName": "Standard_NC24ads_A10_v4"}, azure.SKIP_UNKNOWN_SKU),
        ({"armSkuName": "Standard_NV6ads_A10_v5"}, Pricing.ON_DEMAND),  # a slice, stored as one
        ({"armSkuName": "Standard_NP20s"}, azure.SKIP_NOT_GPU),
        ({"armSkuName": "Standard_NC24ads_A100_v4_Promo"}, azure.SKIP_PROMO),
        ({"type": "Reservation", "reservationTerm": "5 Years"}, azure.SKIP_FIVE_YEAR),
        ({"type": "Reservation", "reservationTerm": "10 Years"}, azure.SKIP_OTHER_TERM),
        ({"type": "SavingsPlan"}, azure.SKIP_OTHER_TYPE),
        ({"unitOfMeasure": "1/Month"}, azure.SKIP_UNIT),
        ({"effectiveEndDate": "2026-11-01T00:00:00Z"}, azure.SKIP_ENDED),
        ({"skuName": "Standard_NC24ads_A100_v4 Spot"}, Pricing.SPOT),
        ({"effectiveEndDate": "2027-01-01T00:00:00Z"}, Pricing.ON_DEMAND),
        ({"armSkuName": "standard_nc24ads_a100_v4"}, Pricing.ON_DEMAND),  # SKU case does not matter
        ({"type": "Reservation", "reservationTerm": "3 Years"}, Pricing.RESERVED_3Y),
    ],
)
def test_each_rule_on_its_own(change, reason) -> None:
    assert classify({**_linux_row(), **change}, OBSERVED) == reason


def test_duplicate_offer_keeps_the_latest_effective_start_and_says_so(quotes) -> None:
    spot = next(q for q in quotes if (q.sku, q.region, q.pricing) == (NDM, "eastus2", SPOT))
    assert spot.price == 14.4188
    assert "2 rows for this offer" in spot.notes and "3.611254 from 2023-04-01" in spot.notes
    assert spot.source_url == URLS[2]  # the page the kept row came from


def test_duplicate_order_does_not_matter(collector) -> None:
    pages = bodies()
    pages.reverse()
    reversed_fetch = fetched_of(
        *(
            RawResponse(url=url, fetched_at=OBSERVED, body=json.dumps(page).encode())
            for url, page in zip(URLS, pages, strict=True)
        )
    )
    assert {q.key: q.price for q in collector.parse(reversed_fetch)} == {
        q.key: q.price for q in collector.parse(fetched())
    }


def test_zero_price_row_never_wins_a_duplicate(quotes) -> None:
    zero = next(i for i in bodies()[0]["Items"] if i["armSkuName"] == NC48 and i["retailPrice"] == 0)
    real = next(i for i in bodies()[0]["Items"] if i["armSkuName"] == NC48 and i["retailPrice"] > 0)
    assert zero["effectiveStartDate"] > real["effectiveStartDate"]
    assert next(q.price for q in quotes if (q.sku, q.region, q.pricing) == (NC48, "eastus", OD)) == 7.346


def test_shared_sanity_checks_accept_every_quote(quotes, fx_table, settings) -> None:
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == []
    assert len(accepted) == len(quotes)


def test_spot_is_never_dearer_than_on_demand(quotes) -> None:
    on_demand = {(q.sku, q.region): q.price for q in quotes if q.pricing is OD}
    spots = [q for q in quotes if q.pricing is SPOT]
    assert spots
    for q in spots:
        assert q.price <= on_demand[(q.sku, q.region)]


def test_missing_items_key_is_a_parse_error_naming_it(collector) -> None:
    pages = bodies()
    del pages[1]["Items"]
    with pytest.raises(ParseError, match=r"no 'Items'.*BillingCurrency"):
        collector.parse(fetched(pages))


def test_items_not_a_list_is_a_parse_error(collector) -> None:
    pages = bodies()
    pages[0]["Items"] = {"unexpected": True}
    with pytest.raises(ParseError, match="'Items' is not a list"):
        collector.parse(fetched(pages))


def test_empty_items_on_every_page_is_a_parse_error_not_an_empty_success(collector) -> None:
    pages = bodies()
    for page in pages:
        page["Items"], page["Count"] = [], 0
    with pytest.raises(ParseError, match="no price rows on any of the 4 page"):
        collector.parse(fetched(pages))


def test_only_unusable_rows_is_a_parse_error_with_the_reasons(collector) -> None:
    pages = bodies()
    for page in pages:
        page["Items"] = [i for i in page["Items"] if "Windows" in i["productName"]]
    with pytest.raises(ParseError, match=r"none is a Linux GPU offer .*Windows"):
        collector.parse(fetched(pages))


@pytest.mark.parametrize("field", ["retailPrice", "armRegionName", "type", "productName", "armSkuName"])
def test_a_row_missing_a_needed_field_is_a_parse_error_naming_it(collector, field) -> None:
    pages = bodies()
    del pages[2]["Items"][0][field]
    with pytest.raises(ParseError, match=f"no '{field}' field"):
        collector.parse(fetched(pages))


def test_reservation_without_term_is_a_parse_error(collector) -> None:
    pages = bodies()
    row = next(i for i in pages[2]["Items"] if i["type"] == "Reservation")
    del row["reservationTerm"]
    with pytest.raises(ParseError, match="reservationTerm"):
        collector.parse(fetched(pages))


def test_non_numeric_price_and_non_json_body_are_parse_errors(collector) -> None:
    pages = bodies()
    pages[0]["Items"][0]["retailPrice"] = "3.673"
    with pytest.raises(ParseError, match="not a number"):
        collector.parse(fetched(pages))
    with pytest.raises(ParseError, match="not JSON"):
        collector.parse(fetched_of(RawResponse(url=URLS[0], fetched_at=OBSERVED, body=b"<html>busy</html>")))


def test_fixture_pages_have_the_real_envelope_and_item_fields() -> None:
    fields = [
        "currencyCode",
        "tierMinimumUnits",
        "retailPrice",
        "unitPrice",
        "armRegionName",
        "location",
        "effectiveStartDate",
        "meterId",
        "meterName",
        "productId",
        "skuId",
        "productName",
        "skuName",
        "serviceName",
        "serviceId",
        "serviceFamily",
        "unitOfMeasure",
        "type",
        "isPrimaryMeterRegion",
        "armSkuName",
    ]
    pages = bodies()
    for n, page in enumerate(pages):
        assert list(page) == [
            "BillingCurrency",
            "CustomerEntityId",
            "CustomerEntityType",
            "Items",
            "NextPageLink",
            "Count",
        ]
        assert page["Count"] == len(page["Items"])
        assert page["NextPageLink"] == (URLS[n + 1] if n < len(PAGES) - 1 else None)
        for item in page["Items"]:
            expected = [*fields[:2], "reservationTerm", *fields[2:]] if item["type"] == "Reservation" else fields
            assert list(item) == expected
    for link in URLS[1:]:
        assert link.startswith("https://prices.azure.com:443/api/retail/prices?$filter=serviceName%20eq%20")
    assert [url.rsplit("&$skip=", 1)[-1] for url in URLS[1:]] == ["100", "200", "300"]


def test_filter_asks_for_the_n_series_and_stays_small() -> None:
    odata = odata_filter()
    assert odata == "serviceName eq 'Virtual Machines' and startswith(armSkuName, 'Standard_N')"
    assert all(sku.startswith("Standard_N") for sku in PUBLISHED)
    assert "armRegionName eq 'westus3'" in odata_filter("westus3")
    assert "armRegionName eq 'a''b'" in odata_filter("a'b")  # OData string literal quoting


def test_collector_declares_one_daily_scope_with_all_pricings(collector) -> None:
    assert collector.name == "azure"
    assert [s.name for s in collector.scopes] == ["all"]
    assert collector.scope("all").pricings == {OD, SPOT, R1, R3}
    assert collector.scope("all").default_interval_minutes == 24 * 60
    assert collector.source_urls == ("https://prices.azure.com/api/retail/prices",)


def test_duplicate_with_the_same_start_date_keeps_the_first_read_and_says_so(collector) -> None:
    pages = bodies()
    older = next(i for i in pages[1]["Items"] if i["retailPrice"] == 3.611254)
    older["effectiveStartDate"] = "2024-06-01T00:00:00Z"  # now as recent as the page-3 row
    spot = next(q for q in collector.parse(fetched(pages)) if (q.sku, q.region, q.pricing) == (NDM, "eastus2", SPOT))
    assert spot.price == 3.611254
    assert "same start date" in spot.notes and "14.4188" in spot.notes
