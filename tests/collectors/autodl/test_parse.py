"""AutoDL collector, parsing: the recorded answers turned into exactly the expected per-instance
offers (1/2/4/8 GPUs of one machine), the unit constant, availability from idle counts, monthly
packages, shape changes and the shared sanity checks. Offline: fixtures only."""

from __future__ import annotations

import copy
import json

import pytest

from collectors.autodl import AutodlCollector
from collectors.autodl.api import GPU_TYPE_URL, MACHINE_LIST_URL, REGION_TAG_URL
from collectors.autodl.machines import INSTANCE_SIZES, PRICE_UNIT_CNY
from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from pricedb.models import Availability, Pricing, Unit
from tests.conftest import OBSERVED, fixture_bytes

OD, MONTHLY = Pricing.ON_DEMAND, Pricing.MONTHLY
OK, OUT = Availability.AVAILABLE, Availability.SOLD_OUT
SXM, PCIE = "A100-SXM4-80GB", "A100-PCIE-40GB"
WEST, BEIJING, NEIMENG = "west-B,west-C", "beijing-A,beijing-B,beijing-D,beijing-E", "neimeng-A,neimeng-C,neimeng-D"

# (region, sku, pricing) -> (CNY per instance per hour or month, availability). Per GPU: payg_price
# 5980 → ¥5.98, 6580 → ¥6.58, 3450 → ¥3.45, 3980 → ¥3.98; the monthly package 3180000 → ¥3180.
EXPECTED = {
    ("west-B", f"{SXM} x1", OD): (5.98, OK),  # four machines can rent 1 GPU now
    ("west-B", f"{SXM} x2", OD): (11.96, OK),
    ("west-B", f"{SXM} x4", OD): (23.92, OK),
    ("west-B", f"{SXM} x8", OD): (47.84, OK),  # 063机 and 162机 have 8 idle
    ("west-B", f"{SXM} x1", MONTHLY): (3180.0, OK),  # 180机 asks 3080 but has nothing idle
    ("west-B", f"{SXM} x2", MONTHLY): (6360.0, OK),
    ("west-B", f"{SXM} x4", MONTHLY): (12720.0, OK),
    ("west-B", f"{SXM} x8", MONTHLY): (25440.0, OK),
    ("west-C", f"{SXM} x1", OD): (5.98, OK),
    ("west-C", f"{SXM} x2", OD): (11.96, OK),  # 171机, on page 2
    ("west-C", f"{SXM} x4", OD): (26.32, OK),  # only 117机 (¥6.58) has 4 free
    ("west-C", f"{SXM} x8", OD): (47.84, OUT),  # nobody has 8 free: the cheapest machine, sold out
    ("west-C", f"{SXM} x1", MONTHLY): (3180.0, OK),  # 133机: 3 idle but 1 orderable
    ("west-C", f"{SXM} x2", MONTHLY): (6360.0, OUT),
    ("west-C", f"{SXM} x4", MONTHLY): (12720.0, OUT),
    ("west-C", f"{SXM} x8", MONTHLY): (25440.0, OUT),
    ("beijing-B", f"{PCIE} x1", OD): (3.45, OK),
    ("beijing-B", f"{PCIE} x2", OD): (6.9, OK),
    ("beijing-B", f"{PCIE} x4", OD): (13.8, OUT),
    ("beijing-D", f"{PCIE} x1", OD): (3.45, OUT),
    ("beijing-D", f"{PCIE} x2", OD): (6.9, OUT),
    ("beijing-D", f"{PCIE} x4", OD): (13.8, OUT),
    **{("neimeng-C", f"{SXM} x{n}", OD): (5.98 * n, OUT) for n in (1, 2, 4, 8)},  # the region has 0 idle
    **{("neimeng-C", f"{SXM} x{n}", MONTHLY): (3180.0 * n, OUT) for n in (1, 2, 4, 8)},
}


def responses(**changes: dict) -> list[tuple[str, str, dict]]:
    """(label, url, body) of the recorded walk; `changes` replaces bodies by file name."""
    files = [
        ("regions", REGION_TAG_URL, "region_tag.json"),
        (f"gpu types {WEST}", GPU_TYPE_URL, "gpu_type_west.json"),
        (f"machines {WEST} page 1", MACHINE_LIST_URL, "machine_list_west_page1.json"),
        (f"machines {WEST} page 2", MACHINE_LIST_URL, "machine_list_west_page2.json"),
        (f"gpu types {BEIJING}", GPU_TYPE_URL, "gpu_type_beijing.json"),
        (f"machines {BEIJING} page 1", MACHINE_LIST_URL, "machine_list_beijing_page1.json"),
        (f"gpu types {NEIMENG}", GPU_TYPE_URL, "gpu_type_neimeng.json"),
        (f"machines {NEIMENG} page 1", MACHINE_LIST_URL, "machine_list_neimeng_page1.json"),
        ("gpu types foshan-A", GPU_TYPE_URL, "gpu_type_foshan.json"),
        ("machines foshan-A page 1", MACHINE_LIST_URL, "machine_list_foshan_page1.json"),
    ]
    return [(label, url, changes.get(name) or json.loads(fixture_bytes("autodl", name))) for label, url, name in files]


def body(name: str) -> dict:
    return copy.deepcopy(json.loads(fixture_bytes("autodl", name)))


def parse(walk: list[tuple[str, str, dict]] | None = None, every_card: bool = False) -> dict:
    """The stored offers by (region, sku, pricing): the A100 ones (EXPECTED), or every card's."""
    raws = [
        RawResponse(url=url, fetched_at=OBSERVED, body=json.dumps(data, ensure_ascii=False).encode(), label=label)
        for label, url, data in (responses() if walk is None else walk)
    ]
    quotes = AutodlCollector.__new__(AutodlCollector).parse(Fetched(raws))
    return {(q.region, q.sku, q.pricing): q for q in quotes if every_card or q.gpu_model == "A100"}


def test_the_recorded_walk_gives_exactly_the_expected_a100_offers() -> None:
    quotes = parse()
    assert set(quotes) == set(EXPECTED)
    for key, (price, availability) in EXPECTED.items():
        assert quotes[key].price == pytest.approx(price), key
        assert quotes[key].availability is availability, key


def test_prices_are_per_gpu_integers_in_thousandths_of_a_yuan_made_per_instance() -> None:
    assert PRICE_UNIT_CNY == 0.001 and INSTANCE_SIZES == (1, 2, 4, 8)
    quotes = parse()
    for n in INSTANCE_SIZES:
        quote = quotes[("west-B", f"{SXM} x{n}", OD)]
        assert quote.price == pytest.approx(5980 * 0.001 * n)
        assert quote.gpu_count == n and quote.gpu_memory_gb == 80.0 and quote.form_factor == "SXM4"
        assert f"5.98 CNY per GPU-hour (payg_price 5980) × {n}" in quote.notes
        assert "integer prices read as 0.001 CNY each" in quote.notes
    pcie = quotes[("beijing-B", f"{PCIE} x2", OD)]
    assert (pcie.gpu_count, pcie.gpu_memory_gb, pcie.form_factor, pcie.interconnect) == (2, 40.0, "PCIe", "PCIe")


def test_every_offer_is_in_cny_with_per_second_billing() -> None:
    for quote in parse(every_card=True).values():
        assert quote.provider == "autodl" and quote.currency == "CNY"
        assert quote.unit is (Unit.HOUR if quote.pricing is OD else Unit.MONTH)
        assert quote.billing_increment_s == 1 and quote.observed_at == OBSERVED
        assert quote.source_url == MACHINE_LIST_URL


def test_a_group_stores_its_cheapest_free_machine_with_median_and_count() -> None:
    quote = parse()[("west-B", f"{SXM} x1", OD)]
    # Free for one GPU: 063机 5.98, 071机 5.98, 102机 6.28, 162机 6.58; 120机/141机 have none idle.
    assert quote.notes.startswith("cheapest of 4 machines with 1 GPU free (6 have 1+ GPUs); median 6.13 CNY/h")
    assert "machine 3a5440b582 (063机) in 西北B区" in quote.notes


def test_gpu_order_num_caps_what_a_machine_can_rent() -> None:
    # 133机 reports 3 idle GPUs but 1 orderable: it counts for one GPU, not for two.
    quotes = parse()
    assert "machine 5c9e02d7b1 (133机)" in quotes[("west-C", f"{SXM} x1", MONTHLY)].notes
    assert quotes[("west-C", f"{SXM} x2", MONTHLY)].availability is OUT


def test_a_machine_on_two_pages_is_counted_once() -> None:
    quote = parse()[("west-B", f"{SXM} x8", OD)]
    assert quote.notes.startswith("cheapest of 2 machines with 8 GPUs free (6 have 8+ GPUs)")


def test_sold_out_offers_keep_the_cheapest_price_and_say_why() -> None:
    quotes = parse()
    west = quotes[("west-C", f"{SXM} x8", OD)]
    assert west.notes.startswith("sold out: no machine has 8 GPUs free (by the machines' idle counts)")
    assert "cheapest of 5 machines with 8+ GPUs; median 47.84 CNY/h" in west.notes
    inner_mongolia = quotes[("neimeng-C", f"{SXM} x1", OD)]
    assert inner_mongolia.notes.startswith("sold out: no machine has 1 GPU free (the region reports 0 idle")


def test_a_region_reporting_no_idle_gpus_makes_its_offers_sold_out() -> None:
    counts = body("gpu_type_west.json")
    counts["data"][1]["A100-SXM4-80GB"]["idle_gpu_num"] = 0  # the machines still claim idle GPUs
    quotes = parse(responses(**{"gpu_type_west.json": counts}))
    west = [q for (region, _, _), q in quotes.items() if region.startswith("west")]
    assert len(west) == 16 and {q.availability for q in west} == {OUT}


def test_monthly_packages_become_monthly_offers_daily_and_weekly_are_only_noted() -> None:
    quotes = parse()
    monthly = quotes[("west-B", f"{SXM} x2", MONTHLY)]
    assert monthly.unit is Unit.MONTH and monthly.price == pytest.approx(2 * 3180000 * 0.001)
    assert "monthly package (包月) 3180 CNY per GPU × 2" in monthly.notes
    hourly = quotes[("west-B", f"{SXM} x2", OD)]
    assert "daily 139, weekly 899 CNY per GPU packages published too, not collected" in hourly.notes
    assert {q.pricing for q in quotes.values()} == {OD, MONTHLY}


def test_a_machine_without_pay_as_you_go_gives_only_its_package() -> None:
    pages = body("machine_list_west_page2.json")
    pages["data"]["list"] = [m for m in pages["data"]["list"] if m["machine_id"] == "c3d5e7f9a1"]  # payg false
    for machine in pages["data"]["list"]:
        machine["gpu_idle_num"] = machine["gpu_order_num"] = 8
    only = [r for r in responses(**{"machine_list_west_page2.json": pages}) if "page 1" not in r[0]]
    quotes = parse(only)
    west = {key: q for key, q in quotes.items() if key[0] == "west-B"}
    assert {pricing for (_, _, pricing) in west} == {MONTHLY}
    assert west[("west-B", f"{SXM} x1", MONTHLY)].price == pytest.approx(3080.0)


def test_an_undiscounted_origin_price_becomes_the_list_price() -> None:
    quote = parse()[("west-C", f"{SXM} x4", OD)]
    assert quote.price == pytest.approx(26.32) and quote.list_price == pytest.approx(4 * 6.98)
    assert parse()[("west-B", f"{SXM} x4", OD)].list_price is None


# What each AutoDL gpu_name of the fixtures means, independent of the parser: (model, form factor);
# the memory is gpu_memory (bytes) in GiB.
CARD_OF_NAME = {
    SXM: ("A100", "SXM4"), PCIE: ("A100", "PCIe"), "A800-80GB": ("A800", None), "RTX 4090": ("RTX4090", "PCIe"),
    "RTX 3090": ("RTX3090", "PCIe"), "A40": ("A40", "PCIe"),
}  # fmt: skip


def test_every_stored_offer_has_the_card_count_memory_and_price_of_its_machine() -> None:
    machines = {m["machine_id"]: m for _, _, b in responses() if "list" in (b["data"] or {}) for m in b["data"]["list"]}
    quotes = parse(every_card=True)
    assert len(quotes) == 61
    for (region, sku, pricing), q in quotes.items():
        machine = machines[q.notes.split("; machine ", 1)[1].split(" ", 1)[0]]
        name, count = sku.rsplit(" x", 1)
        assert (name, region) == (machine["gpu_name"], machine["region_sign"])
        assert (q.gpu_model, q.form_factor) == CARD_OF_NAME[name]
        assert q.gpu_memory_gb == machine["gpu_memory"] / 2**30 and q.gpu_count == int(count) <= machine["gpu_number"]
        kind = "payg" if pricing is OD else "monthly"
        per_gpu = next(s["current_price"] for s in machine["machine_sku_info"] if s["type"] == kind) / 1000
        assert q.price == pytest.approx(per_gpu * q.gpu_count)
    cards = {(q.gpu_model, q.gpu_memory_gb) for q in quotes.values()}
    assert cards == {("A100", 80.0), ("A100", 40.0), ("A800", 80.0), ("RTX4090", 24.0), ("RTX3090", 24.0),
                     ("A40", 48.0)}  # fmt: skip


def test_types_and_machines_the_card_table_does_not_know_are_never_priced() -> None:
    page = body("machine_list_beijing_page1.json")
    page["data"]["list"][3]["gpu_name"] = "vGPU-32GB"  # the A800 machine, renamed
    page["data"]["list"][4]["gpu_memory"] = 48 * 2**30  # an RTX 4090 machine with 48 GB: not a size it is sold in
    quotes = parse(responses(**{"machine_list_beijing_page1.json": page}), every_card=True)
    assert not any(sku.startswith(("vGPU", "A800")) for _, sku, _ in quotes)
    assert "machine 1a3c5e7a9c" not in " ".join(q.notes for q in quotes.values())


def test_a_machine_without_a_field_the_list_always_carries_is_a_parse_error() -> None:
    page = body("machine_list_beijing_page1.json")
    del page["data"]["list"][1]["gpu_idle_num"]
    with pytest.raises(ParseError, match="item 2 has no 'gpu_idle_num' field"):
        parse(responses(**{"machine_list_beijing_page1.json": page}))


def test_no_a100_machine_anywhere_is_a_parse_error_naming_why() -> None:
    walk = [r for r in responses() if not r[0].startswith("machines")]
    with pytest.raises(ParseError, match=r"no GPU machine with a price .*no machines listed"):
        parse(walk)
    page = body("machine_list_beijing_page1.json")
    page["data"]["list"] = [m for m in page["data"]["list"] if m["gpu_name"] == "A800-80GB"]
    page["data"]["list"][0]["gpu_name"] = "vGPU-48GB"
    walk = [r for r in responses(**{"machine_list_beijing_page1.json": page}) if "beijing" in r[0] or r[0] == "regions"]
    with pytest.raises(ParseError, match="1 × a GPU the card table does not know"):
        parse(walk)


def test_an_answer_that_is_not_a_success_envelope_is_a_parse_error() -> None:
    walk = responses(**{"gpu_type_west.json": {"code": "AuthorizeFailed", "msg": "认证失败; 登录超时"}})
    with pytest.raises(ParseError, match="not a successful AutoDL envelope"):
        parse(walk)


def test_parsed_quotes_pass_the_shared_sanity_checks(settings, fx_table) -> None:
    quotes = list(parse(every_card=True).values())
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes) == 61


def test_host_shape_is_the_machines_cpu_and_memory_per_gpu_times_the_gpus() -> None:
    quotes = parse()
    one, two = quotes[("beijing-B", "A100-PCIE-40GB x1", OD)], quotes[("beijing-B", "A100-PCIE-40GB x2", OD)]
    assert (one.vcpus, one.memory_gib) == (10, 80.0) and (two.vcpus, two.memory_gib) == (20, 160.0)
    west = quotes[("west-B", "A100-SXM4-80GB x8", OD)]
    assert (west.vcpus, west.memory_gib) == (8 * 14, 8 * 123480309760 / 2**30)  # mem_per_gpu is bytes
    assert "host shape: that machine's cpu_per_gpu and mem_per_gpu × GPUs" in west.notes
