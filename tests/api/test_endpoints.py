"""The HTTP API over a seeded store: answers, caching on data changes, and one error shape."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pricedb.models import Availability, Pricing, RunStatus, Unit
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import SeededStore
from tests.helpers import NOW, assert_422_naming, make_quote, make_run, seed_fx


def _seed(store: PriceStore) -> None:
    seed_fx(store)  # 1 USD = ¥7
    store.record_run(
        make_run(
            "aws",
            [
                make_quote(),  # 8×40GB, 21.957642 USD/h
                make_quote(sku="p4de.24xlarge", gpu_memory_gb=80.0, price=27.44705),
                make_quote(pricing=Pricing.SPOT, price=8.1915),
            ],
        )
    )
    store.record_run(
        make_run(
            "azure",
            [
                make_quote(provider="azure", region="eastus", sku="Standard_NC24ads_A100_v4", gpu_count=1,
                           gpu_memory_gb=80.0, price=3.673),
                make_quote(provider="azure", region="eastus", sku="Standard_NC48ads_A100_v4", gpu_count=2,
                           gpu_memory_gb=80.0, price=7.346, availability=Availability.SOLD_OUT),
                make_quote(provider="azure", region="eastus", sku="Standard_ND96amsr_A100_v4",
                           gpu_memory_gb=80.0, price=183722.0, pricing=Pricing.RESERVED_1Y, unit=Unit.TERM,
                           term_hours=8760.0),
            ],
        )
    )  # fmt: skip


@pytest.fixture
def seeded(store_seeded_by: SeededStore) -> PriceStore:
    return store_seeded_by(_seed)


@pytest.fixture
def client(seeded: PriceStore, settings: Settings):
    app = create_app(settings, store=seeded, schedule=False)
    with TestClient(app) as test_client:
        app.state.gpuprice.clock = lambda: NOW.replace(tzinfo=None) + timedelta(minutes=5)
        yield test_client


def test_cheapest_ranks_viable_options(client: TestClient) -> None:
    body = client.get("/cheapest", params={"mem": "60GB", "hours": "200"}).json()
    ranked = [(o["provider"], o["sku"], o["pricing"]) for o in body["options"]]
    assert ranked == [
        ("azure", "Standard_NC24ads_A100_v4", "on_demand"),
        ("aws", "p4d.24xlarge", "spot"),
        ("aws", "p4d.24xlarge", "on_demand"),
        ("aws", "p4de.24xlarge", "on_demand"),
        ("azure", "Standard_ND96amsr_A100_v4", "reserved_1y"),
    ]
    first = body["options"][0]
    assert first["billed_hours"] == 200 and first["total_cny"] == pytest.approx(3.673 * 7 * 200, abs=0.01)
    assert first["cny_per_gb_hour"] == pytest.approx(3.673 * 7 / 80)
    assert body["query"]["mem_gb"] == 60 and body["query"]["hours"] == 200
    assert body["excluded"]["unavailable"] == 1
    assert body["as_of"] == "2026-11-29T08:00:00Z"


@pytest.mark.parametrize("mem", ["60GB", "60 GB", "60gb", "60", "60GiB"])
def test_mem_spellings(client: TestClient, mem: str) -> None:
    body = client.get("/cheapest", params={"mem": mem}).json()
    assert body["query"]["mem_gb"] == 60


def test_cheapest_filters(client: TestClient) -> None:
    spotless = client.get("/cheapest?mem=60&interruptible=false").json()
    assert all(o["pricing"] != "spot" for o in spotless["options"])
    azure = client.get("/cheapest?mem=60&provider=azure&include_unavailable=true").json()
    assert {o["sku"] for o in azure["options"]} == {
        "Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4", "Standard_ND96amsr_A100_v4"
    }  # fmt: skip
    single = client.get("/cheapest?mem=60&single_gpu=true&pricing=on_demand").json()
    assert [o["sku"] for o in single["options"]] == ["Standard_NC24ads_A100_v4", "p4de.24xlarge"]
    assert len(client.get("/cheapest?mem=60&limit=2").json()["options"]) == 2


def test_answers_follow_new_runs(client: TestClient, seeded: PriceStore) -> None:
    before = client.get("/cheapest?mem=60&hours=200&provider=aws&pricing=on_demand").json()
    assert before["options"][0]["price"] == 21.957642
    again = client.get("/cheapest?mem=60&hours=200&provider=aws&pricing=on_demand")
    assert again.headers["x-gpuprice-cache"] == "hit" and again.json() == before
    seeded.record_run(make_run("aws", [make_quote(price=20.0), make_quote(pricing=Pricing.SPOT, price=8.0)]))
    after = client.get("/cheapest?mem=60&hours=200&provider=aws&pricing=on_demand").json()
    assert after["options"][0]["price"] == 20.0


def test_offers_and_providers(client: TestClient, seeded: PriceStore) -> None:
    offers = client.get("/offers").json()
    assert offers["count"] == 6
    columns = list(offers["offers"][0])[:21]
    assert columns[:3] == ["provider", "region", "sku"] and columns[-1] == "availability"
    cheapest_first = [o["cny_per_gb_hour"] for o in offers["offers"]]
    assert cheapest_first == sorted(cheapest_first)
    assert client.get("/offers?provider=azure&pricing=on_demand").json()["count"] == 2
    seeded.record_run(
        make_run("azure", [], status=RunStatus.FAILED, error="HTTP 503", finished_at=NOW + timedelta(minutes=1))
    )
    providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
    assert providers["azure"]["status"] == "failed" and providers["azure"]["error"] == "HTTP 503"
    assert providers["azure"]["stale"] and providers["azure"]["offers"] == 3
    assert providers["aws"]["status"] == "ok" and not providers["aws"]["stale"]
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["offers"] == 6


BAD = [
    ("/cheapest?mem=abc", "mem", "not a memory size"),
    ("/cheapest?mem=-5", "mem", "not a memory size"),
    ("/cheapest?mem=0", "mem", "greater than 0"),
    ("/cheapest?mem=60&hours=0", "hours", "greater than 0"),
    ("/cheapest?mem=60&hours=1e12", "hours", "at most 87600"),
    ("/cheapest?mem=60&hours=nan", "hours", "greater than 0"),
    ("/cheapest?mem=60&pricing=weekly", "pricing", "unknown pricing 'weekly'"),
    ("/cheapest?mem=60&provider=nosuchcloud", "provider", "unknown provider 'nosuchcloud'"),
    ("/cheapest?mem=60&provider=aws';DROP TABLE offers;--", "provider", "unknown provider"),
    ("/cheapest?mem=60&region=x' OR '1'='1", "region", "not a region name"),
    ("/cheapest?mem=60&limit=0", "limit", "between 1 and 500"),
    ("/cheapest?mem=60&limit=ten", "limit", "integer"),
    ("/cheapest?mem=60&single_gpu=maybe", "single_gpu", "not true or false"),
    ("/cheapest?mem=60&gpu=RTX3080", "gpu", "unknown gpu"),
    ("/cheapest?mem=60&rank_by=per_mtoken", "rank_by", "inference"),
    ("/cheapest?hours=10", "mem", "give mem (e.g. 60GB), or the job to estimate"),
    ("/cheapest?mem=60&memory=60", "memory", "unknown parameter"),
    ("/offers?sort=price;drop", "sort", "Input should be"),
]


@pytest.mark.parametrize(("url", "parameter", "message"), BAD)
def test_bad_input_is_a_422_naming_the_parameter(client: TestClient, url: str, parameter: str, message: str) -> None:
    assert_422_naming(client.get(url), parameter, message)


def test_one_error_shape_for_every_4xx(client: TestClient) -> None:
    missing = client.get("/nope")
    assert missing.status_code == 404
    assert missing.json() == {
        "status": 404,
        "error": "not_found",
        "message": "no such endpoint: /nope",
        "errors": [{"parameter": None, "message": "no such endpoint: /nope", "value": None}],
    }
    posted = client.post("/cheapest?mem=60")
    assert posted.status_code == 405
    assert set(posted.json()) == {"status", "error", "message", "errors"}
    assert "read-only" in posted.json()["message"]
