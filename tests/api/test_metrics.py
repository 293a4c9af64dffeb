"""`/metrics`: Prometheus' text format, read back with prometheus-client's own parser; the figures
agree with what the API answers; latency is labelled by route template; HEAD answers too; it stays
out of the OpenAPI document (a scrape target, not an API operation)."""

from __future__ import annotations

from collections import defaultdict

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.app import create_app
from pricedb.cards import MODEL_FACTS
from pricedb.store import PriceStore


def scrape(client: TestClient) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain; version=")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(dict)
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def test_metrics_say_what_the_api_says(offline_store: PriceStore) -> None:
    app = create_app(offline_store.settings, store=offline_store, schedule=False)
    with TestClient(app) as client:
        # every card's offers (the collectors store more than A100s; /offers answers one card at a time)
        answers = (client.get(f"/offers?gpu={model}&limit=5000").json()["offers"] for model in MODEL_FACTS)
        offers = list({(o["provider"], o["region"], o["sku"], o["pricing"]): o for a in answers for o in a}.values())
        providers = {p["provider"]: p for p in client.get("/providers").json()["providers"]}
        for _ in range(3):
            assert client.get("/cheapest?mem=60GB&hours=200").status_code == 200
        client.get("/export/gpuhunt/lambda.csv")
        client.get("/export/gpuhunt/lambda.csv")
        client.get("/no/such/page")
        metrics = scrape(client)

    runs = metrics["gpuprice_runs_total"]
    ran = {p for p, s in providers.items() if s["status"] != "never_run"}
    assert {dict(labels)["provider"] for labels in runs} == ran and set(runs.values()) == {1.0}
    assert all(dict(labels)["status"] == "ok" for labels in runs)
    counted = defaultdict(float)
    for labels, value in metrics["gpuprice_offers"].items():
        counted[(dict(labels)["provider"], dict(labels)["pricing"])] += value
    expected = defaultdict(float)
    for offer in offers:
        expected[(offer["provider"], offer["pricing"])] += 1
    assert counted == expected and sum(counted.values()) == len(offers) > 0
    success = metrics["gpuprice_provider_last_success_timestamp_seconds"]
    assert {dict(labels)["provider"] for labels in success} == ran
    assert all(v >= 0 for v in metrics["gpuprice_provider_staleness_seconds"].values())
    assert set(metrics["gpuprice_rejected_quotes_total"]) == {(("provider", p),) for p in ran}
    assert metrics["gpuprice_info"] == {(("role", "collector"), ("version", app.version)): 1.0}

    latency = metrics["gpuprice_http_request_duration_seconds_count"]
    assert latency[(("method", "GET"), ("route", "/cheapest"), ("status", "200"))] == 3
    assert latency[(("method", "GET"), ("route", "/export/gpuhunt/{provider}.csv"), ("status", "200"))] == 2
    assert latency[(("method", "GET"), ("route", "unmatched"), ("status", "404"))] == 1
    hits = metrics["gpuprice_answer_cache_hits_total"]
    assert hits[(("kind", "request"),)] >= 2  # the second and third /cheapest, before routing
    assert hits[(("kind", "answer"),)] >= 1  # the second gpuhunt file
    assert metrics["gpuprice_answer_cache_bytes"][()] > 0
    assert "gpuprice_snapshot_version" not in metrics and "gpuprice_publishes_total" not in metrics


def test_metrics_answer_head_and_stay_out_of_the_openapi_document(offline_store: PriceStore) -> None:
    with TestClient(create_app(offline_store.settings, store=offline_store, schedule=False)) as client:
        head = client.head("/metrics")
        assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 0
        assert "/metrics" not in client.get("/openapi.json").json()["paths"]
        assert "/metrics" in client.get("/").json()["endpoints"]
