"""Lambda collector: parsing the recorded instance-types answer (every GPU type: cents → USD, the
card, GPU count and memory, capacity → availability per region), its error handling, and fetching
(API key, Lambda's error bodies, retries, base-URL override, offline replay, a local stand-in
server). No network."""

from __future__ import annotations

import copy
import json

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.base import Fetched, RawResponse
from collectors.errors import FetchError, MissingCredentials, ParseError
from collectors.lambda_ import LambdaCollector
from collectors.lambda_.collector import INSTANCE_TYPES_URL
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.sanity import check_quotes
from pricedb.models import Availability, Pricing, Unit
from pricedb.settings import Settings
from tests.conftest import FIXTURES, OBSERVED, fetch_now, fixture_bytes

KEY = "secret_lambda-test-key_0123456789"
# Independent of the parser: what fixtures/lambda/instance_types.json holds (see fixtures/README.md).
USD = {  # sku -> USD per instance-hour (price_cents_per_hour / 100)
    "gpu_1x_a100": 1.99,
    "gpu_1x_a100_sxm4": 1.99,
    "gpu_2x_a100": 3.98,
    "gpu_4x_a100": 7.96,
    "gpu_8x_a100": 15.92,
    "gpu_8x_a100_80gb_sxm4": 22.32,
}
HARDWARE = {  # sku -> (gpu_count, gpu_memory_gb, form_factor)
    "gpu_1x_a100": (1, 40.0, "PCIe"),
    "gpu_1x_a100_sxm4": (1, 40.0, "SXM4"),
    "gpu_2x_a100": (2, 40.0, "PCIe"),
    "gpu_4x_a100": (4, 40.0, "PCIe"),
    "gpu_8x_a100": (8, 40.0, "SXM4"),
    "gpu_8x_a100_80gb_sxm4": (8, 80.0, "SXM4"),
}
CAPACITY = {
    "gpu_1x_a100": set(),
    "gpu_1x_a100_sxm4": {"us-east-1", "us-west-1"},
    "gpu_2x_a100": {"us-west-1"},
    "gpu_4x_a100": set(),
    "gpu_8x_a100": {"us-east-1"},
    "gpu_8x_a100_80gb_sxm4": {"us-midwest-1"},
}
# Every region some type has capacity in (the other GPUs add us-west-2, us-south-1, asia-northeast-1).
SERVING = {"us-east-1", "us-west-1", "us-west-2", "us-south-1", "us-midwest-1", "asia-northeast-1"}
# What each gpu_description in the fixture means, independent of the parser: (model, GB per GPU, form factor).
CARD_OF_DESCRIPTION = {
    "A100 (40 GB PCIe)": ("A100", 40.0, "PCIe"),
    "A100 (40 GB SXM4)": ("A100", 40.0, "SXM4"),
    "A100 (80 GB SXM4)": ("A100", 80.0, "SXM4"),
    "H100 (80 GB PCIe)": ("H100", 80.0, "PCIe"),
    "H100 (80 GB SXM5)": ("H100", 80.0, "SXM5"),
    "B200 (180 GB SXM6)": ("B200", 180.0, "SXM6"),
    "GH200 (96 GB)": ("GH200", 96.0, "Superchip"),
    "A10 (24 GB PCIe)": ("A10", 24.0, "PCIe"),
    "A6000 (48 GB)": ("A6000", 48.0, "PCIe"),
    "Tesla V100 (16 GB)": ("V100", 16.0, None),  # SXM2 or PCIe: the description does not say
}


def body() -> dict:
    return json.loads(fixture_bytes("lambda", "instance_types.json"))


def fetched(answer: dict | None = None) -> Fetched:
    data = json.dumps(body() if answer is None else answer).encode()
    return Fetched([RawResponse(url=INSTANCE_TYPES_URL, fetched_at=OBSERVED, body=data, label="instance-types")])


def parse(settings: Settings, answer: dict | None = None):
    return LambdaCollector(settings).parse(fetched(answer))


def offers(quotes) -> dict[tuple[str, str], tuple[float, Availability]]:
    return {(q.sku, q.region): (q.price, q.availability) for q in quotes}


# ----- parsing ----------------------------------------------------------------------------------
def a100(quotes):
    return [q for q in quotes if q.gpu_model == "A100"]


def test_every_a100_type_in_every_serving_region_priced_in_usd_with_its_capacity(settings) -> None:
    expected = {
        (sku, region): (usd, Availability.AVAILABLE if region in CAPACITY[sku] else Availability.SOLD_OUT)
        for sku, usd in USD.items()
        for region in SERVING
    }
    quotes = a100(parse(settings))
    assert offers(quotes) == expected
    assert len(quotes) == 36


def test_hardware_units_billing_and_source_of_each_a100_quote(settings) -> None:
    for q in a100(parse(settings)):
        assert (q.gpu_count, q.gpu_memory_gb, q.form_factor) == HARDWARE[q.sku]
        assert (q.provider, q.gpu_model, q.currency, q.unit, q.pricing) == (
            "lambda",
            "A100",
            "USD",
            Unit.HOUR,
            Pricing.ON_DEMAND,
        )
        assert (q.billing_increment_s, q.billing_minimum_s, q.tax_included) == (60, 0, False)
        assert (q.source_url, q.observed_at) == (INSTANCE_TYPES_URL, OBSERVED)
        assert q.interconnect == ("NVLink" if q.form_factor == "SXM4" else "PCIe")


def test_every_stored_offer_has_the_card_count_memory_and_price_of_its_source_row(settings) -> None:
    rows = {name: item["instance_type"] for name, item in body()["data"].items()}
    quotes = parse(settings)
    assert {q.sku for q in quotes} == set(rows)  # every GPU type of the answer, none left out
    assert len(quotes) == len(rows) * len(SERVING)
    for q in quotes:
        row = rows[q.sku]
        assert (q.gpu_model, q.gpu_memory_gb, q.form_factor) == CARD_OF_DESCRIPTION[row["gpu_description"]]
        assert q.gpu_count == row["specs"]["gpus"] == int(row["description"].split("x ", 1)[0])
        assert row["description"] == f"{q.gpu_count}x {row['gpu_description']}"
        assert q.price == row["price_cents_per_hour"] / 100 and q.currency == "USD"
        listed = {r["name"] for r in body()["data"][q.sku]["regions_with_capacity_available"]}
        assert q.availability is (Availability.AVAILABLE if q.region in listed else Availability.SOLD_OUT)


def test_the_cards_lambda_rents_are_all_stored(settings) -> None:
    cards = {(q.gpu_model, q.gpu_memory_gb) for q in parse(settings)}
    assert cards == {("A100", 40.0), ("A100", 80.0), ("H100", 80.0), ("B200", 180.0), ("GH200", 96.0),
                     ("A10", 24.0), ("A6000", 48.0), ("V100", 16.0)}  # fmt: skip


def _with_traps() -> dict:
    """The recorded answer plus an unknown card, a CPU type and a GPU type priced at 0 cents."""
    answer = body()
    unknown = copy.deepcopy(answer["data"]["gpu_1x_a10"])
    unknown["instance_type"].update(name="gpu_1x_rtx4090d", description="1x RTX 4090D (24 GB)",
                                    gpu_description="RTX 4090D (24 GB)")  # fmt: skip
    cpu = copy.deepcopy(answer["data"]["gpu_1x_a10"])
    cpu["instance_type"].update(name="cpu_4x_general", description="4x CPU", gpu_description="")
    cpu["instance_type"]["specs"].update(gpus=0, vcpus=4, memory_gib=16)
    free = copy.deepcopy(answer["data"]["gpu_1x_a6000"])
    free["instance_type"].update(name="gpu_1x_a6000_promo", price_cents_per_hour=0)
    answer["data"].update(gpu_1x_rtx4090d=unknown, cpu_4x_general=cpu, gpu_1x_a6000_promo=free)
    return answer


def test_unknown_cards_cpu_types_and_zero_prices_are_no_offers_and_are_counted_in_the_notes(settings) -> None:
    quotes = parse(settings, _with_traps())
    assert {q.sku for q in quotes} == set(body()["data"])  # none of the three is an offer; nothing is guessed
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(INSTANCE_TYPES_URL).mock(return_value=httpx.Response(200, json=_with_traps()))
        notes = fetch(keyed(settings)).notes
    assert notes == [
        "no price (0 or missing), not collected: gpu_1x_a6000_promo (1 item)",
        "unknown GPU, not collected: RTX 4090D (24 GB) (1 item)",
    ]


def test_the_recorded_answer_leaves_nothing_out(settings) -> None:
    offline = settings.model_copy(update={"offline": True})
    assert fetch(offline, ReplayTransport(Replay.load(FIXTURES, "lambda"))).notes == []


def test_cents_become_dollars_and_the_notes_show_the_conversion(settings) -> None:
    quote = next(q for q in parse(settings) if (q.sku, q.region) == ("gpu_8x_a100", "us-east-1"))
    assert quote.price == 15.92
    assert "price_cents_per_hour 1592 = 15.92 USD" in quote.notes and "capacity" in quote.notes


def test_the_sold_out_type_is_kept_everywhere_and_says_what_the_api_cannot_tell(settings) -> None:
    sold = [q for q in parse(settings) if q.sku == "gpu_1x_a100"]
    assert {q.availability for q in sold} == {Availability.SOLD_OUT} and len(sold) == len(SERVING)
    assert all("cannot tell 'sold out' from 'not offered here'" in q.notes for q in sold)


def test_every_region_any_type_is_listed_in_is_reported(settings) -> None:
    quotes = a100(parse(settings))
    assert {q.sku for q in quotes} == set(USD)
    assert {q.region for q in quotes} == SERVING  # asia-northeast-1 has only the A10 and A6000 listed


def test_configured_regions_are_the_only_ones_reported(settings) -> None:
    local = settings.model_copy(update={"regions": {"lambda": ["us-east-1", "europe-central-1"]}})
    quotes = a100(parse(local))
    assert {q.region for q in quotes} == {"us-east-1", "europe-central-1"}
    available = {q.sku for q in quotes if q.availability is Availability.AVAILABLE}
    assert available == {"gpu_1x_a100_sxm4", "gpu_8x_a100"}  # us-west-1 capacity is not asked for


def test_shared_sanity_checks_accept_every_quote(settings, fx_table) -> None:
    quotes = parse(settings)
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes)


def _changed(change) -> dict:
    answer = copy.deepcopy(body())
    change(answer)
    return answer


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.pop("data"), "no 'data' object"),
        (lambda b: b.update(data={}), "lists no instance types"),
        (lambda b: b["data"]["gpu_8x_a100"].pop("instance_type"), "gpu_8x_a100 has no 'instance_type'"),
        (lambda b: b["data"]["gpu_8x_a100"]["instance_type"].pop("price_cents_per_hour"), "'price_cents_per_hour'"),
        (lambda b: b["data"]["gpu_8x_a100"]["instance_type"].update(price_cents_per_hour="1592"), "not a number"),
        (lambda b: b["data"]["gpu_8x_a100"]["instance_type"]["specs"].update(gpus=-1), "not a GPU count"),
        (lambda b: b["data"]["gpu_8x_a100"]["instance_type"]["specs"].update(gpus=4), "cannot tell which is right"),
        (lambda b: b["data"]["gpu_8x_a100"].pop("regions_with_capacity_available"), "regions_with_capacity_available"),
        (lambda b: b["data"]["gpu_8x_a100"]["regions_with_capacity_available"].append({}), "region without a name"),
    ],
)
def test_shape_changes_are_parse_errors_naming_what_is_wrong(settings, change, message) -> None:
    with pytest.raises(ParseError, match=message):
        parse(settings, _changed(change))


def test_no_known_gpu_at_all_is_a_parse_error_not_an_empty_success(settings) -> None:
    def only_unknown(b: dict) -> None:
        item = b["data"]["gpu_1x_a10"]
        item["instance_type"]["gpu_description"] = "RTX 4090D (24 GB)"
        b["data"] = {"gpu_1x_a10": item}

    with pytest.raises(ParseError, match="none of the 1 instance types holds a priced GPU the card table knows"):
        parse(settings, _changed(only_unknown))


def test_no_capacity_anywhere_asks_for_the_regions_setting(settings) -> None:
    def empty(b: dict) -> None:
        for item in b["data"].values():
            item["regions_with_capacity_available"] = []

    with pytest.raises(ParseError, match="GPUPRICE_LAMBDA_REGIONS"):
        parse(settings, _changed(empty))
    local = settings.model_copy(update={"regions": {"lambda": ["us-east-1"]}})
    quotes = parse(local, _changed(empty))
    assert len(quotes) == len(body()["data"]) and {q.availability for q in quotes} == {Availability.SOLD_OUT}


def test_a_body_that_is_not_json_is_a_parse_error(settings) -> None:
    raw = RawResponse(url=INSTANCE_TYPES_URL, fetched_at=OBSERVED, body=b"<html>Cloudflare</html>")
    with pytest.raises(ParseError, match="not JSON"):
        LambdaCollector(settings).parse(Fetched([raw]))


# ----- fetching ---------------------------------------------------------------------------------
def keyed(settings: Settings) -> Settings:
    return settings.model_copy(update={"lambda_api_key": SecretStr(KEY)})


def fetch(settings: Settings, transport: httpx.AsyncBaseTransport | None = None) -> Fetched:
    return fetch_now(LambdaCollector(settings), transport)


def test_the_key_is_sent_as_a_bearer_token_to_the_current_host(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get("https://cloud.lambda.ai/api/v1/instance-types").mock(
            return_value=httpx.Response(200, content=fixture_bytes("lambda", "instance_types.json"))
        )
        result = fetch(keyed(settings))
    assert route.call_count == 1
    assert route.calls[0].request.headers["Authorization"] == f"Bearer {KEY}"
    assert [raw.url for raw in result.responses] == [INSTANCE_TYPES_URL] and KEY not in INSTANCE_TYPES_URL
    assert len(LambdaCollector(settings).parse(result)) == 90


@pytest.mark.parametrize("key", [None, SecretStr("  ")])
def test_without_a_key_the_run_is_skipped_naming_the_setting(settings, key) -> None:
    with respx.mock(assert_all_mocked=True), pytest.raises(MissingCredentials, match="set GPUPRICE_LAMBDA_API_KEY"):
        fetch(settings.model_copy(update={"lambda_api_key": key}))


@pytest.mark.parametrize(
    ("status", "name", "words"),
    [
        (401, "error_invalid_api_key.json", "global/invalid-api-key: API key was invalid, expired, or deleted."),
        (403, "error_account_inactive.json", "global/account-inactive: Your account is inactive."),
    ],
)
def test_lambda_error_bodies_fail_the_run_in_lambdas_words(settings, status, name, words) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(INSTANCE_TYPES_URL).mock(
            return_value=httpx.Response(status, content=fixture_bytes("lambda", name))
        )
        with pytest.raises(FetchError) as failure:
            fetch(keyed(settings))
    message = str(failure.value)
    assert route.call_count == 1  # client errors are not retried
    assert words in message and "check GPUPRICE_LAMBDA_API_KEY" in message and KEY not in message


def test_server_errors_and_rate_limits_are_retried(settings) -> None:
    answers = [
        httpx.Response(503, text="upstream busy"),
        httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"code": "global/rate-limited"}}),
        httpx.Response(200, content=fixture_bytes("lambda", "instance_types.json")),
    ]
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(INSTANCE_TYPES_URL).mock(side_effect=answers)
        result = fetch(keyed(settings))
    assert route.call_count == 3 and len(result.responses) == 1


def test_base_url_override_replaces_the_host_and_keeps_the_path(settings) -> None:
    local = keyed(settings).model_copy(update={"base_urls": {"lambda": "http://mirror.test/lambda"}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get("http://mirror.test/lambda/api/v1/instance-types").mock(
            return_value=httpx.Response(200, content=fixture_bytes("lambda", "instance_types.json"))
        )
        result = fetch(local)
    assert route.call_count == 1 and result.responses[0].url == INSTANCE_TYPES_URL


def test_offline_replay_needs_no_key(settings) -> None:
    offline = settings.model_copy(update={"offline": True})
    result = fetch(offline, ReplayTransport(Replay.load(FIXTURES, "lambda")))
    assert len(LambdaCollector(offline).parse(result)) == 90


def test_a_local_stand_in_server_gets_the_key_and_serves_the_recorded_answer(settings) -> None:
    with serve_replay([Replay.load(FIXTURES, "lambda")]) as server:
        result = fetch(keyed(settings).model_copy(update={"base_urls": {"lambda": server.url}}))
        seen = list(server.requests)
    assert [(method, path) for method, path, _, _ in seen] == [("GET", "/api/v1/instance-types")]
    assert seen[0][2]["Authorization"] == f"Bearer {KEY}"
    assert len(LambdaCollector(settings).parse(result)) == 90


def test_the_key_setting_is_secret_and_lambda_api_key_is_not_read(monkeypatch) -> None:
    monkeypatch.setenv("GPUPRICE_LAMBDA_API_KEY", KEY)
    monkeypatch.setenv("LAMBDA_API_KEY", "an-aws-lambda-shared-secret")
    loaded = Settings()
    assert loaded.lambda_api_key is not None and loaded.lambda_api_key.get_secret_value() == KEY
    assert KEY not in repr(loaded) and KEY not in str(loaded.model_dump())
    monkeypatch.delenv("GPUPRICE_LAMBDA_API_KEY")
    assert Settings().lambda_api_key is None


def test_each_quote_carries_the_host_shape_from_specs(settings) -> None:
    shapes = {q.sku: (q.vcpus, q.memory_gib) for q in a100(parse(settings))}
    assert shapes == {"gpu_8x_a100_80gb_sxm4": (240, 1800.0), "gpu_8x_a100": (124, 1800.0),
                      "gpu_4x_a100": (120, 800.0), "gpu_2x_a100": (60, 400.0), "gpu_1x_a100_sxm4": (30, 200.0),
                      "gpu_1x_a100": (30, 200.0)}  # fmt: skip
    answer = body()
    del answer["data"]["gpu_1x_a100"]["instance_type"]["specs"]["memory_gib"]
    partial = {q.sku: (q.vcpus, q.memory_gib) for q in parse(settings, answer)}
    assert partial["gpu_1x_a100"] == (None, None) and partial["gpu_8x_a100"] == (124, 1800.0)  # unknown, not a failure
