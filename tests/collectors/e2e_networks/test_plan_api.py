"""E2E Networks' MyAccount plan API: with the three credentials set, the GPU plan list is fetched (the
key as `apikey`, the token as a bearer header, project and location in the query) and every GPU plan
of the recorded answer becomes its offers, each checked against its plan row (card, memory, count,
host, prices, committed terms as whole-term prices, availability); the traps (a plan listed once per OS
image, a Windows image, a CPU plan, a name that leaves the memory open, a card the table lacks, a zero
price, a 90-day term); E2E's failure envelopes; 401/403 echoing the key fail the run with the key
redacted; an incomplete set of credentials falls back to the page and says so."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
import respx
from pydantic import SecretStr

from collectors.base import Fetched, RawResponse
from collectors.e2e import E2eCollector
from collectors.e2e.collector import PRICING_URL
from collectors.e2e.plan_names import plan_gpu
from collectors.e2e.plans_api import PLANS_URL, plans_url
from collectors.errors import FetchError, ParseError
from collectors.runner import run_provider
from collectors.sanity import check_quotes
from pricedb.card_names import UnknownGpu
from pricedb.models import Availability, Pricing, Unit
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import OBSERVED, fetch_now, fixture_bytes

API_KEY, TOKEN, PROJECT = "e2e-test-api-key-0001", "e2e-test-bearer-token-0001", "12345"
# The card and per-GPU memory each plan-name token says (E2E's names: `GDC3.A10080-…` = A100 80 GB).
TOKENS = {"A10080": ("A100", 80.0), "H100": ("H100", 80.0), "L40S": ("L40S", 48.0), "A30": ("A30", 24.0),
          "H200": ("H200", 141.0), "T4": ("T4", 16.0)}  # fmt: skip
NAME = re.compile(r"^[^.]+\.(?:(\d+)x)?([A-Za-z0-9]+)-")
NOT_OFFERS = {"GDC-A.A100-1.120GB", "GDC.RTX3080-8.30GB", "C3.8GB"}  # memory left open, unknown card, CPU plan
PRICING_OF_DAYS = {30: Pricing.MONTHLY, 365: Pricing.RESERVED_1Y, 1095: Pricing.RESERVED_3Y}
STATUS = {True: Availability.AVAILABLE, False: Availability.SOLD_OUT, None: Availability.UNKNOWN}


def answer() -> dict:
    return json.loads(fixture_bytes("e2e", "plans_delhi.json"))


def plan_rows() -> dict[str, dict]:
    """The answer's plans by sku_name, the first of each (a plan comes once per OS image), Windows left out."""
    rows: dict[str, dict] = {}
    for item in answer()["data"]:
        if "Windows" not in item["image"]:
            rows.setdefault(item["specs"]["sku_name"], item)
    return rows


def fetched(body: dict | None = None, location: str = "Delhi") -> Fetched:
    raw_body = json.dumps(body if body is not None else answer()).encode()
    return Fetched([RawResponse(plans_url(location), OBSERVED, body=raw_body, label=f"plans:{location}")])


@pytest.fixture
def keyed(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"e2e_api_key": SecretStr(API_KEY), "e2e_auth_token": SecretStr(TOKEN),
                "e2e_project_id": SecretStr(PROJECT)}
    )  # fmt: skip


@pytest.fixture
def quotes(keyed: Settings):
    return E2eCollector(keyed).parse(fetched())


def test_every_offer_is_its_plan_row_with_each_term_as_published(quotes) -> None:
    rows = plan_rows()
    expected = {}
    for sku, item in rows.items():
        if sku in NOT_OFFERS:
            continue
        specs = item["specs"]
        if specs["price_per_hour"] > 0:
            expected[(sku, Pricing.ON_DEMAND)] = (specs["price_per_hour"], Unit.HOUR, None)
        for term in specs["committed_sku"]:
            days = term["committed_days"]
            if days in PRICING_OF_DAYS:  # the whole term's price, over the term's own hours
                expected[(sku, PRICING_OF_DAYS[days])] = (term["committed_sku_price"], Unit.TERM, days * 24.0)
    assert {(q.sku, q.pricing): (q.price, q.unit, q.term_hours) for q in quotes} == expected
    for q in quotes:
        item = rows[q.sku]
        count, token = NAME.match(q.sku).groups()
        assert (q.gpu_model, q.gpu_memory_gb) == TOKENS[token], q.sku
        assert q.gpu_count == int(count or 1), q.sku
        assert (q.vcpus, q.memory_gib) == (item["specs"]["cpu"], float(item["specs"]["ram"]))
        assert (q.region, q.currency, q.tax_included) == (item["location"].lower(), item["currency"], False)
        assert q.availability is STATUS[item.get("available_inventory_status")], q.sku
        assert q.source_url == plans_url("Delhi") and API_KEY not in q.source_url
        assert "excludes 18% GST" in q.notes and "fixture price" not in q.notes  # a live answer
    assert len({q.gpu_model for q in quotes}) == 6


def test_what_is_left_out_is_said_in_the_notes(keyed: Settings) -> None:
    assert E2eCollector(keyed).left_out(fetched()) == [
        "plan GDC.L40S-25.220GB: Windows-2022-GPU image not collected (its OS licence is in the price) (Delhi)",
        "unknown GPU, not collected: plan GDC-A.A100-1.120GB ('GDC-A.A100-1.120GB' does not say the memory of "
        "its A100 (40 or 80 GB)) (Delhi)",
        "unknown GPU, not collected: plan GDC.RTX3080-8.30GB ('GDC.RTX3080-8.30GB': the card table knows no "
        "card 'RTX3080') (Delhi)",
    ]


def test_the_90_day_term_and_price_per_month_are_kept_in_the_notes(quotes) -> None:
    offers = {(q.sku, q.pricing): q for q in quotes}
    thirty = offers[("GDC3.A10080-16.115GB", Pricing.MONTHLY)].notes
    assert "30-day committed plan, charged upfront for the whole term (30 Days Committed , INR 140000)" in thirty
    assert "a 90-day committed plan is also published (90 Days Committed , INR 400000), not collected" in thirty
    hourly = offers[("GDC3.A10080-16.115GB", Pricing.ON_DEMAND)].notes
    assert "E2E also lists price_per_month INR 164,980 for this plan" in hourly and "billed per minute" in hourly
    # a plan without a 30- or 365-day term carries its 90-day price on the hourly offer
    assert "90 Days Committed , INR 620000" in offers[("GDC-A.H100-1.120GB", Pricing.ON_DEMAND)].notes


def test_a_zero_hourly_price_is_no_offer_but_the_committed_term_is(quotes) -> None:
    assert {q.pricing for q in quotes if q.sku == "GDC.T4-8.30GB"} == {Pricing.MONTHLY}


def test_api_quotes_pass_the_shared_sanity_checks(quotes, fx_table, keyed: Settings) -> None:
    accepted, rejected = check_quotes(quotes, fx_table, keyed)
    assert rejected == [] and len(accepted) == len(quotes)


def test_offline_replay_marks_api_prices_as_fixture_values(keyed: Settings) -> None:
    offline = keyed.model_copy(update={"offline": True})
    assert all("fixture price: test data replayed" in q.notes for q in E2eCollector(offline).parse(fetched()))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("GDC3.A10080-16.115GB", ("A100", 80.0, 1)),
        ("GDC3.8xA10080-128.920GB", ("A100", 80.0, 8)),
        ("GDC.2xA30-32.180GB", ("A30", 24.0, 2)),
        ("GDC-A.H100-1.120GB", ("H100", 80.0, 1)),
        ("GDC.V10032-8.120GB", ("V100", 32.0, 1)),
        ("GDC.RTX8000-16.100GB", ("RTX8000", 48.0, 1)),
    ],
)
def test_plan_names(name: str, expected: tuple[str, float, int]) -> None:
    spec, count = plan_gpu(name)
    assert (spec.model, spec.memory_gb, count) == expected


@pytest.mark.parametrize("name", ["GDC-A.A100-1.120GB", "GDC.V100-8.120GB", "GDC.RTX3080-8.30GB", "C3.8GB"])
def test_names_that_do_not_say_the_card_are_unknown_not_guessed(name: str) -> None:
    with pytest.raises(UnknownGpu):
        plan_gpu(name)


def test_gpu_card_details_when_present_are_read_first() -> None:
    details = {"CARD_NAME": "NVIDIA-1xA100", "CARD_TYPE": "Nvidia-A100", "UNIT_COUNT": 1, "UNIT_MEMORY": 80}
    spec, count = plan_gpu("GDC-A.A100-1.120GB", details)
    assert (spec.model, spec.memory_gb, count) == ("A100", 80.0, 1)


def test_an_answer_without_a_plan_list_is_a_parse_error(keyed: Settings) -> None:
    with pytest.raises(ParseError, match=r"no list of plans under 'data' \(found: code, data, errors, message\)"):
        E2eCollector(keyed).parse(fetched({"code": 200, "data": {}, "errors": {}, "message": "Success"}))
    with pytest.raises(ParseError, match=r"\(Delhi\): no GPU plan with a price among 1 plans"):
        E2eCollector(keyed).parse(fetched({"code": 200, "data": [answer()["data"][-1]], "errors": {}, "message": ""}))


# ----- fetching --------------------------------------------------------------------------------------


def test_the_plan_list_is_asked_with_the_key_token_project_and_location(keyed: Settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(url__startswith=PLANS_URL).mock(return_value=httpx.Response(200, json=answer()))
        result = fetch_now(E2eCollector(keyed))
    request = route.calls[0].request
    assert dict(request.url.params) == {
        "category": "GPU", "display_category": "GPU", "os": "Ubuntu", "osversion": "22.04", "location": "Delhi",
        "apikey": API_KEY, "project_id": PROJECT,
    }  # fmt: skip
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert [raw.url for raw in result.responses] == [plans_url("Delhi")]  # stored without the credentials
    assert result.notes[0] == "source: E2E's MyAccount plan API (Delhi)"
    assert len(result.notes) == 4  # the source, then what was left out (test_what_is_left_out_…)


def test_each_location_of_the_regions_setting_is_asked(keyed: Settings) -> None:
    both = keyed.model_copy(update={"regions": {"e2e": ["Delhi", "Mumbai"]}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(url__startswith=PLANS_URL).mock(return_value=httpx.Response(200, json=answer()))
        result = fetch_now(E2eCollector(both))
    assert [call.request.url.params["location"] for call in route.calls] == ["Delhi", "Mumbai"]
    assert {q.region for q in E2eCollector(both).parse(result)} == {"delhi", "mumbai"}


def test_an_incomplete_set_of_credentials_reads_the_page_and_says_which_setting_is_missing(settings) -> None:
    partial = settings.model_copy(update={"e2e_api_key": SecretStr(API_KEY), "e2e_auth_token": SecretStr(TOKEN)})
    page = fixture_bytes("e2e", "pricing.html")
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(PRICING_URL).mock(return_value=httpx.Response(200, content=page))
        result = fetch_now(E2eCollector(partial))
    assert result.notes[0] == "source: E2E's public pricing page (GPUPRICE_E2E_PROJECT_ID not set for the plan API)"


ERRORS = json.loads(fixture_bytes("e2e", "error_answers.json"))


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("envelope_failure_code_401", "401 Unauthorized"),
        ("http_400_status_code", "400 Project not found"),
        ("http_200_errors_true", "Validation failed"),
        ("http_401_drf_detail", "Authentication credentials were not provided."),
    ],
)
def test_a_failure_envelope_in_a_200_answer_is_a_fetch_error_with_e2e_words(keyed: Settings, name, said) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(url__startswith=PLANS_URL).mock(return_value=httpx.Response(200, json=ERRORS[name]))
        with pytest.raises(FetchError, match=f"refused the plan list for Delhi: {re.escape(said)}"):
            fetch_now(E2eCollector(keyed))


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_fails_the_run_with_the_key_redacted(keyed: Settings, status: int) -> None:
    echo = {"code": status, "data": {}, "errors": {"apikey": [f"invalid api key {API_KEY}"]},
            "message": f"Invalid apikey {API_KEY} or token {TOKEN}"}  # fmt: skip
    collector, store = E2eCollector(keyed), PriceStore(keyed)
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(url__startswith=PLANS_URL).mock(return_value=httpx.Response(status, json=echo))
        summary = asyncio.run(run_provider(collector, collector.scope(), store, keyed))
    assert route.call_count == 1  # a refused key is not retried
    assert summary.status.value == "failed"
    assert f"HTTP {status}" in summary.error and "Invalid apikey *** or token ***" in summary.error
    assert "GPUPRICE_E2E_API_KEY" in summary.error  # what to check
    runs = repr(store.cursor().execute("SELECT * FROM runs").fetchall())
    for secret in (API_KEY, TOKEN):
        assert secret not in summary.error and secret not in runs
    store.close()
