"""Verda collector, parsing: string prices per instance-hour, every GPU type's card, count and
memory from the description, availability per location, spot, and long-term periods mapped to monthly / reserved
offers (other lengths only noted). Fixtures only."""

from __future__ import annotations

import copy
import json

import pytest

from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.sanity import check_quotes
from collectors.verda import VerdaCollector
from collectors.verda.api import (
    AVAILABILITY_URL,
    INSTANCE_TYPES_URL,
    LABEL_LONG_TERM,
    LABEL_ON_DEMAND,
    LABEL_SPOT,
    LABEL_TYPES,
    LONG_TERM_URL,
)
from collectors.verda.offers import gpu_types, price_of
from pricedb.cards import card
from pricedb.models import Availability, Pricing, Unit
from pricedb.normalize import normalize
from tests.conftest import OBSERVED, fixture_bytes

OD, SPOT, MONTHLY, R1Y = Pricing.ON_DEMAND, Pricing.SPOT, Pricing.MONTHLY, Pricing.RESERVED_1Y
# Independent of the parser: what fixtures/verda/*.json hold (see fixtures/README.md).
TYPES = {  # instance type -> (gpu_count, gpu_memory_gb, USD per hour, spot USD per hour)
    "1A100.22V": (1, 80.0, 1.16, 0.58),
    "2A100.44V": (2, 80.0, 2.32, 1.16),
    "4A100.88V": (4, 80.0, 4.64, 2.32),
    "8A100.176V": (8, 80.0, 9.28, 4.64),
    "1A100.40S.22V": (1, 40.0, 0.72, 0.22),
    "8A100.40S.176V": (8, 40.0, 5.77, 1.73),
}
LOCATIONS = ("FIN-01", "FIN-02", "FIN-03", "ICE-01")
ON_DEMAND_AT = {
    "1A100.22V": {"FIN-01", "FIN-03"},
    "2A100.44V": {"FIN-01", "FIN-02"},
    "4A100.88V": {"FIN-03"},
    "8A100.176V": {"FIN-03"},
    "1A100.40S.22V": {"FIN-03"},
    "8A100.40S.176V": {"FIN-03"},
}
SPOT_AT = {**ON_DEMAND_AT, "1A100.22V": {"FIN-01"}}  # no spot 1A100.22V in FIN-03
DISCOUNT = {MONTHLY: 5, R1Y: 25}  # fixture placeholders: 1_MONTH and 12_MONTHS periods
# What each card in a gpu.description means, independent of the parser: (model, GB per GPU, form factor).
CARD_OF_DESCRIPTION = {
    "A100 SXM4 80GB": ("A100", 80.0, "SXM4"),
    "A100 SXM4 40GB": ("A100", 40.0, "SXM4"),
    "H100 SXM5 80GB": ("H100", 80.0, "SXM5"),
    "H200 SXM5 141GB": ("H200", 141.0, "SXM5"),
    "B200 SXM6 180GB": ("B200", 180.0, "SXM6"),
    "L40S 48GB": ("L40S", 48.0, "PCIe"),
    "RTX6000 Ada 48GB": ("RTX6000Ada", 48.0, "PCIe"),
    "RTX A6000 48GB": ("A6000", 48.0, "PCIe"),
    "RTX PRO 6000 96GB": ("RTXPRO6000", 96.0, "PCIe"),
    "Tesla V100 16GB": ("V100", 16.0, None),  # SXM2 or PCIe: the description does not say
}
UNKNOWN = {"1B300.30V"}  # "B300 SXM6 262GB": the card table sells the B300 with 288 GB, so not guessed


def expected() -> dict[tuple[str, str, Pricing], tuple[float, Availability]]:
    def state(listed: bool) -> Availability:
        return Availability.AVAILABLE if listed else Availability.SOLD_OUT

    offers = {}
    for sku, (_, _, price, spot) in TYPES.items():
        for location in LOCATIONS:
            on_demand = location in ON_DEMAND_AT[sku]
            offers[(sku, location, OD)] = (price, state(on_demand))
            offers[(sku, location, SPOT)] = (spot, state(location in SPOT_AT[sku]))
            for pricing, pct in DISCOUNT.items():
                offers[(sku, location, pricing)] = (round(price * (100 - pct) / 100, 6), state(on_demand))
    return offers


def answers() -> dict[str, object]:
    names = {
        LABEL_TYPES: "instance_types.json",
        LABEL_ON_DEMAND: "availability_on_demand.json",
        LABEL_SPOT: "availability_spot.json",
        LABEL_LONG_TERM: "long_term_periods.json",
    }
    return {label: json.loads(fixture_bytes("verda", name)) for label, name in names.items()}


URLS = {
    LABEL_TYPES: INSTANCE_TYPES_URL,
    LABEL_ON_DEMAND: AVAILABILITY_URL.format(spot="false"),
    LABEL_SPOT: AVAILABILITY_URL.format(spot="true"),
    LABEL_LONG_TERM: LONG_TERM_URL,
}


def fetched(bodies: dict[str, object] | None = None) -> Fetched:
    bodies = answers() if bodies is None else bodies
    return Fetched(
        [
            RawResponse(url=URLS[label], fetched_at=OBSERVED, body=json.dumps(body).encode(), label=label)
            for label, body in bodies.items()
        ]
    )


def parse(settings, bodies: dict[str, object] | None = None):
    return VerdaCollector(settings).parse(fetched(bodies))


def changed(change) -> dict[str, object]:
    bodies = copy.deepcopy(answers())
    change(bodies)
    return bodies


def a100(bodies: dict, name: str) -> dict:
    return next(item for item in bodies[LABEL_TYPES] if item["instance_type"] == name)


def a100_quotes(quotes):
    return [q for q in quotes if q.gpu_model == "A100"]


def test_parse_gives_exactly_the_a100_offers_the_answers_hold(settings) -> None:
    quotes = a100_quotes(parse(settings))
    assert {(q.sku, q.region, q.pricing): (q.price, q.availability) for q in quotes} == expected()
    assert len(quotes) == 96


def test_every_stored_offer_has_the_card_count_memory_and_price_of_its_source_row(settings) -> None:
    bodies = answers()
    rows = {item["instance_type"]: item for item in bodies[LABEL_TYPES] if item["gpu"]["number_of_gpus"]}
    listed = {
        kind: {(e["location_code"], name) for e in bodies[label] for name in e["availabilities"]}
        for kind, label in (("on_demand", LABEL_ON_DEMAND), ("spot", LABEL_SPOT))
    }
    quotes = parse(settings)
    assert {q.sku for q in quotes} == set(rows) - UNKNOWN
    assert len(quotes) == len(set(rows) - UNKNOWN) * len(LOCATIONS) * 4  # on-demand, monthly, 1y, spot
    for q in quotes:
        row = rows[q.sku]
        count, card = row["gpu"]["description"].split("x ", 1)
        assert (q.gpu_model, q.gpu_memory_gb, q.form_factor) == CARD_OF_DESCRIPTION[card]
        assert q.gpu_count == int(count) == row["gpu"]["number_of_gpus"]
        assert q.gpu_count * q.gpu_memory_gb == row["gpu_memory"]["size_in_gigabytes"]
        on_demand = float(row["price_per_hour"])
        price = {OD: on_demand, SPOT: float(row["spot_price"])}.get(q.pricing)
        if price is None:  # a long-term contract: the discount off the on-demand rate
            price, kind = round(on_demand * (100 - DISCOUNT[q.pricing]) / 100, 6), "on_demand"
        else:
            kind = "spot" if q.pricing is SPOT else "on_demand"
        assert q.price == price
        assert q.availability is (
            Availability.AVAILABLE if (q.region, q.sku) in listed[kind] else Availability.SOLD_OUT
        )


def test_the_cards_verda_rents_are_all_stored(settings) -> None:
    cards = {(q.gpu_model, q.gpu_memory_gb) for q in parse(settings)}
    assert cards == {("A100", 80.0), ("A100", 40.0), ("H100", 80.0), ("H200", 141.0), ("B200", 180.0),
                     ("L40S", 48.0), ("RTX6000Ada", 48.0), ("A6000", 48.0), ("RTXPRO6000", 96.0),
                     ("V100", 16.0)}  # fmt: skip


def test_string_prices_become_numbers_per_instance(settings) -> None:
    quotes = {(q.sku, q.region, q.pricing): q for q in parse(settings)}
    quote = quotes[("8A100.40S.176V", "FIN-03", OD)]
    assert isinstance(quote.price, float) and quote.price == 5.77 and quote.gpu_count == 8
    assert "price_per_hour 5.77 USD per instance-hour" in quote.notes
    assert quotes[("1A100.40S.22V", "FIN-03", SPOT)].price == 0.22


def test_hardware_currency_and_units_of_every_a100_quote(settings) -> None:
    for q in a100_quotes(parse(settings)):
        count, memory, _, _ = TYPES[q.sku]
        assert (q.gpu_count, q.gpu_memory_gb, q.gpu_model, q.form_factor) == (count, memory, "A100", "SXM4")
        assert (q.provider, q.currency, q.unit, q.observed_at) == ("verda", "USD", Unit.HOUR, OBSERVED)
        assert q.source_url == INSTANCE_TYPES_URL


def test_long_term_periods_become_monthly_and_reserved_offers(settings, fx_table) -> None:
    quotes = {(q.sku, q.region, q.pricing): q for q in parse(settings)}
    monthly, reserved = quotes[("1A100.22V", "FIN-01", MONTHLY)], quotes[("1A100.22V", "FIN-01", R1Y)]
    assert (monthly.price, monthly.list_price, monthly.term_hours) == (1.102, 1.16, None)
    assert (reserved.price, reserved.list_price, reserved.term_hours) == (0.87, 1.16, 8760.0)
    assert "12_MONTHS" in reserved.notes and "fixture discount" in reserved.notes and "paid up front" in reserved.notes
    usd = 6.8095 / 1.0163
    assert normalize(reserved, fx_table, settings).cny_per_hour == pytest.approx(0.87 * usd)
    on_demand = quotes[("1A100.22V", "FIN-01", OD)].notes
    assert "3 months" in on_demand and "(6_MONTHS) −20%" in on_demand and "24_MONTHS" not in on_demand  # disabled
    assert not {q.pricing for q in quotes.values()} & {Pricing.RESERVED_3Y}


def test_two_lengths_for_one_pricing_keep_the_deeper_discount_and_note_the_other(settings) -> None:
    year = {"code": "1_YEAR", "name": "1 year", "is_enabled": True, "unit_name": "year", "unit_value": 1,
            "discount_percentage": 30.0}  # fmt: skip
    quotes = parse(settings, changed(lambda b: b[LABEL_LONG_TERM].append(year)))
    reserved = [q for q in quotes if (q.sku, q.region, q.pricing) == ("1A100.22V", "FIN-01", R1Y)]
    assert len(reserved) == 1 and reserved[0].price == 0.812 and "1_YEAR" in reserved[0].notes
    on_demand = next(q for q in quotes if (q.sku, q.region, q.pricing) == ("1A100.22V", "FIN-01", OD))
    assert "(12_MONTHS) −25%" in on_demand.notes


def test_without_the_periods_answer_only_on_demand_and_spot_are_parsed(settings) -> None:
    quotes = parse(settings, changed(lambda b: b.pop(LABEL_LONG_TERM)))
    assert {q.pricing for q in quotes} == {OD, SPOT} and len(a100_quotes(quotes)) == 48


def test_a_type_missing_from_a_location_list_is_sold_out_there(settings) -> None:
    quotes = {(q.sku, q.region, q.pricing): q for q in parse(settings)}
    spot = quotes[("1A100.22V", "FIN-03", SPOT)]
    assert spot.availability is Availability.SOLD_OUT and "spot availability list for FIN-03" in spot.notes
    assert quotes[("1A100.22V", "FIN-03", OD)].availability is Availability.AVAILABLE
    assert {q.availability for (_, region, _), q in quotes.items() if region == "ICE-01"} == {Availability.SOLD_OUT}


def test_configured_regions_are_the_only_ones_reported(settings) -> None:
    local = settings.model_copy(update={"regions": {"verda": ["FIN-02"]}})
    quotes = parse(local)
    assert {q.region for q in quotes} == {"FIN-02"}
    assert {q.sku for q in quotes if q.availability is Availability.AVAILABLE} == {"2A100.44V", "2H200.141S.88V"}


@pytest.mark.parametrize("spot", [None, "", "0.00"])
def test_no_spot_price_means_no_spot_offer(settings, spot) -> None:
    bodies = changed(lambda b: a100(b, "4A100.88V").update(spot_price=spot))
    assert not [q for q in parse(settings, bodies) if q.sku == "4A100.88V" and q.pricing is SPOT]


def test_cpu_types_cards_the_table_does_not_know_and_zero_prices_are_left_out(settings) -> None:
    bodies = changed(lambda b: a100(b, "4A100.88V").update(price_per_hour="0.00"))
    types, skipped = gpu_types(fetched(bodies).responses[0])
    assert {t.name for t in types} == set(TYPES) - {"4A100.88V"} | {
        t["instance_type"] for t in answers()[LABEL_TYPES] if t["gpu"]["number_of_gpus"]
    } - UNKNOWN - set(TYPES)
    assert skipped == {
        "unknown GPU, not collected: B300 SXM6 262GB": 1,
        "no price (0 or missing), not collected: 4A100.88V": 1,
    }
    skus = {q.sku for q in parse(settings, bodies)}
    assert "CPU.120V.480G" not in skus and not skus & UNKNOWN and "4A100.88V" not in skus


def test_the_40gb_a100_is_the_card_skypilot_calls_a100(settings) -> None:
    forty = {q.sku for q in parse(settings) if (q.gpu_model, q.gpu_memory_gb) == ("A100", 40.0)}
    assert forty == {"1A100.40S.22V", "8A100.40S.176V"}
    assert card("A100", 40.0, "SXM4").skypilot_name == "A100"  # the export's name; the card is not renamed


def test_spot_dearer_than_on_demand_is_refused_by_the_sanity_checks(settings, fx_table) -> None:
    bodies = changed(lambda b: a100(b, "1A100.22V").update(spot_price="1.50"))
    accepted, rejected = check_quotes(parse(settings, bodies), fx_table, settings)
    refused = {(r.quote.sku, r.quote.pricing) for r in rejected}
    assert refused == {("1A100.22V", SPOT)} and all("dearer than on-demand" in r.reason for r in rejected)
    assert {(q.sku, q.pricing) for q in accepted if q.sku == "1A100.22V"} == {
        (q.sku, q.pricing) for q in parse(settings) if q.sku == "1A100.22V" and q.pricing is not SPOT
    }


def test_shared_sanity_checks_accept_every_quote(settings, fx_table) -> None:
    quotes = parse(settings)
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: a100(b, "1A100.22V").update(price_per_hour="1,16"), "price_per_hour is '1,16', not a price"),
        (lambda b: a100(b, "1A100.22V").update(price_per_hour=None), "price_per_hour is empty"),
        (lambda b: a100(b, "1A100.22V").pop("currency"), "no 'currency' field"),
        (lambda b: a100(b, "2A100.44V")["gpu"].update(number_of_gpus=4), "disagrees with number_of_gpus 4"),
        (
            lambda b: a100(b, "2A100.44V")["gpu_memory"].update(size_in_gigabytes=80),
            "40 GB each, but the description says 80",
        ),
        (lambda b: a100(b, "2A100.44V")["gpu"].update(number_of_gpus="2"), "not a GPU count"),
        (lambda b: b.update({LABEL_TYPES: {"data": []}}), "expected a list of instance types"),
        (lambda b: b.update({LABEL_TYPES: []}), "lists no instance types"),
        (lambda b: b[LABEL_ON_DEMAND].append({"availabilities": []}), "without location_code"),
        (lambda b: b[LABEL_LONG_TERM][0].update(unit_name="week"), "is not months or years"),
        (lambda b: b[LABEL_LONG_TERM][0].update(discount_percentage=150), "is not 0–100"),
        (lambda b: b[LABEL_LONG_TERM][0].pop("discount_percentage"), "no 'discount_percentage' field"),
        (lambda b: b.pop(LABEL_SPOT), "answers missing from the run: available:spot"),
    ],
)
def test_shape_changes_are_parse_errors_naming_what_is_wrong(settings, change, message) -> None:
    with pytest.raises(ParseError, match=message):
        parse(settings, changed(change))


def test_no_known_gpu_at_all_is_a_parse_error_not_an_empty_success(settings) -> None:
    keep = UNKNOWN | {"CPU.120V.480G"}
    bodies = changed(lambda b: b.update({LABEL_TYPES: [t for t in b[LABEL_TYPES] if t["instance_type"] in keep]}))
    with pytest.raises(ParseError, match=r"none of the 2 instance types is a priced GPU the card table knows .*B300"):
        parse(settings, bodies)


def test_prices_are_read_as_the_strings_verda_sends() -> None:
    assert str(price_of("9.28", "x")) == "9.28" and price_of(" ", "x") is None and price_of(None, "x") is None
    for bad in ("NaN", "Infinity", "1.2.3", True, [1]):
        with pytest.raises(ParseError, match="not a price"):
            price_of(bad, "x")


def test_each_quote_carries_cpu_cores_and_memory(settings) -> None:
    shapes = {q.sku: (q.vcpus, q.memory_gib) for q in a100_quotes(parse(settings))}
    assert shapes == {
        "1A100.22V": (22, 120.0), "2A100.44V": (44, 240.0), "4A100.88V": (88, 480.0), "8A100.176V": (176, 960.0),
        "1A100.40S.22V": (22, 120.0), "8A100.40S.176V": (176, 960.0),
    }  # fmt: skip
