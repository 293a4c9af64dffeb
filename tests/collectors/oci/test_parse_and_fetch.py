"""OCI collector: every GPU shape priced per GPU from the recorded Cost Estimator data, stored per
instance, each offer's card, memory and count checked against its shape row; an unknown card reported,
never guessed; preemptible only where the estimator allows it (at 50%); one price for every commercial
region; changed data caught; fetching through respx, the replay transport and a local replay server."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from collectors.base import RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http, make_client
from collectors.oci import OciCollector
from collectors.oci.collector import PRODUCTS_URL, SHAPES_URL
from collectors.replay import Replay, ReplayTransport, serve_replay
from collectors.sanity import check_quotes
from pricedb.models import Pricing, Unit
from pricedb.normalize import normalize
from tests.conftest import FIXTURES, OBSERVED, fetched_of, fixture_bytes
from tests.helpers import Sleeps

HOST = "www.oracle.com"
SHAPES_PATH, PRODUCTS_PATH = (
    "/a/ocom/docs/cloudestimator2/data/shapes.json",
    "/a/ocom/docs/cloudestimator2/data/products.json",
)
OD, SPOT = Pricing.ON_DEMAND, Pricing.SPOT


def shapes() -> dict:
    return json.loads(fixture_bytes("oci", "shapes.json"))


def products() -> dict:
    return json.loads(fixture_bytes("oci", "products.json"))


def fetched(shapes_body: dict | None = None, products_body: dict | None = None):
    return fetched_of(
        RawResponse(SHAPES_URL, OBSERVED, body=json.dumps(shapes_body or shapes()).encode(), label="shapes"),
        RawResponse(PRODUCTS_URL, OBSERVED, body=json.dumps(products_body or products()).encode(), label="products"),
    )


def shape(body: dict, name: str) -> dict:
    return next(item for item in body["items"] if item["name"] == name)


@pytest.fixture
def collector(settings) -> OciCollector:
    return OciCollector(settings)


@pytest.fixture
def quotes(collector):
    return collector.parse(fetched())


# Oracle's compute shapes table: the card each shape-name token means (the token is the card otherwise).
TOKEN_CARDS = {"GPU2": "P100", "GPU3": "V100", "GPU4": "A100", "A100-v2": "A100"}
UNKNOWN = {"BM.GPU.B300.8"}  # 262.5 GB per GPU: a B300 size the card table does not have


def token_of(name: str) -> str:
    parts = name.split(".")
    return parts[2] if len(parts) == 4 else parts[1]


def test_every_offer_matches_its_shape_row(quotes) -> None:
    body, prices = shapes(), products()
    listed = {i["name"] for i in body["items"] if i["subType"]["value"] == "gpu"}
    assert {q.sku for q in quotes} == listed - UNKNOWN
    for q in quotes:
        row = shape(body, q.sku)
        assert q.gpu_model == TOKEN_CARDS.get(token_of(q.sku), token_of(q.sku)), q.sku
        assert q.gpu_count == row["gpuQty"]
        # gpuMemoryQty is the shape total, or the per-GPU figure (BM.GPU.MI355X.8)
        assert row["gpuMemoryQty"] in (q.gpu_memory_gb * q.gpu_count, q.gpu_memory_gb), q.sku
        per_gpu = next(
            i["currencyCodeLocalizations"][0]["prices"][0]["value"]
            for i in prices["items"]
            if i["partNumber"] == row["products"][0]["partNumber"]
        )
        expected = per_gpu * row["gpuQty"] * (0.5 if q.pricing is SPOT else 1.0)
        assert q.price == pytest.approx(expected), q.sku
        assert (q.pricing is SPOT) <= row["allowPreemptible"]


def test_an_unknown_card_is_reported_by_name_not_guessed(collector) -> None:
    notes = collector.left_out(fetched())
    assert notes == [
        "unknown GPU, not collected (the card table lacks it): BM.GPU.B300.8: the estimator lists 2100 GB of "
        "GPU memory for 8 GPUs (262.5 GB each), a size the card table has no B300 in"
    ]


def test_parse_gives_the_two_a100_shapes_per_instance(quotes) -> None:
    quotes = [q for q in quotes if q.gpu_model == "A100"]
    assert {(q.sku, q.region, q.pricing): q.price for q in quotes} == {
        ("BM.GPU4.8", "global", OD): 24.4,  # 8 × 3.05 USD per GPU-hour
        ("BM.GPU.A100-v2.8", "global", OD): 32.0,  # 8 × 4.00
    }
    for q in quotes:
        memory = 80.0 if q.sku == "BM.GPU.A100-v2.8" else 40.0
        assert (q.provider, q.gpu_model, q.gpu_memory_gb, q.gpu_count) == ("oci", "A100", memory, 8)
        assert (q.form_factor, q.currency, q.unit, q.tax_included) == ("SXM4", "USD", Unit.HOUR, False)
        assert (q.billing_increment_s, q.billing_minimum_s) == (1, 60)
        assert (q.source_url, q.observed_at) == (PRODUCTS_URL, OBSERVED)


def test_notes_show_the_per_gpu_arithmetic_and_why_there_is_no_preemptible_price(quotes) -> None:
    notes = {q.sku: q.notes for q in quotes if q.sku.startswith("BM.")}
    assert notes["BM.GPU4.8"].startswith(
        "8 GPU × 3.05 USD/GPU-h (part B93544 'OCI - Compute - GPU - E4'; 64 OCPUs included) = 24.4 USD/h per instance"
    )
    assert "same list price in every OCI commercial region" in notes["BM.GPU4.8"]
    assert all("preemptible capacity does not support bare metal" in n for n in notes.values())


def test_cpu_shapes_are_left_out(quotes) -> None:
    assert not {"BM.DenseIO.E5.128", "BM.Standard.E4.128"} & {q.sku for q in quotes}


def test_the_old_generations_name_no_card_and_get_oracles_table(quotes) -> None:
    by_sku = {q.sku: q for q in quotes if q.pricing is OD}
    cards = {sku: (q.gpu_model, q.gpu_memory_gb, q.form_factor) for sku, q in by_sku.items()}
    assert cards["VM.GPU2.1"] == ("P100", 16.0, None) and cards["BM.GPU3.8"] == ("V100", 16.0, None)
    assert cards["BM.GPU4.8"] == ("A100", 40.0, "SXM4") and cards["BM.GPU.A100-v2.8"] == ("A100", 80.0, "SXM4")
    assert cards["BM.GPU.H100.8"] == ("H100", 80.0, "SXM5")  # the token alone leaves the form factor open


def test_preemptible_vm_shapes_are_half_price(quotes) -> None:
    spot = {q.sku: q.price for q in quotes if q.pricing is SPOT}
    assert spot == {"VM.GPU.A10.1": 1.0, "VM.GPU3.1": 1.475}


def test_preemptible_is_half_of_on_demand_where_the_estimator_allows_it(collector) -> None:
    body = shapes()
    shape(body, "BM.GPU.A100-v2.8")["allowPreemptible"] = True
    by_key = {(q.sku, q.pricing): q for q in collector.parse(fetched(body))}
    spot = by_key[("BM.GPU.A100-v2.8", SPOT)]
    assert spot.price == 16.0 == by_key[("BM.GPU.A100-v2.8", OD)].price * 0.5
    assert spot.notes.startswith("preemptible price = 50% of on-demand, as Oracle publishes")
    assert ("BM.GPU4.8", SPOT) not in by_key


def test_configured_regions_each_get_the_same_price(settings) -> None:
    regional = OciCollector(settings.model_copy(update={"regions": {"oci": ["us-ashburn-1", "eu-frankfurt-1"]}}))
    quotes = [q for q in regional.parse(fetched()) if q.gpu_model == "A100"]
    assert {(q.region, q.sku): q.price for q in quotes} == {
        ("us-ashburn-1", "BM.GPU4.8"): 24.4,
        ("eu-frankfurt-1", "BM.GPU4.8"): 24.4,
        ("us-ashburn-1", "BM.GPU.A100-v2.8"): 32.0,
        ("eu-frankfurt-1", "BM.GPU.A100-v2.8"): 32.0,
    }


def test_a_memory_part_is_added_per_gb_hour(collector) -> None:
    body = shapes()
    shape(body, "BM.GPU4.8")["products"].append({"partNumber": "B93114", "qty": 2048, "type": {"value": "memory"}})
    price = next(q.price for q in collector.parse(fetched(body)) if q.sku == "BM.GPU4.8")
    assert price == pytest.approx(24.4 + 2048 * 0.0015)


def test_gpu_memory_comes_from_the_gpu_table_and_a_disagreeing_estimator_is_noted(collector) -> None:
    body = shapes()
    shape(body, "BM.GPU4.8")["gpuMemoryQty"] = 40  # per GPU, as the estimator lists it for some shapes
    shape(body, "BM.GPU.A100-v2.8")["gpuMemoryQty"] = 320
    by_sku = {q.sku: q for q in collector.parse(fetched(body))}
    assert by_sku["BM.GPU4.8"].gpu_memory_gb == 40 and "lists" not in by_sku["BM.GPU4.8"].notes
    assert by_sku["BM.GPU.A100-v2.8"].gpu_memory_gb == 80
    assert "the estimator lists 320 GB of GPU memory; 80 GB per GPU kept" in by_sku["BM.GPU.A100-v2.8"].notes


def test_display_suffixes_are_stripped_from_names(collector) -> None:
    body = shapes()
    shape(body, "BM.GPU4.8")["name"] = "BM.GPU4.8 (RDMA)"
    assert "BM.GPU4.8" in {q.sku for q in collector.parse(fetched(body))}


def test_hidden_or_inactive_shapes_are_not_offered(collector) -> None:
    body = shapes()
    shape(body, "BM.GPU4.8")["hidden"] = True
    assert "BM.GPU4.8" not in {q.sku for q in collector.parse(fetched(body))}
    assert collector.left_out(fetched(body))[1:] == []  # hidden shapes are Oracle's choice, not a problem
    for item in body["items"]:
        item["status"] = "DEPRECATED"
    with pytest.raises(ParseError, match=r"no GPU shape could be priced .*BM.GPU4.8: hidden or not ACTIVE"):
        collector.parse(fetched(body))


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda s, p: p["items"].remove(next(i for i in p["items"] if i["partNumber"] == "B95907")),
         "part B95907 is not in products.json"),
        (lambda s, p: next(i for i in p["items"] if i["partNumber"] == "B95907").update(pricetype="MONTH"),
         "part B95907 is priced per 'MONTH', not per HOUR"),
        (lambda s, p: next(i for i in p["items"] if i["partNumber"] == "B95907")["currencyCodeLocalizations"][0]
         .update(currencyCode="EUR"), "part B95907 has no USD price"),
        (lambda s, p: shape(s, "BM.GPU.A100-v2.8")["products"][0].update(type={"value": "disk"}),
         "part B95907 is of type 'disk', not ocpu or memory"),
        (lambda s, p: shape(s, "BM.GPU.A100-v2.8").update(gpuQty=None), "gpuQty is None, not a positive number"),
    ],
)  # fmt: skip
def test_a_shape_that_cannot_be_priced_is_left_out_with_its_reason(collector, change, reason) -> None:
    body, prices = shapes(), products()
    change(body, prices)
    skus = {q.sku for q in collector.parse(fetched(body, prices))}
    assert "BM.GPU.A100-v2.8" not in skus and "BM.GPU4.8" in skus
    assert f"not priced: BM.GPU.A100-v2.8: {reason}" in collector.left_out(fetched(body, prices))
    for item in body["items"]:
        if item["name"] != "BM.GPU.A100-v2.8":
            item["products"] = []
    with pytest.raises(
        ParseError, match=f"no GPU shape could be priced .*{reason.replace('(', '.').replace(')', '.')}"
    ):
        collector.parse(fetched(body, prices))


def test_other_currencies_are_ignored(collector) -> None:
    prices = products()
    gpu4 = next(i for i in prices["items"] if i["partNumber"] == "B93544")
    gpu4["currencyCodeLocalizations"].insert(
        0, {"currencyCode": "EUR", "prices": [{"model": "PAY_AS_YOU_GO", "value": 1.0}]}
    )
    assert {q.sku: q.price for q in collector.parse(fetched(products_body=prices))}["BM.GPU4.8"] == 24.4


def test_changed_top_level_shape_is_a_parse_error_naming_what_was_found(collector) -> None:
    changed = json.loads(fixture_bytes("oci", "shapes_changed.json"))
    with pytest.raises(ParseError, match=r"shapes.json: no 'items' in the response \(found: shapes\)"):
        collector.parse(fetched(changed))


def test_a_shape_missing_a_needed_field_is_a_parse_error(collector) -> None:
    body = shapes()
    del shape(body, "BM.GPU4.8")["allowPreemptible"]
    with pytest.raises(ParseError, match=r"BM\.GPU4\.8: no 'allowPreemptible' field"):
        collector.parse(fetched(body))


def test_sanity_checks_pass_and_prices_normalize_per_gpu(quotes, fx_table, settings) -> None:
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes) == 15
    gpu4 = next(q for q in quotes if q.sku == "BM.GPU4.8")
    figures = normalize(gpu4, fx_table, settings)
    assert figures.cny_per_gpu_hour == pytest.approx(3.05 * 6.8095 / 1.0163)
    assert figures.cny_per_gb_hour == pytest.approx(3.05 * 6.8095 / 1.0163 / 40)


def test_fixtures_have_the_estimator_fields_the_parser_reads() -> None:
    for item in shapes()["items"]:
        assert {"name", "hidden", "status", "allowPreemptible", "gpuQty", "gpuMemoryQty", "shapeType", "subType",
                "products"} <= set(item)  # fmt: skip
    for item in products()["items"]:
        assert {"partNumber", "displayName", "billingModel", "pricetype", "currencyCodeLocalizations"} <= set(item)


# --- fetching ---------------------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def estimator(request: httpx.Request) -> httpx.Response:
    name = "shapes.json" if request.url.path.endswith("shapes.json") else "products.json"
    return httpx.Response(200, content=fixture_bytes("oci", name), headers={"content-type": "application/json"})


async def run_fetch(settings, sleep=None):
    collector = OciCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "oci", settings, **({"sleep": sleep} if sleep else {}))
        return collector, await collector.fetch(http, collector.scope("all"))


@pytest.mark.anyio
async def test_fetch_reads_shapes_and_products(settings) -> None:
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST).mock(side_effect=estimator)
        collector, got = await run_fetch(settings)
    assert [c.request.url.path for c in route.calls] == [SHAPES_PATH, PRODUCTS_PATH]
    assert [(r.label, r.url) for r in got.responses] == [("shapes", SHAPES_URL), ("products", PRODUCTS_URL)]
    assert len(collector.parse(got)) == 15 and got.notes[0].startswith("unknown GPU, not collected")


@pytest.mark.anyio
async def test_base_url_override_applies_to_both_files(settings) -> None:
    mirrored = settings.model_copy(update={"base_urls": {"oci": "http://mirror.test:9000/oracle"}})
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host="mirror.test", port=9000).mock(side_effect=estimator)
        _, got = await run_fetch(mirrored)
    assert [c.request.url.path for c in route.calls] == [f"/oracle{SHAPES_PATH}", f"/oracle{PRODUCTS_PATH}"]
    assert [r.url for r in got.responses] == [SHAPES_URL, PRODUCTS_URL]


@pytest.mark.anyio
async def test_429_and_5xx_are_retried(settings) -> None:
    settings = settings.model_copy(update={"retry_max_delay_s": 60.0})
    answers = iter([httpx.Response(429, headers={"Retry-After": "3"}), httpx.Response(502, text="Bad Gateway")])

    def flaky(request: httpx.Request) -> httpx.Response:
        return next(answers, None) or estimator(request)

    sleeps = Sleeps()
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST).mock(side_effect=flaky)
        _, got = await run_fetch(settings, sleep=sleeps)
    assert route.call_count == 4 and sleeps.delays[0] == 3.0 and len(sleeps.delays) == 2
    assert len(got.responses) == 2


@pytest.mark.anyio
async def test_access_denied_is_a_fetch_error_with_the_page_text(settings) -> None:
    denied = httpx.Response(403, content=fixture_bytes("oci", "error_access_denied.html"))
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get(host=HOST).mock(return_value=denied)
        with pytest.raises(FetchError, match=r"HTTP 403 from .*shapes.json: .*Access Denied"):
            await run_fetch(settings)
    assert route.call_count == 1


@pytest.mark.anyio
async def test_an_html_answer_with_status_200_is_a_parse_error(settings) -> None:
    page = httpx.Response(200, content=fixture_bytes("oci", "error_access_denied.html"))
    with respx.mock(assert_all_mocked=True) as mock:
        mock.get(host=HOST).mock(return_value=page)
        collector, got = await run_fetch(settings)
    with pytest.raises(ParseError, match="body is not JSON"):
        collector.parse(got)


@pytest.mark.anyio
async def test_offline_replay_and_a_local_server_serve_the_same_answers(settings) -> None:
    offline = settings.model_copy(update={"offline": True})
    collector = OciCollector(offline)
    async with make_client(offline, ReplayTransport(Replay.load(FIXTURES, "oci"))) as client:
        replayed = collector.parse(await collector.fetch(Http(client, "oci", offline), collector.scope("all")))
    with serve_replay([Replay.load(FIXTURES, "oci")]) as server:
        local = settings.model_copy(update={"base_urls": {"oci": server.url}})
        collector, got = await run_fetch(local)
    assert [path for _, path, _, _ in server.requests] == [SHAPES_PATH, PRODUCTS_PATH]
    assert [(q.key, q.price) for q in collector.parse(got)] == [(q.key, q.price) for q in replayed]


def test_host_shape_is_the_ocpu_part_times_two_vcpus_and_the_bundle_memory(quotes) -> None:
    shapes = {q.sku: (q.vcpus, q.memory_gib) for q in quotes if q.gpu_model == "A100"}
    assert shapes == {"BM.GPU4.8": (128, 2048.0), "BM.GPU.A100-v2.8": (256, 2048.0)}
