"""Tencent Cloud collector, parsing: recorded DescribeZoneInstanceConfigInfos answers → quotes.

Pricing models (on-demand with stepped prices, spot, monthly, 1- and 3-year subscriptions), sold-out
items kept and marked, zones folded into one offer per region, GPU count and identity from the
answer, what is skipped (and said), and answers whose shape is wrong."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from collectors.tencent import TencentCollector, api, items
from collectors.tencent.instance_types import FAMILY_CARDS
from pricedb.models import Availability, PriceStep, Pricing, Unit
from pricedb.settings import Settings
from tests.conftest import FIXTURES, OBSERVED

REGIONS = ("ap-beijing", "ap-shanghai", "ap-guangzhou")
CHARGES = ("POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID")


def answer(region: str, charge: str) -> dict:
    return json.loads((FIXTURES / "tencent" / f"{region}_{charge}.json").read_text(encoding="utf-8"))


def raw_of(payload: dict | bytes, region: str, charge: str) -> RawResponse:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return RawResponse(url=api.ENDPOINT, fetched_at=OBSERVED, body=body, label=api.label(region, charge))


def all_answers() -> Fetched:
    return Fetched([raw_of(answer(r, c), r, c) for r in REGIONS for c in CHARGES])


@pytest.fixture
def collector(settings: Settings) -> TencentCollector:
    return TencentCollector(settings)


@pytest.fixture
def quotes(collector: TencentCollector) -> dict[tuple[str, str, str], object]:
    return {(q.region, q.sku, q.pricing.value): q for q in collector.parse(all_answers())}


def test_every_offer_in_the_answers_and_nothing_else(quotes: dict) -> None:
    # 24 Beijing + 9 Shanghai + 8 Guangzhou offers (fixtures/README.md lists them).
    assert len(quotes) == 41
    assert {region for region, _, _ in quotes} == set(REGIONS)
    assert {sku.split(".")[0] for _, sku, _ in quotes} == {"GT4", "GN7", "GN10Xp", "PNV4", "GN8"}
    assert not any(sku.startswith("HCCPNV4h") for _, sku, _ in quotes)  # its card is not published
    assert {pricing for _, _, pricing in quotes} == {"on_demand", "spot", "monthly", "reserved_1y", "reserved_3y"}


# Tencent's GPU instance pages, one row per family: (model, GB per card, form factor).
DOCUMENTED = {
    "GT4": ("A100", 40, "SXM4"), "GN10Xp": ("V100", 32, "SXM2"), "GN7": ("T4", 16, "PCIe"),
    "PNV4": ("A10", 24, "PCIe"), "GN8": ("P40", 24, "PCIe"),
}  # fmt: skip


def test_every_offer_has_the_card_of_its_family_and_the_count_of_its_item(quotes: dict) -> None:
    rows = {
        (region, item["InstanceType"]): item
        for region in REGIONS
        for charge in CHARGES
        for item in answer(region, charge)["Response"]["InstanceTypeQuotaSet"]
    }
    for (region, sku, _), q in quotes.items():
        row = rows[(region, sku)]
        model, memory, form = DOCUMENTED[row["InstanceFamily"]]
        assert (q.gpu_model, q.form_factor) == (model, form), sku
        if row["GpuCount"] < 1:  # a vGPU slice: one slice of that share of the card, with that share of its memory
            assert (q.gpu_count, q.gpu_fraction, q.gpu_memory_gb) == (1, row["GpuCount"], memory * row["GpuCount"])
        else:
            assert (q.gpu_count, q.gpu_fraction, q.gpu_memory_gb) == (row["GpuCount"], None, memory), sku
            assert row["GpuCount"] == row["Gpu"]
        assert (q.vcpus, q.memory_gib) == (row["Cpu"], row["Memory"])
    assert set(DOCUMENTED) <= set(FAMILY_CARDS)


def test_unknown_cards_are_counted_in_the_notes_never_guessed(collector: TencentCollector) -> None:
    skipped: Counter[str] = Counter()
    for raw in all_answers().responses:
        items.priced(raw, 8760, skipped)
    assert skipped == {
        "unknown GPU, not collected: HCCPNV4h.48XLARGE1024 (an A100 family whose GPU memory Tencent does not "
        "publish)": 1,
    }


def test_on_demand_with_stepped_prices(quotes: dict) -> None:
    q = quotes[("ap-beijing", "GT4.8XLARGE192", "on_demand")]
    assert (q.price, q.list_price, q.currency, q.unit) == (62.4, 62.4, "CNY", Unit.HOUR)
    assert q.price_steps == (PriceStep(after_hours=96, price=31.2), PriceStep(after_hours=360, price=21.216))
    assert (q.gpu_model, q.gpu_memory_gb, q.gpu_count, q.form_factor, q.interconnect) == (
        "A100",
        40,
        2,
        "SXM4",
        "NVLink",
    )
    assert (q.billing_increment_s, q.billing_minimum_s) == (1, 0)
    assert q.availability is Availability.AVAILABLE
    assert q.source_url == (
        "https://cvm.tencentcloudapi.com/?Action=DescribeZoneInstanceConfigInfos&Region=ap-beijing"
        "&InstanceChargeType=POSTPAID_BY_HOUR"
    )
    assert "stepped hourly price: 31.2 from hour 96, 21.216 from hour 360" in q.notes
    # Step fields equal to the first price mean "no steps" (a type without stepped pricing).
    assert quotes[("ap-shanghai", "GT4.8XLARGE192", "on_demand")].price_steps == ()


def test_spot_uses_the_discounted_price_and_keeps_the_list_price(quotes: dict) -> None:
    q = quotes[("ap-beijing", "GT4.4XLARGE96", "spot")]
    assert (q.pricing, q.price, q.list_price, q.unit) == (Pricing.SPOT, 6.24, 31.2, Unit.HOUR)
    assert q.price_steps == ()


def test_prepaid_gives_a_month_and_whole_term_subscriptions(quotes: dict) -> None:
    month = quotes[("ap-beijing", "GT4.8XLARGE192", "monthly")]
    assert (month.price, month.unit, month.term_hours, month.list_price) == (25896.0, Unit.MONTH, None, 25896.0)
    one = quotes[("ap-beijing", "GT4.8XLARGE192", "reserved_1y")]
    assert (one.price, one.unit, one.term_hours, one.list_price) == (257924.16, Unit.TERM, 8760, 310752.0)
    three = quotes[("ap-beijing", "GT4.8XLARGE192", "reserved_3y")]
    assert (three.price, three.unit, three.term_hours) == (466128.0, Unit.TERM, 26280)
    assert "whole 3-year subscription" in three.notes and "one month's subscription" in month.notes


def test_the_real_monthly_figure_has_no_placeholder_mark_and_no_invented_terms(quotes: dict) -> None:
    real = quotes[("ap-guangzhou", "GT4.4XLARGE96", "monthly")]
    assert real.price == 12948.0 and "fixture price" not in real.notes
    assert ("ap-guangzhou", "GT4.4XLARGE96", "reserved_1y") not in quotes  # 0 in the answer: no price
    placeholders = [q for key, q in quotes.items() if key != ("ap-guangzhou", "GT4.4XLARGE96", "monthly")]
    assert len(placeholders) == 40
    assert all("Remark: fixture price" in q.notes for q in placeholders)


def test_sold_out_offers_are_kept_and_marked(quotes: dict) -> None:
    q = quotes[("ap-shanghai", "GT4.41XLARGE948", "on_demand")]
    assert q.availability is Availability.SOLD_OUT and q.price == 249.6
    assert "ap-shanghai-4 SOLD_OUT (该可用区该机型资源已售罄, WithoutStock)" in q.notes
    assert quotes[("ap-beijing", "GT4.41XLARGE948", "spot")].availability is Availability.SOLD_OUT


def test_zones_fold_into_the_cheapest_selling_zone(quotes: dict) -> None:
    # Guangzhou-6 is cheaper (30.5) but sold out: the selling zone's 31.2 is the offer.
    q = quotes[("ap-guangzhou", "GT4.4XLARGE96", "on_demand")]
    assert (q.price, q.availability) == (31.2, Availability.AVAILABLE)
    assert q.notes.startswith("cheapest selling zone of 2: ap-guangzhou-4 SELL (EnoughStock)")
    assert "other zones: ap-guangzhou-6 SOLD_OUT" in q.notes
    # Both zones sell spot: the cheaper one (18 % of on-demand) wins.
    spot = quotes[("ap-guangzhou", "GT4.4XLARGE96", "spot")]
    assert spot.price == pytest.approx(5.616) and "ap-guangzhou-6" in spot.notes.split(";")[0]


def test_all_quotes_pass_the_sanity_checks(collector: TencentCollector, settings: Settings, fx_table) -> None:
    parsed = collector.parse(all_answers())
    accepted, rejected = check_quotes(parsed, fx_table, settings)
    assert rejected == [] and len(accepted) == len(parsed)


# ----- what the answer says, not the name -------------------------------------------------------
def edited(region: str, charge: str, index: int, **fields) -> Fetched:
    payload = copy.deepcopy(answer(region, charge))
    payload["Response"]["InstanceTypeQuotaSet"][index].update(fields)
    return Fetched([raw_of(payload, region, charge)])


def test_gpu_count_comes_from_the_answer(collector: TencentCollector) -> None:
    (q, *_) = collector.parse(edited("ap-shanghai", "SPOTPAID", 0, GpuCount=2, Gpu=2))
    assert (q.sku, q.gpu_count) == ("GT4.4XLARGE96", 2)
    (q, *_) = collector.parse(edited("ap-shanghai", "SPOTPAID", 0, GpuCount=None, Gpu=1))
    assert q.gpu_count == 1


def test_a_vgpu_slice_is_one_slice_never_a_whole_card(quotes: dict, collector: TencentCollector) -> None:
    q = quotes[("ap-beijing", "GN7.LARGE20", "on_demand")]
    assert (q.gpu_model, q.gpu_count, q.gpu_memory_gb) == ("T4", 1, 4.0)  # Tencent's table: 1/4 vGPU, 4 GB
    assert (q.gpu_fraction, q.gpu_partition) == (0.25, "1/4 GPU (vGPU)")
    half = collector.parse(edited("ap-shanghai", "SPOTPAID", 0, GpuCount=0.5))[0]
    assert (half.sku, half.gpu_memory_gb, half.gpu_partition) == ("GT4.4XLARGE96", 20.0, "1/2 GPU (vGPU)")


def test_a_family_the_table_does_not_know_is_reported_not_guessed(collector: TencentCollector) -> None:
    hcc = 4  # the HCCPNV4h item of the Beijing on-demand answer, its memory stated nowhere
    fetched = edited("ap-beijing", "POSTPAID_BY_HOUR", hcc, Remark="8 * NVIDIA A100 80GB SXM4")
    assert not any(q.sku.startswith("HCC") for q in collector.parse(fetched))  # a Remark is not the card table
    unknown = edited(
        "ap-beijing", "POSTPAID_BY_HOUR", hcc, InstanceFamily="HCCPNV5v", TypeName="高性能计算集群HCCPNV5v"
    )
    skipped: Counter[str] = Counter()
    items.priced(unknown.responses[0], 8760, skipped)
    assert "unknown GPU, not collected: HCCPNV4h.48XLARGE1024 (family HCCPNV5v, 高性能计算集群HCCPNV5v)" in skipped


def test_numeric_strings_and_null_prices(collector: TencentCollector) -> None:
    payload = copy.deepcopy(answer("ap-shanghai", "SPOTPAID"))
    first, second = payload["Response"]["InstanceTypeQuotaSet"]
    first["Price"]["UnitPriceDiscount"] = "6.240000"
    second["Price"] |= {"UnitPriceDiscount": None, "UnitPrice": None}
    raw = raw_of(payload, "ap-shanghai", "SPOTPAID")
    assert [(q.sku, q.price) for q in collector.parse(Fetched([raw]))] == [("GT4.4XLARGE96", 6.24)]
    skipped: Counter[str] = Counter()
    items.priced(raw, 8760, skipped)
    assert skipped == {"GT4.8XLARGE192 in ap-shanghai-4 (SPOTPAID): no price in the answer": 1}


# ----- wrong shapes fail loudly -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"<html>busy</html>", "not JSON"),
        ({"Response": {"RequestId": "x"}}, "no 'InstanceTypeQuotaSet' list"),
        ({"InstanceTypeQuotaSet": []}, "no 'Response' object"),
        (json.loads((FIXTURES / "tencent" / "error_auth_signature_failure.json").read_text()), "SignatureFailure"),
    ],
)
def test_wrong_shapes_raise_parse_errors(collector: TencentCollector, payload, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        collector.parse(Fetched([raw_of(payload, "ap-beijing", "SPOTPAID")]))


def test_an_item_of_another_zone_or_charge_type_is_refused(collector: TencentCollector) -> None:
    with pytest.raises(ParseError, match="zone ap-shanghai-4 answered for region ap-beijing"):
        collector.parse(Fetched([raw_of(answer("ap-shanghai", "SPOTPAID"), "ap-beijing", "SPOTPAID")]))
    with pytest.raises(ParseError, match="is 'SPOTPAID', asked for POSTPAID_BY_HOUR"):
        collector.parse(Fetched([raw_of(answer("ap-shanghai", "SPOTPAID"), "ap-shanghai", "POSTPAID_BY_HOUR")]))
    with pytest.raises(ParseError, match="charged per 'GB', expected HOUR"):
        collector.parse(edited("ap-shanghai", "SPOTPAID", 0, Price={"ChargeUnit": "GB", "UnitPrice": 1.0}))


def test_answers_without_any_gpu_offer_are_a_parse_error(collector: TencentCollector) -> None:
    empty = {"Response": {"InstanceTypeQuotaSet": [], "RequestId": "x"}}
    with pytest.raises(ParseError, match=r"no priced GPU instance type \(GT4, GN10X, .*, HCCPNV4h families\) in 1"):
        collector.parse(Fetched([raw_of(empty, "ap-beijing", "PREPAID")]))


def test_fixtures_are_what_the_builder_writes(tmp_path: Path) -> None:
    """The recorded answers are generated (tests/fixture_builders/tencent.py); they must not drift."""
    from tests.fixture_builders.tencent import ANSWERS

    for (region, charge), expected in ANSWERS.items():
        assert answer(region, charge)["Response"]["InstanceTypeQuotaSet"] == expected


def test_host_shape_from_cpu_and_memory_of_the_item(quotes: dict) -> None:
    shapes = {(key[1], quote.vcpus, quote.memory_gib) for key, quote in quotes.items()}
    assert ("GT4.4XLARGE96", 16, 96.0) in shapes and ("GT4.41XLARGE948", 164, 948.0) in shapes
    assert all(vcpus and memory for _, vcpus, memory in shapes)
