"""Vast.ai collector, parsing: the recorded search answers grouped into exactly the expected
offers (cheapest per group, with median and count), the storage conversion, odd hosts, null
fields, shape changes, and the shared sanity checks. Offline: fixtures only."""

from __future__ import annotations

import copy
import json
import re

import pytest

from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from collectors.vast import VastCollector
from collectors.vast.offers import HOURS_PER_STORAGE_MONTH, STANDARD_DISK_GB, country
from collectors.vast.query import BUNDLES_URL
from pricedb.models import Availability, Pricing
from tests.conftest import OBSERVED, fixture_bytes

OD, SPOT = Pricing.ON_DEMAND, Pricing.SPOT


def disk(storage_cost: float) -> float:
    """100 GB for an hour at a price per GB per 30-day month, computed here independently."""
    return storage_cost * 100 / (30 * 24)


# (region, sku, pricing) -> USD per hour for the whole offer: the cheapest host's dph_base or
# min_bid plus its 100 GB disk (fixtures/README.md, ## vast, lists the hosts).
EXPECTED = {
    ("CA", "A100-PCIE-80GB x1", OD): 0.78 + disk(0.1),
    ("CA", "A100-PCIE-80GB x1", SPOT): 0.45 + disk(0.1),
    ("CZ", "A100-PCIE-40GB x1", OD): 0.62 + disk(0.08),
    ("CZ", "A100-PCIE-40GB x1", SPOT): 0.40 + disk(0.08),
    ("US", "A100-SXM4-80GB x1", OD): 1.1378 + disk(0.15),
    ("US", "A100-SXM4-80GB x1", SPOT): 0.62 + disk(0.2),
    ("US", "A100-SXM4-80GB x8", OD): 9.328 + disk(0.12),
    ("US", "A100-SXM4-80GB x8", SPOT): 6.0 + disk(0.12),
    ("US", "A100X-80GB x1", OD): 0.95 + disk(0.15),
    ("US", "A100X-80GB x1", SPOT): 0.5 + disk(0.15),
    ("unknown", "A100-SXM4-40GB x4", OD): 2.6 + disk(0.1),
    ("unknown", "A100-SXM4-40GB x4", SPOT): 1.6 + disk(0.1),
}
# sku -> (gpu_count, gpu_memory_gb, form_factor, interconnect)
HARDWARE = {
    "A100-PCIE-80GB x1": (1, 80.0, "PCIe", "PCIe"),
    "A100-PCIE-40GB x1": (1, 40.0, "PCIe", "PCIe"),
    "A100-SXM4-80GB x1": (1, 80.0, "SXM4", "NVLink"),
    "A100-SXM4-80GB x8": (8, 80.0, "SXM4", "NVLink"),
    "A100X-80GB x1": (1, 80.0, "PCIe", "PCIe"),
    "A100-SXM4-40GB x4": (4, 40.0, "SXM4", "NVLink"),
}


def answers() -> dict[str, dict]:
    return {
        "on-demand": json.loads(fixture_bytes("vast", "bundles_on_demand.json")),
        "bid": json.loads(fixture_bytes("vast", "bundles_bid.json")),
    }


def fetched(bodies: dict[str, dict] | None = None) -> Fetched:
    bodies = answers() if bodies is None else bodies
    return Fetched(
        [
            RawResponse(url=BUNDLES_URL, fetched_at=OBSERVED, body=json.dumps(body).encode(), label=label)
            for label, body in bodies.items()
        ]
    )


def parse(bodies: dict[str, dict] | None = None, every_card: bool = False) -> dict:
    """The stored offers by (region, sku, pricing): the A100 ones (EXPECTED), or every card's."""
    quotes = VastCollector.__new__(VastCollector).parse(fetched(bodies))
    return {q.key[1:]: q for q in quotes if every_card or q.gpu_model == "A100"}


def by_key(quotes: dict) -> dict:
    return {(region, sku, Pricing(pricing)): q for (region, sku, pricing), q in quotes.items()}


def test_the_recorded_answers_give_exactly_the_expected_a100_offers() -> None:
    quotes = by_key(parse())
    assert set(quotes) == set(EXPECTED)
    for key, price in EXPECTED.items():
        assert quotes[key].price == pytest.approx(price, abs=1e-6), key


def test_every_a100_offer_is_per_instance_with_the_gpu_read_from_the_offer() -> None:
    for (_, sku, _), quote in by_key(parse()).items():
        assert (quote.gpu_count, quote.gpu_memory_gb, quote.form_factor, quote.interconnect) == HARDWARE[sku]
        assert quote.gpu_model == "A100" and quote.currency == "USD" and quote.unit.value == "hour"
        assert quote.provider == "vast" and quote.source_url == BUNDLES_URL and quote.observed_at == OBSERVED
        assert quote.availability is Availability.AVAILABLE
        assert quote.billing_increment_s == 1 and quote.billing_minimum_s == 0
        assert (quote.pricing is SPOT) == ("interruptible" in quote.notes)


def test_storage_is_per_gb_month_of_30_days_and_one_standard_disk() -> None:
    assert HOURS_PER_STORAGE_MONTH == 720 and STANDARD_DISK_GB == 100
    quote = by_key(parse())[("US", "A100-SXM4-80GB x1", OD)]
    assert quote.price == pytest.approx(1.1378 + 0.15 * 100 / 720, abs=1e-6)
    assert "dph_base 1.1378 + 100 GB disk at 0.15 USD/GB-month (0.0208 USD/h)" in quote.notes


def test_a_group_stores_its_cheapest_offer_with_median_and_count() -> None:
    quote = by_key(parse())[("US", "A100-SXM4-80GB x1", OD)]
    # Five hosts in the band: 1.1378, 1.166, 1.205, 1.7043 and the dear 9.99 (+ their disks).
    middle = 1.205 + disk(0.1)
    assert quote.notes.startswith(f"cheapest of 5 offers; median {middle:.4f} USD/h")
    assert "offer 24581301 on machine 31205 (Texas, US)" in quote.notes
    pair = by_key(parse())[("US", "A100-SXM4-80GB x8", OD)]
    median = ((9.328 + disk(0.12)) + (9.64 + disk(0.12))) / 2
    assert pair.notes.startswith(f"cheapest of 2 offers; median {median:.4f} USD/h")


def test_a_cheap_odd_host_is_left_out_and_named_not_taken_as_the_market() -> None:
    quote = by_key(parse())[("US", "A100-SXM4-80GB x1", OD)]
    assert quote.price > 1.0  # the 0.05 USD/h host in Utah would have been the cheapest
    assert re.search(r"left out, outside the plausible 0\.1–12 USD per GPU-hour: offer 24611900 at 0\.06", quote.notes)


def test_one_dear_host_moves_only_the_median_and_many_hosts_still_make_one_offer() -> None:
    bodies = answers()
    template = next(o for o in bodies["on-demand"]["offers"] if o["id"] == 24581777)
    for n in range(40):  # forty more hosts of the same group, all dearer
        host = copy.deepcopy(template)
        host.update(id=90000000 + n, machine_id=80000 + n, dph_base=11.5)
        bodies["on-demand"]["offers"].append(host)
    quotes = by_key(parse(bodies))
    assert len(quotes) == len(EXPECTED)  # still one offer per group
    quote = quotes[("US", "A100-SXM4-80GB x1", OD)]
    assert quote.price == pytest.approx(EXPECTED[("US", "A100-SXM4-80GB x1", OD)], abs=1e-6)
    assert quote.notes.startswith("cheapest of 45 offers; median 11.5278 USD/h")


def test_a_100_sxm_and_a100_sxm4_are_one_card_and_one_group() -> None:
    quote = by_key(parse())[("US", "A100-SXM4-80GB x8", OD)]
    assert "cheapest of 2 offers" in quote.notes
    names = {o["gpu_name"] for o in answers()["on-demand"]["offers"] if o["num_gpus"] == 8}
    assert names == {"A100 SXM4", "A100 SXM"}


def test_null_fields_do_not_break_the_grouping() -> None:
    offers = answers()["on-demand"]["offers"]
    assert any(o["cpu_cores"] is None for o in offers if o["id"] == 24590212)  # kept: US x1 has 5 offers
    quotes = by_key(parse())
    assert quotes[("unknown", "A100-SXM4-40GB x4", OD)].notes.endswith("(no location)")
    # gpu_ram null, storage_cost null, the unknown RTX 3060 and the 48GB RTX 4090 are in no group.
    listed = " ".join(q.notes for q in parse(every_card=True).values())
    for left_out in ("24616000", "24617000", "24623000", "24623500"):
        assert left_out not in listed


def test_memory_class_comes_from_gpu_ram_within_seven_percent() -> None:
    bodies = answers()
    assert next(o for o in bodies["on-demand"]["offers"] if o["id"] == 24380404)["gpu_ram"] == 40536
    assert by_key(parse(bodies))[("CZ", "A100-PCIE-40GB x1", OD)].gpu_memory_gb == 40.0
    for offer in bodies["on-demand"]["offers"]:
        if offer["id"] == 24380404:
            offer["gpu_ram"] = 61440  # 60 GB: neither class
    assert ("CZ", "A100-PCIE-40GB x1", OD) not in by_key(parse(bodies))


@pytest.mark.parametrize(
    ("geolocation", "region"),
    [("Texas, US", "US"), ("Quebec, CA", "CA"), ("US", "US"), ("Czechia, cz", "CZ"), (None, "unknown"),
     ("", "unknown"), ("Sweden", "unknown"), ("Hong Kong, Hong Kong", "unknown"), (42, "unknown")],
)  # fmt: skip
def test_region_is_the_country_code_of_geolocation(geolocation: object, region: str) -> None:
    assert country(geolocation) == region


def test_a_fraction_of_a_gpu_is_left_out() -> None:
    bodies = answers()
    for offer in bodies["on-demand"]["offers"]:
        if offer["id"] == 24500120:
            offer["gpu_frac"] = 0.5
    quote = by_key(parse(bodies))[("CA", "A100-PCIE-80GB x1", OD)]
    assert quote.price == pytest.approx(1.20 + disk(0.2), abs=1e-6)


def test_an_offer_without_a_field_the_search_always_returns_is_a_parse_error() -> None:
    bodies = answers()
    del bodies["on-demand"]["offers"][3]["dph_base"]
    with pytest.raises(ParseError, match="offer 4 has no 'dph_base' field"):
        parse(bodies)


def test_an_answer_without_offers_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"no 'offers' in the response \(found: error, msg"):
        parse({"on-demand": {"error": "invalid_request", "msg": "Invalid json body"}})


def test_answers_with_nothing_to_price_are_a_parse_error_naming_why() -> None:
    bodies = answers()
    del bodies["bid"]
    bodies["on-demand"]["offers"] = [
        o for o in bodies["on-demand"]["offers"] if o["id"] in (24616000, 24617000, 24623000)
    ]
    with pytest.raises(ParseError, match=r"3 offers read but no GPU offer.*1 × gpu_ram not a size.*1 × unknown GPU"):
        parse(bodies)
    with pytest.raises(ParseError, match="the answers were empty"):
        parse({"on-demand": {"offers": []}, "bid": {"offers": []}})


def test_parsed_quotes_pass_the_shared_sanity_checks(settings, fx_table) -> None:
    quotes = list(parse(every_card=True).values())
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes) == 27


# What each gpu_name of the fixtures means, independent of the parser: (model, form factor); the
# memory is gpu_ram (MB, usable) rounded to the size the card is sold in.
CARD_OF_NAME = {
    "A100 SXM4": ("A100", "SXM4"), "A100 SXM": ("A100", "SXM4"), "A100 PCIE": ("A100", "PCIe"),
    "A100X": ("A100", "PCIe"), "H100 SXM": ("H100", "SXM5"), "H100 NVL": ("H100", "PCIe"),
    "H200": ("H200", "SXM5"), "B200": ("B200", "SXM6"), "L40S": ("L40S", "PCIe"), "RTX A6000": ("A6000", "PCIe"),
    "RTX 4090": ("RTX4090", "PCIe"), "RTX 5090": ("RTX5090", "PCIe"), "RTX 3090": ("RTX3090", "PCIe"),
}  # fmt: skip
SOLD_AS = {40536: 40.0, 40960: 40.0, 81920: 80.0, 81559: 80.0, 95830: 94.0, 143771: 141.0, 183359: 180.0,
           46068: 48.0, 49140: 48.0, 24564: 24.0, 24576: 24.0, 32607: 32.0}  # fmt: skip


def test_every_stored_offer_has_the_card_count_memory_and_price_of_its_cheapest_source_offer() -> None:
    rows = {label: {o["id"]: o for o in body["offers"]} for label, body in answers().items()}
    quotes = parse(every_card=True)
    for (region, sku, pricing), q in quotes.items():
        offer_id = int(re.search(r"; offer (\d+) on machine", q.notes).group(1))
        row = rows["bid" if pricing == "spot" else "on-demand"][offer_id]
        assert (q.gpu_model, q.form_factor) == CARD_OF_NAME[row["gpu_name"]]
        assert q.gpu_memory_gb == SOLD_AS[row["gpu_ram"]] and q.gpu_count == row["num_gpus"]
        base = row["min_bid"] if pricing == "spot" else row["dph_base"]
        assert q.price == pytest.approx(base + disk(row["storage_cost"]), abs=1e-6)
        assert region == (row["geolocation"].rsplit(", ", 1)[-1] if row["geolocation"] else "unknown")
        name = "A100-SXM4" if row["gpu_name"] == "A100 SXM" else row["gpu_name"].replace(" ", "-")
        assert sku == f"{name}-{q.gpu_memory_gb:g}GB x{q.gpu_count}"
    cards = {(q.gpu_model, q.gpu_memory_gb) for q in quotes.values()}
    assert cards == {("A100", 80.0), ("A100", 40.0), ("H100", 80.0), ("H100", 94.0), ("H200", 141.0),
                     ("B200", 180.0), ("L40S", 48.0), ("A6000", 48.0), ("RTX4090", 24.0), ("RTX5090", 32.0),
                     ("RTX3090", 24.0)}  # fmt: skip


def test_a_card_the_table_does_not_know_and_a_size_it_is_not_sold_in_are_no_offers() -> None:
    offers = {o["id"]: o for o in answers()["on-demand"]["offers"]}
    assert (offers[24623000]["gpu_name"], offers[24623500]["gpu_ram"]) == ("RTX 3060", 49152)
    skus = {sku for _, sku, _ in parse(every_card=True)}
    assert not any("3060" in sku for sku in skus) and "RTX-4090-48GB x1" not in skus


def test_spot_dearer_than_on_demand_in_the_same_group_is_rejected_by_the_sanity_checks(settings, fx_table) -> None:
    bodies = answers()
    for offer in bodies["bid"]["offers"]:
        if offer["num_gpus"] == 8:
            offer["min_bid"] = 9.9  # above the cheapest on-demand host of the group (9.328)
    _, rejected = check_quotes(list(parse(bodies).values()), fx_table, settings)
    assert [r.as_record()["offer"] for r in rejected] == ["vast/US/A100-SXM4-80GB x8/spot"]
    assert "dearer than on-demand" in rejected[0].reason


def test_a_groups_host_shape_is_its_cheapest_offers_and_the_notes_say_so() -> None:
    quotes = by_key(parse())
    one = quotes[("US", "A100-SXM4-80GB x1", OD)]
    assert (one.vcpus, one.memory_gib) == (32, 125.0)  # cpu_cores_effective 32, cpu_ram 128000 MB
    assert "host shape 32 vCPUs, 125 GiB RAM: the cheapest offer's (cpu_cores_effective, cpu_ram)" in one.notes
    assert (quotes[("US", "A100-SXM4-80GB x8", OD)].vcpus, quotes[("US", "A100-SXM4-80GB x8", OD)].memory_gib) == (
        128, 1000.0
    )  # fmt: skip
