"""RunPod collector, parsing: per-GPU prices become per-instance offers per cloud and GPU count,
stockStatus decides what is offered, spot comes from the spot price or the minimum bid, and shape
changes or GraphQL errors are caught. Fixtures only."""

from __future__ import annotations

import copy
import json

import pytest

from collectors.base import Fetched, RawResponse
from collectors.errors import FetchError, ParseError
from collectors.runpod import RunpodCollector
from collectors.runpod.graphql import GRAPHQL_URL, max_counts, parse_alias, prices_query, request_body
from collectors.runpod.offers import not_offered
from collectors.sanity import check_quotes
from pricedb.models import Availability, Pricing, Unit
from pricedb.normalize import normalize
from tests.conftest import OBSERVED, fixture_bytes

PCIE, SXM = "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"
FILES = {PCIE: "gpu_type_a100_pcie.json", SXM: "gpu_type_a100_sxm.json"}
OD, SPOT = Pricing.ON_DEMAND, Pricing.SPOT
# Independent of the parser: USD per GPU-hour in the fixtures (on-demand, spot) and the counts
# whose stockStatus is not null.
PER_GPU = {
    (PCIE, "secure"): (1.39, None),
    (PCIE, "community"): (1.19, 0.42),
    (SXM, "secure"): (1.59, None),
    (SXM, "community"): (1.39, 0.59),
}
OFFERED = {
    (PCIE, "secure"): (1, 2, 3, 4),
    (PCIE, "community"): (1, 2, 3, 4),
    (SXM, "secure"): (1, 2, 3, 4, 8),
    (SXM, "community"): (1, 2, 4),
}


def expected_offers() -> dict[tuple[str, Pricing], float]:
    expected = {}
    for (gpu, cloud), (on_demand, spot) in PER_GPU.items():
        for n in OFFERED[(gpu, cloud)]:
            expected[(f"{gpu} x{n} ({cloud})", OD)] = round(on_demand * n, 6)
            if spot is not None:
                expected[(f"{gpu} x{n} ({cloud})", SPOT)] = round(spot * n, 6)
    return expected


def detail(gpu: str) -> dict:
    return json.loads(fixture_bytes("runpod", FILES[gpu]))


def raw_of(answer: dict, gpu: str = PCIE) -> RawResponse:
    return RawResponse(url=GRAPHQL_URL, fetched_at=OBSERVED, body=json.dumps(answer).encode(), label=f"prices of {gpu}")


def fetched(pcie: dict | None = None, sxm: dict | None = None) -> Fetched:
    pcie = detail(PCIE) if pcie is None else pcie
    sxm = detail(SXM) if sxm is None else sxm
    return Fetched([raw_of(pcie, PCIE), raw_of(sxm, SXM)])


def quotes_of(settings, **answers):
    return RunpodCollector(settings).parse(fetched(**answers))


def item(answer: dict) -> dict:
    return answer["data"]["gpuTypes"][0]


def test_parse_gives_exactly_the_offers_the_answers_hold(settings) -> None:
    quotes = quotes_of(settings)
    assert {(q.sku, q.pricing): q.price for q in quotes} == expected_offers()
    assert len(quotes) == 23


def test_per_gpu_prices_are_stored_per_instance(settings, fx_table) -> None:
    quote = next(q for q in quotes_of(settings) if (q.sku, q.pricing) == (f"{PCIE} x3 (community)", OD))
    assert (quote.price, quote.gpu_count) == (3.57, 3)
    figures = normalize(quote, fx_table, settings)
    usd = 6.8095 / 1.0163
    assert figures.cny_per_gpu_hour == pytest.approx(1.19 * usd)
    assert figures.cny_per_gb_hour == pytest.approx(3.57 * usd / 240)
    assert "communityPrice 1.19 USD per GPU-hour × 3 GPU(s)" in quote.notes and "stock Medium" in quote.notes


def test_every_quote_carries_hardware_region_and_billing(settings) -> None:
    for q in quotes_of(settings):
        gpu = PCIE if q.sku.startswith(PCIE) else SXM
        assert (q.provider, q.region, q.gpu_model, q.gpu_memory_gb) == ("runpod", "global", "A100", 80.0)
        assert q.form_factor == ("PCIe" if gpu == PCIE else "SXM4")
        assert q.sku.endswith((" (secure)", " (community)")) and f" x{q.gpu_count} " in q.sku
        assert (q.currency, q.unit, q.billing_increment_s, q.availability) == (
            "USD",
            Unit.HOUR,
            1,
            Availability.AVAILABLE,
        )
        assert (q.source_url, q.observed_at) == (GRAPHQL_URL, OBSERVED)


def test_secure_and_community_are_separate_offers_of_the_same_machine(settings) -> None:
    prices = {(q.sku, q.pricing): q.price for q in quotes_of(settings)}
    assert prices[(f"{SXM} x1 (secure)", OD)] == 1.59 and prices[(f"{SXM} x1 (community)", OD)] == 1.39
    assert (f"{SXM} x1 (secure)", SPOT) not in prices  # no secure spot price in the answer


def test_null_stock_means_not_offered_and_the_run_notes_say_which(settings) -> None:
    skus = {q.sku for q in quotes_of(settings)}
    assert f"{PCIE} x5 (secure)" not in skus and f"{SXM} x3 (community)" not in skus
    assert f"{SXM} x8 (secure)" in skus  # a gap in the counts does not end the list
    notes = not_offered(raw_of(detail(SXM), SXM))
    assert notes == [
        f"{SXM} secure cloud: x5, x6, x7 not offered now (stockStatus null), skipped",
        f"{SXM} community cloud: x3, x5, x6, x7, x8 not offered now (stockStatus null), skipped",
    ]


def test_spot_falls_back_to_the_minimum_bid_and_without_either_there_is_no_spot(settings) -> None:
    answer = detail(PCIE)
    item(answer)["communitySpotPrice"] = None
    spot = [q for q in quotes_of(settings, pcie=answer) if q.pricing is SPOT and q.sku.startswith(PCIE)]
    assert {q.sku: q.price for q in spot} == {f"{PCIE} x{n} (community)": round(0.42 * n, 6) for n in (1, 2, 3, 4)}
    assert all("minimumBidPrice" in q.notes for q in spot)
    for n in range(1, 5):
        item(answer)[f"community{n}"]["minimumBidPrice"] = None
    assert not [q for q in quotes_of(settings, pcie=answer) if q.pricing is SPOT and q.sku.startswith(PCIE)]


def test_a_cloud_without_an_on_demand_price_gives_no_on_demand_offer(settings) -> None:
    answer = detail(SXM)
    item(answer)["securePrice"] = 0
    skus = {q.sku for q in quotes_of(settings, sxm=answer) if q.pricing is OD}
    assert not any(sku.startswith(SXM) and sku.endswith("(secure)") for sku in skus)


def test_savings_plan_rates_are_noted_when_they_differ_from_on_demand(settings) -> None:
    plain = next(q for q in quotes_of(settings) if q.sku == f"{PCIE} x1 (secure)")
    assert "savings plans" not in plain.notes  # the fixture's plan rates equal on-demand
    answer = detail(PCIE)
    item(answer).update(oneMonthPrice=1.29, threeMonthPrice=1.19, sixMonthPrice=None)
    noted = next(q for q in quotes_of(settings, pcie=answer) if q.sku == f"{PCIE} x2 (secure)")
    assert "savings plans (prepaid, USD per GPU-hour): 1 month 1.29, 3 months 1.19" in noted.notes
    assert noted.pricing is OD and noted.price == 2.78  # noted, never stored as another pricing


def test_shared_sanity_checks_accept_every_quote(settings, fx_table) -> None:
    quotes, _ = every_quote(settings)
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes) == 30


# ----- every GPU type: each stored offer against its source row ------------------------------------
# What each RunPod id means, independent of the parser: (model, GB per GPU, form factor).
CARD_OF_ID = {
    PCIE: ("A100", 80.0, "PCIe"),
    SXM: ("A100", 80.0, "SXM4"),
    "NVIDIA GeForce RTX 4090": ("RTX4090", 24.0, "PCIe"),
    "NVIDIA H100 80GB HBM3": ("H100", 80.0, "SXM5"),  # RunPod's "H100 SXM"
    "NVIDIA L40S": ("L40S", 48.0, "PCIe"),
}
ALL_FILES = {**FILES, "NVIDIA GeForce RTX 4090": "gpu_type_rtx4090.json",
             "NVIDIA H100 80GB HBM3": "gpu_type_h100_sxm.json", "NVIDIA L40S": "gpu_type_l40s.json"}  # fmt: skip


def every_quote(settings):
    answers = {gpu: json.loads(fixture_bytes("runpod", name)) for gpu, name in ALL_FILES.items()}
    return RunpodCollector(settings).parse(Fetched([raw_of(a, gpu) for gpu, a in answers.items()])), answers


def test_every_stored_offer_has_the_card_count_memory_and_price_of_its_source_row(settings) -> None:
    quotes, answers = every_quote(settings)
    rows = {(gpu, key): value for gpu, a in answers.items() for key, value in item(a).items() if parse_alias(key)}
    offered = {(gpu, key) for (gpu, key), lowest in rows.items() if lowest["stockStatus"] is not None}
    seen = set()
    for q in quotes:
        gpu, rest = q.sku.rsplit(" x", 1)
        count, cloud = rest.split(" ")
        source, lowest = item(answers[gpu]), rows[(gpu, f"{cloud.strip('()')}{count}")]
        assert (q.gpu_model, q.gpu_memory_gb, q.form_factor) == CARD_OF_ID[gpu]
        assert q.gpu_memory_gb == source["memoryInGb"] and q.gpu_count == int(count)
        field = f"{cloud.strip('()')}{'SpotPrice' if q.pricing is SPOT else 'Price'}"
        per_gpu = source[field] if source[field] is not None else lowest["minimumBidPrice"]
        assert q.price == round(per_gpu * q.gpu_count, 6)
        assert lowest["stockStatus"] is not None and (q.vcpus, q.memory_gib) == (lowest["minVcpu"], lowest["minMemory"])
        seen.add((gpu, f"{cloud.strip('()')}{count}"))
    assert seen == offered  # every offered (cloud, count) of every type is stored; none that is sold out
    assert {q.gpu_model for q in quotes} == {"A100", "RTX4090", "H100", "L40S"}


def test_spot_dearer_than_on_demand_is_refused_by_the_sanity_checks(settings, fx_table) -> None:
    answer = detail(PCIE)
    item(answer)["communitySpotPrice"] = 1.50  # above communityPrice 1.19
    accepted, rejected = check_quotes(quotes_of(settings, pcie=answer), fx_table, settings)
    assert {r.quote.sku for r in rejected} == {f"{PCIE} x{n} (community)" for n in (1, 2, 3, 4)}
    assert all(r.quote.pricing is SPOT and "dearer than on-demand" in r.reason for r in rejected)
    assert len(accepted) == 23 - 4


def test_graphql_errors_in_a_200_answer_fail_the_run_with_runpods_message(settings) -> None:
    answer = json.loads(fixture_bytes("runpod", "error_unauthorized.json"))
    with pytest.raises(FetchError, match=r"RunPod GraphQL API answered prices of .* with errors: Unauthorized"):
        quotes_of(settings, pcie=answer)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: a.pop("data"), r"no data\.gpuTypes list"),
        (lambda a: a["data"].update(gpuTypes={"id": PCIE}), r"no data\.gpuTypes list"),
        (lambda a: item(a).update(community2="High"), "community2 is 'High', not a lowestPrice object"),
        (lambda a: item(a).update(communityPrice="1.19"), "communityPrice is '1.19', not a number"),
        (lambda a: item(a).update(id="NVIDIA GeForce RTX 3080 Ti", memoryInGb=12), "a card the table does not know"),
        (lambda a: [item(a).pop(k) for k in list(item(a)) if parse_alias(k)], "no lowestPrice answers"),
    ],
)
def test_shape_changes_are_parse_errors_naming_what_is_wrong(settings, change, message) -> None:
    answer = copy.deepcopy(detail(PCIE))
    change(answer)
    with pytest.raises(ParseError, match=message):
        quotes_of(settings, pcie=answer)


def test_the_price_query_asks_for_each_cloud_and_count_once() -> None:
    query = prices_query(PCIE, {"secure": 3, "community": 0})
    assert 'gpuTypes(input: {id: "NVIDIA A100 80GB PCIe"})' in query
    for n in (1, 2, 3):
        assert (
            f"secure{n}: lowestPrice(input: {{gpuCount: {n}, secureCloud: true}}) "
            "{ stockStatus minimumBidPrice minVcpu minMemory }" in query
        )
    assert "secure4:" not in query and "community1:" not in query
    for field in ("securePrice", "communityPrice", "secureSpotPrice", "communitySpotPrice", "oneMonthPrice"):
        assert f"    {field}\n" in query
    assert json.loads(request_body(query)) == {"query": query} and b'": "' not in request_body(query)


def test_max_counts_per_cloud_come_from_the_type_list() -> None:
    types = {t["id"]: t for t in json.loads(fixture_bytes("runpod", "gpu_types.json"))["data"]["gpuTypes"]}
    assert max_counts(types[PCIE]) == ({"secure": 8, "community": 4}, [])
    assert max_counts(types["NVIDIA H100 80GB HBM3"]) == (
        {"secure": 2, "community": 0},
        ["NVIDIA H100 80GB HBM3: not offered in community cloud"],
    )
    counts, notes = max_counts({"id": "X", "maxGpuCount": 20})
    assert counts == {"secure": 16, "community": 16} and "only up to 16" in notes[0]
    with pytest.raises(ParseError, match="no usable maxGpuCount"):
        max_counts({"id": "X", "maxGpuCount": "8"})


def test_host_shape_is_the_counts_min_vcpu_and_min_memory(settings) -> None:
    shapes = {(q.sku, q.pricing): (q.vcpus, q.memory_gib) for q in quotes_of(settings)}
    assert shapes[("NVIDIA A100 80GB PCIe x2 (secure)", Pricing.ON_DEMAND)] == (16, 234.0)
    assert shapes[("NVIDIA A100-SXM4-80GB x8 (secure)", Pricing.ON_DEMAND)] == (128, 936.0)
    assert shapes[("NVIDIA A100 80GB PCIe x1 (community)", Pricing.SPOT)] == (8, 117.0)
    answer = detail(PCIE)
    item(answer)["secure1"]["minVcpu"] = None  # RunPod sends none: the shape is unknown, the price stays
    first = next(q for q in quotes_of(settings, pcie=answer) if q.sku == "NVIDIA A100 80GB PCIe x1 (secure)")
    assert (first.vcpus, first.memory_gib, first.price) == (None, None, pytest.approx(1.39))
