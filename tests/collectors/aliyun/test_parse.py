"""Alibaba Cloud parsing: the recorded answers become exactly the offers they hold — every GPU type's
card, count and memory from DescribeInstanceTypes (vGPU slices and unknown cards reported, not
priced), TradePrice/OriginalPrice per pricing model, stock from DescribeAvailableResource (sold-out
kept and marked), the cheapest spot zone with stock — and broken answers fail loudly."""

from __future__ import annotations

import asyncio
import json

import pytest

from collectors.aliyun import AliyunCollector
from collectors.aliyun.collector import FIXTURE_NOTE
from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport
from collectors.sanity import check_quotes
from pricedb.fx import FxTable
from pricedb.models import Availability, Pricing, Quote, Unit
from pricedb.settings import Settings
from tests.conftest import FIXTURES, OBSERVED, fixture_bytes

A100_80_1 = "ecs.gn7e-c16g1.4xlarge"
# Every offer the fixtures hold: (region, sku, pricing) -> (price, list_price, availability).
EXPECTED = {
    ("cn-beijing", "ecs.gn7-c12g1.3xlarge", "on_demand"): (27.14, 27.14, "available"),
    ("cn-beijing", "ecs.gn7-c13g1.26xlarge", "on_demand"): (217.12, 217.12, "sold_out"),
    ("cn-beijing", A100_80_1, "on_demand"): (34.742, 34.742, "available"),
    ("cn-beijing", "ecs.gn7e-c16g1.32xlarge", "on_demand"): (277.936, 277.936, "sold_out"),
    ("cn-beijing", "ecs.gn7-c12g1.3xlarge", "monthly"): (11866.0, 13960.0, "available"),
    ("cn-beijing", "ecs.gn7-c13g1.26xlarge", "monthly"): (94928.0, 111680.0, "available"),
    ("cn-beijing", A100_80_1, "monthly"): (15198.0, 17880.0, "available"),
    ("cn-beijing", "ecs.gn7e-c16g1.32xlarge", "monthly"): (121584.0, 143040.0, "available"),
    ("cn-beijing", "ecs.gn7-c12g1.3xlarge", "spot"): (5.428, 27.14, "sold_out"),
    ("cn-beijing", A100_80_1, "spot"): (6.948, 34.742, "available"),
    ("cn-hangzhou", A100_80_1, "on_demand"): (34.742, 34.742, "available"),
    ("cn-hangzhou", "ecs.gn7e-c16g1.8xlarge", "on_demand"): (69.484, 69.484, "available"),
    ("cn-hangzhou", A100_80_1, "monthly"): (15198.0, 17880.0, "available"),
    ("cn-hangzhou", "ecs.gn7e-c16g1.8xlarge", "monthly"): (30396.0, 35760.0, "available"),
    ("cn-hangzhou", A100_80_1, "spot"): (6.601, 34.742, "available"),
    ("cn-hangzhou", "ecs.gn7e-c16g1.8xlarge", "spot"): (13.897, 69.484, "available"),
    # the other GPU families (placeholder prices, see fixtures/README.md)
    ("cn-beijing", "ecs.gn5-c4g1.xlarge", "on_demand"): (12.0, 12.0, "available"),
    ("cn-beijing", "ecs.gn6e-c12g1.3xlarge", "on_demand"): (30.8, 30.8, "sold_out"),
    ("cn-beijing", "ecs.gn6i-c4g1.xlarge", "on_demand"): (7.4, 7.4, "available"),
    ("cn-beijing", "ecs.gn6v-c8g1.2xlarge", "on_demand"): (26.5, 26.5, "available"),
    ("cn-beijing", "ecs.gn7i-c8g1.2xlarge", "on_demand"): (9.6, 9.6, "available"),
    ("cn-beijing", "ecs.gn7s-c16g1.4xlarge", "on_demand"): (11.3, 11.3, "available"),
    ("cn-beijing", "ecs.gn8is.2xlarge", "on_demand"): (15.84, 15.84, "available"),
    ("cn-beijing", "ecs.gn6i-c4g1.xlarge", "monthly"): (2363.0, 2780.0, "available"),
    ("cn-beijing", "ecs.gn7i-c8g1.2xlarge", "monthly"): (3026.0, 3560.0, "available"),
    ("cn-beijing", "ecs.gn6i-c4g1.xlarge", "spot"): (1.48, 7.4, "available"),
    ("cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "on_demand"): (9.6, 9.6, "available"),
    ("cn-hangzhou", "ecs.gn7i-c8g1.2xlarge", "monthly"): (3026.0, 3560.0, "available"),
    ("cn-shanghai", "ecs.gn7i-c16g1.4xlarge", "on_demand"): (12.2, 12.2, "available"),
    ("cn-shanghai", "ecs.gn7i-c8g1.2xlarge", "on_demand"): (9.6, 9.6, "available"),
    ("cn-shanghai", "ecs.gn7i-c8g1.2xlarge", "monthly"): (3026.0, 3560.0, "available"),
    ("cn-shanghai", "ecs.gn7i-c8g1.2xlarge", "spot"): (1.92, 9.6, "available"),
    ("cn-beijing", "ecs.sgn7i-vws-m2.xlarge", "on_demand"): (1.2, 1.2, "available"),
    ("cn-beijing", "ecs.sgn7i-vws-m2.xlarge", "monthly"): (391.0, 460.0, "available"),
}
GPUS = {
    "ecs.gn7-c12g1.3xlarge": (1, 40.0),
    "ecs.gn7-c13g1.26xlarge": (8, 40.0),
    A100_80_1: (1, 80.0),
    "ecs.gn7e-c16g1.8xlarge": (2, 80.0),
    "ecs.gn7e-c16g1.32xlarge": (8, 80.0),
    "ecs.gn5-c4g1.xlarge": (1, 16.0),
    "ecs.gn6e-c12g1.3xlarge": (1, 32.0),
    "ecs.gn6i-c4g1.xlarge": (1, 16.0),
    "ecs.gn6v-c8g1.2xlarge": (1, 16.0),
    "ecs.gn7i-c8g1.2xlarge": (1, 24.0),
    "ecs.gn7i-c16g1.4xlarge": (1, 24.0),
    "ecs.gn7s-c16g1.4xlarge": (1, 24.0),
    "ecs.gn8is.2xlarge": (1, 48.0),
    "ecs.sgn7i-vws-m2.xlarge": (1, 2.0),  # one 1/12 slice of an A10
}
TYPE_PAGES = ("instance_types_page1.json", "instance_types_page2.json")


def described() -> dict[str, dict]:
    """Every DescribeInstanceTypes row of the recorded pages, by InstanceTypeId."""
    rows = [
        r for name in TYPE_PAGES for r in json.loads(fixture_bytes("aliyun", name))["InstanceTypes"]["InstanceType"]
    ]
    return {r["InstanceTypeId"]: r for r in rows}


async def _fetch_offline(settings: Settings) -> Fetched:
    collector = AliyunCollector(settings)
    async with make_client(settings, ReplayTransport(Replay.load(FIXTURES, "aliyun"))) as client:
        return await collector.fetch(Http(client, "aliyun", settings), collector.full_scope())


@pytest.fixture
def offline(settings: Settings) -> Settings:
    return settings.model_copy(update={"offline": True})


@pytest.fixture
def fetched(offline: Settings) -> Fetched:
    return asyncio.run(_fetch_offline(offline))


def by_key(quotes: list[Quote]) -> dict[tuple[str, str, str], Quote]:
    return {(q.region, q.sku, q.pricing.value): q for q in quotes}


def test_the_fixtures_give_exactly_the_offers_they_hold(offline: Settings, fetched: Fetched) -> None:
    quotes = by_key(AliyunCollector(offline).parse(fetched))
    assert {k: (q.price, q.list_price, q.availability.value) for k, q in quotes.items()} == EXPECTED
    for (_, sku, pricing), quote in quotes.items():
        assert (quote.gpu_count, quote.gpu_memory_gb) == GPUS[sku]
        if quote.gpu_model == "A100":  # the HGX families: form factor by rule, as GPUSpec does not say it
            assert (quote.form_factor, quote.interconnect) == ("SXM4", "NVLink")
        assert quote.currency == "CNY" and quote.tax_included is True
        assert quote.unit is (Unit.MONTH if pricing == "monthly" else Unit.HOUR)
        assert (quote.billing_increment_s, quote.billing_minimum_s) == (1, 0)
        assert quote.notes and quote.notes.startswith(FIXTURE_NOTE)
        assert quote.source_url.startswith(f"https://ecs.{quote.region}.aliyuncs.com/?RegionId={quote.region}&")
    assert len({q.gpu_model for q in quotes.values()}) == 7


# GPUSpec as DescribeInstanceTypes states it -> the card model offers carry (the card table's names).
MODELS = {"NVIDIA A100": "A100", "NVIDIA A10": "A10", "NVIDIA T4": "T4", "NVIDIA V100": "V100",
          "NVIDIA P100": "P100", "NVIDIA A30": "A30", "NVIDIA L20": "L20"}  # fmt: skip


def test_every_offer_has_the_card_count_and_memory_of_its_described_type(offline: Settings, fetched: Fetched) -> None:
    rows = described()
    for quote in AliyunCollector(offline).parse(fetched):
        row = rows[quote.sku]
        assert quote.gpu_model == MODELS[row["GPUSpec"]], quote.sku
        assert quote.gpu_count == row["GPUAmount"] and quote.gpu_memory_gb == row["GPUMemorySize"], quote.sku
        assert (quote.vcpus, quote.memory_gib) == (row["CpuCoreCount"], row["MemorySize"])
        # a vGPU family's type is a slice of one card: its memory over the card's
        sliced = row["InstanceTypeFamily"].startswith(("ecs.vgn", "ecs.sgn"))
        share = row["GPUMemorySize"] / 24.0 if sliced else None  # the A10 the fixtures' slice is cut from
        assert quote.gpu_fraction == (pytest.approx(share) if sliced else None), quote.sku


def test_a_vgpu_slice_is_marked_and_never_a_whole_card(offline: Settings, fetched: Fetched) -> None:
    quote = by_key(AliyunCollector(offline).parse(fetched))[("cn-beijing", "ecs.sgn7i-vws-m2.xlarge", "on_demand")]
    assert (quote.gpu_model, quote.gpu_memory_gb, quote.gpu_count) == ("A10", 2.0, 1)
    assert (quote.gpu_fraction, quote.gpu_partition) == (pytest.approx(1 / 12), "1/12 GPU (vGPU, shared)")


def test_unknown_cards_are_reported_and_never_priced(offline: Settings, fetched: Fetched) -> None:
    assert fetched.notes[0] == (
        "unknown GPU, not collected: GPUSpec 'NVIDIA GPU' with 96 GB (1 type: ecs.ebmgn8v.48xlarge)"
    )
    asked = {raw.label.split(":")[3] for raw in fetched.responses if raw.label.startswith("price:")}
    assert not asked & {"ecs.ebmgn8v.48xlarge", "ecs.g7.large"}


def test_live_quotes_do_not_claim_to_be_fixture_prices(settings: Settings, fetched: Fetched) -> None:
    quotes = AliyunCollector(settings).parse(fetched)
    assert quotes and not any(FIXTURE_NOTE in (q.notes or "") for q in quotes)


def test_the_parsed_quotes_pass_the_sanity_checks(offline: Settings, fetched: Fetched, fx_table: FxTable) -> None:
    quotes = AliyunCollector(offline).parse(fetched)
    accepted, rejected = check_quotes(quotes, fx_table, offline)
    assert not rejected and len(accepted) == len(EXPECTED)


def test_notes_explain_the_price_and_the_stock(offline: Settings, fetched: Fetched) -> None:
    quotes = by_key(AliyunCollector(offline).parse(fetched))
    monthly = quotes[("cn-beijing", A100_80_1, "monthly")].notes or ""
    assert "1-month subscription" in monthly and "包月实例 8.5 折" in monthly
    assert "the order with the default system disk is 15212" in monthly
    sold_out = quotes[("cn-beijing", "ecs.gn7e-c16g1.32xlarge", "on_demand")].notes or ""
    assert "stock: cn-beijing-i WithoutStock" in sold_out
    closed = quotes[("cn-hangzhou", A100_80_1, "on_demand")].notes or ""
    assert "cn-hangzhou-j ClosedWithStock" in closed


def test_spot_takes_the_cheapest_zone_with_stock(offline: Settings, fetched: Fetched) -> None:
    quotes = by_key(AliyunCollector(offline).parse(fetched))
    # cn-beijing-l asks 6.512 but has no spot stock; cn-beijing-i (6.948) does.
    beijing = quotes[("cn-beijing", A100_80_1, "spot")]
    assert beijing.price == 6.948 and "only zone with stock: cn-beijing-i" in (beijing.notes or "")
    hangzhou = quotes[("cn-hangzhou", A100_80_1, "spot")]
    assert hangzhou.price == 6.601 and "cheapest of 2 zones with stock: cn-hangzhou-j" in (hangzhou.notes or "")
    nowhere = quotes[("cn-beijing", "ecs.gn7-c12g1.3xlarge", "spot")]
    assert nowhere.availability is Availability.SOLD_OUT and "no zone has spot stock" in (nowhere.notes or "")
    assert all(q.pricing.interruptible for q in quotes.values() if q.pricing is Pricing.SPOT)


# ----- the GPU facts come from the answer, not from the name -------------------------------------
def _with_types(fetched: Fetched, edit) -> Fetched:
    responses = []
    for raw in fetched.responses:
        if raw.label == "types:gpu:1":
            document = json.loads(raw.body)
            edit(document["InstanceTypes"]["InstanceType"])
            raw = RawResponse(raw.url, raw.fetched_at, body=json.dumps(document).encode(), label=raw.label)
        responses.append(raw)
    return Fetched(responses)


def test_gpu_count_and_memory_are_read_from_the_response(offline: Settings, fetched: Fetched) -> None:
    def edit(items: list[dict]) -> None:
        items[0].update(GPUAmount=2, GPUMemorySize=79.6)  # ecs.gn7-c12g1.3xlarge, reported as 2 x ~80 GiB

    quotes = by_key(AliyunCollector(offline).parse(_with_types(fetched, edit)))
    quote = quotes[("cn-beijing", "ecs.gn7-c12g1.3xlarge", "on_demand")]
    assert (quote.gpu_count, quote.gpu_memory_gb) == (2, 80.0)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("GPUAmount", None, "GPUAmount"),
        ("GPUMemorySize", "lots", "GPUMemorySize"),
        ("GPUSpec", None, "GPUSpec"),
    ],
)
def test_a_gpu_type_without_usable_gpu_fields_is_a_parse_error(
    offline: Settings, fetched: Fetched, field: str, value: object, message: str
) -> None:
    def edit(items: list[dict]) -> None:
        items[0][field] = value

    with pytest.raises(ParseError, match=message):
        AliyunCollector(offline).parse(_with_types(fetched, edit))


# ----- broken answers ----------------------------------------------------------------------------
def raw(name: str, label: str) -> RawResponse:
    return RawResponse(
        "https://ecs.cn-beijing.aliyuncs.com/?x", OBSERVED, body=fixture_bytes("aliyun", name), label=label
    )


def body(document: object, label: str) -> RawResponse:
    return RawResponse(
        "https://ecs.cn-beijing.aliyuncs.com/?x", OBSERVED, body=json.dumps(document).encode(), label=label
    )


TYPES = [raw("instance_types_page1.json", "types:gpu:1")]  # page 2 (gn6v, gn6e, gn5, …) left out


def test_a_price_without_instance_detail_uses_the_order_total(offline: Settings) -> None:
    document = json.loads(fixture_bytes("aliyun", "price_cn-beijing_hour_gn7e-c16g1.4xlarge.json"))
    del document["PriceInfo"]["Price"]["DetailInfos"]
    quotes = AliyunCollector(offline).parse(
        Fetched([*TYPES, body(document, f"price:cn-beijing:on_demand:{A100_80_1}")])
    )
    assert quotes[0].price == 34.784 and "whole order" in (quotes[0].notes or "")
    assert quotes[0].availability is Availability.UNKNOWN  # no stock answer was read


@pytest.mark.parametrize(
    ("document", "label", "message"),
    [
        ({"RequestId": "x"}, f"price:cn-beijing:on_demand:{A100_80_1}", "PriceInfo.Price"),
        (
            {"RequestId": "x", "PriceInfo": {"Price": {"TradePrice": 1.0}}},
            f"price:cn-beijing:on_demand:{A100_80_1}",
            "Currency",
        ),
        (
            {"RequestId": "x", "Code": "Throttling.User", "Message": "slow down"},
            "stock:cn-beijing:PostPaid",
            "Throttling.User",
        ),
        ({"RequestId": "x"}, "stock:cn-beijing:PostPaid", "AvailableZones"),
        ({"RequestId": "x", "NextToken": ""}, "types:gpu:2", "InstanceTypes.InstanceType"),
        ({"RequestId": "x"}, "mystery", "unexpected response label"),
    ],
)
def test_answers_in_an_unknown_shape_are_parse_errors(offline: Settings, document, label: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        AliyunCollector(offline).parse(Fetched([*TYPES, body(document, label)]))


def test_an_unknown_stock_status_is_a_parse_error(offline: Settings) -> None:
    document = json.loads(fixture_bytes("aliyun", "stock_cn-beijing_postpaid.json"))
    document["AvailableZones"]["AvailableZone"][0]["AvailableResources"]["AvailableResource"][0]["SupportedResources"][
        "SupportedResource"
    ][0]["StatusCategory"] = "Maybe"
    with pytest.raises(ParseError, match="unknown status 'Maybe'"):
        AliyunCollector(offline).parse(Fetched([*TYPES, body(document, "stock:cn-beijing:PostPaid")]))


def test_a_price_for_an_undescribed_type_is_a_parse_error(offline: Settings) -> None:
    price = raw("price_cn-beijing_hour_gn6v-c8g1.2xlarge.json", "price:cn-beijing:on_demand:ecs.gn6v-c8g1.2xlarge")
    with pytest.raises(ParseError, match="did not describe"):
        AliyunCollector(offline).parse(Fetched([*TYPES, price]))  # page 2 (gn6v, …) is missing


def test_host_shape_from_cpu_core_count_and_memory_size(offline: Settings, fetched: Fetched) -> None:
    quotes = by_key(AliyunCollector(offline).parse(fetched))
    shapes = {(sku, q.vcpus, q.memory_gib) for (_, sku, _), q in quotes.items()}
    assert ("ecs.gn7e-c16g1.4xlarge", 16, 125.0) in shapes and ("ecs.gn7e-c16g1.8xlarge", 32, 250.0) in shapes
    assert all(vcpus and memory for _, vcpus, memory in shapes)
