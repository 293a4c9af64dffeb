"""`/metrics` in Prometheus' text format (prometheus-client), for the collecting process and replicas.

What the store holds is read when Prometheus scrapes (in a worker thread, like every database
read): runs by provider and status and the quotes they rejected (counters: runs are append-only, so
they only grow, across restarts too), each provider's last success and staleness, current offers by
provider, pricing and staleness; the collecting process's publishing attempts; a replica's snapshot
(version, age, checks of the source, bytes downloaded). What the process sees itself is counted as it
happens: request latency per route (the route's template, not the raw path, so the series stay few),
answers served from memory. Each app has its own registry, so two apps in one process never mix."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.answer_cache import CACHED_PATHS
from api.query import known_providers
from api.state import AppState
from pricedb.queries import provider_states, publish_counts, run_counts
from pricedb.version import VERSION

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _seconds(moment: datetime) -> float:
    return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment).timestamp()


def _gauge(name: str, doc: str, labels: list[str], samples: list[tuple[list[str], float]]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _counter(name: str, doc: str, labels: list[str], samples: list[tuple[list[str], float]]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


class StoreCollector(Collector):
    """Figures read from the app's state when scraped."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def collect(self) -> Iterator[Metric]:
        state: AppState | None = getattr(self.app.state, "gpuprice", None)
        if state is None:
            return
        role = "replica" if state.replica else "collector"
        yield _gauge("gpuprice_info", "gpuprice's version and role", ["version", "role"], [([VERSION, role], 1)])
        yield from _runs(state)
        yield from _offers(state)
        yield from _cache(state)
        if state.replica is not None:
            yield from _snapshot(state)
        elif state.settings.publish_targets:
            yield from _publishing(state)


def _runs(state: AppState) -> Iterator[Metric]:
    counts = run_counts(state.cursor())
    yield _counter(
        "gpuprice_runs", "runs recorded, by provider and status", ["provider", "status"],
        [([provider, status], runs) for provider, status, runs, _ in counts],
    )  # fmt: skip
    rejected: Counter[str] = Counter()
    for provider, _, _, count in counts:
        rejected[provider] += count
    yield _counter(
        "gpuprice_rejected_quotes", "quotes the sanity checks rejected, by provider", ["provider"],
        [([provider], count) for provider, count in sorted(rejected.items())],
    )  # fmt: skip
    now = state.clock()
    states = [s for s in provider_states(state.cursor(), now, known_providers()) if s.last_run_at is not None]
    successes = [(s.provider, s.last_success_at) for s in states if s.last_success_at is not None]
    yield _gauge(
        "gpuprice_provider_last_success_timestamp_seconds", "when each provider's last successful run ended",
        ["provider"], [([provider], _seconds(at)) for provider, at in successes],
    )  # fmt: skip
    yield _gauge(
        "gpuprice_provider_staleness_seconds", "time since each provider's last successful run ended",
        ["provider"], [([provider], max(0.0, (now - at).total_seconds())) for provider, at in successes],
    )  # fmt: skip
    yield _gauge(
        "gpuprice_provider_stale", "1 when some of the provider's current offers are stale", ["provider"],
        [([s.provider], float(s.stale)) for s in states],
    )  # fmt: skip


def _offers(state: AppState) -> Iterator[Metric]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for offer in state.current().offers:
        counts[(offer.provider, offer.pricing, "true" if offer.stale else "false")] += 1
    yield _gauge(
        "gpuprice_offers", "current offers, by provider, pricing and staleness", ["provider", "pricing", "stale"],
        [(list(key), count) for key, count in sorted(counts.items())],
    )  # fmt: skip


def _cache(state: AppState) -> Iterator[Metric]:
    kinds = ["request", "answer"]
    yield _counter(
        "gpuprice_answer_cache_hits", "answers served from memory: a repeated request before routing, or an answer",
        ["kind"], [([kind], state.cache_hits[kind]) for kind in kinds],
    )  # fmt: skip
    yield _counter(
        "gpuprice_answer_cache_misses", "answers computed because none was in memory", ["kind"],
        [([kind], state.cache_misses[kind]) for kind in kinds],
    )  # fmt: skip
    yield _gauge("gpuprice_answer_cache_bytes", "bytes the cached answers hold", [], [([], state.cached_bytes())])


def _publishing(state: AppState) -> Iterator[Metric]:
    published, failed = publish_counts(state.cursor())
    yield _counter(
        "gpuprice_publishes", "attempts to publish a snapshot for replicas, by outcome", ["outcome"],
        [(["published"], published), (["failed"], failed)],
    )  # fmt: skip
    last = state.store.last_publish()
    if last is not None:
        yield _gauge("gpuprice_publish_last_attempt_timestamp_seconds", "when the last publish was attempted", [],
                     [([], _seconds(last.at))])  # fmt: skip
        yield _gauge("gpuprice_publish_failing", "1 when the last attempt to publish failed", [],
                     [([], float(last.error is not None))])  # fmt: skip
        if last.version is not None:
            yield _gauge("gpuprice_publish_version", "the version the last publish wrote", [], [([], last.version)])


def _snapshot(state: AppState) -> Iterator[Metric]:
    replica = state.replica
    assert replica is not None
    manifest = replica.loader.manifest
    if manifest is not None:
        yield _gauge("gpuprice_snapshot_version", "the snapshot this replica serves", [], [([], manifest.version)])
        yield _gauge("gpuprice_snapshot_published_timestamp_seconds", "when the snapshot served was published", [],
                     [([], _seconds(manifest.published_at))])  # fmt: skip
        yield _gauge("gpuprice_snapshot_age_seconds", "how old the snapshot served is", [],
                     [([], max(0.0, replica.age_s() or 0.0))])  # fmt: skip
    if replica.checked_at is not None:
        yield _gauge("gpuprice_snapshot_last_check_timestamp_seconds", "when the source last answered", [],
                     [([], _seconds(replica.checked_at))])  # fmt: skip
    yield _counter(
        "gpuprice_snapshot_checks", "looks at the source, by outcome", ["outcome"],
        [([outcome], count) for outcome, count in sorted(replica.checks.items())],
    )  # fmt: skip
    yield _counter("gpuprice_snapshot_downloaded_bytes", "bytes of snapshot files downloaded", [],
                   [([], replica.loader.downloaded_bytes)])  # fmt: skip


class RequestTimer:
    """Request latency per route template and status (the raw path would make a series per URL)."""

    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app, self.histogram = app, histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or (scope["path"] if scope["path"] in CACHED_PATHS else "unmatched")
            self.histogram.labels(path, scope["method"], str(status[0])).observe(time.perf_counter() - started)


def install_metrics(app: FastAPI) -> None:
    """/metrics (not in the OpenAPI document: it is for Prometheus, not for API clients) and the timer."""
    registry = CollectorRegistry(auto_describe=False)
    latency = Histogram(
        "gpuprice_http_request_duration_seconds",
        "time to answer a request, by route template, method and status",
        ["route", "method", "status"],
        registry=registry,
        buckets=LATENCY_BUCKETS,
    )
    registry.register(StoreCollector(app))
    app.add_middleware(RequestTimer, histogram=latency)

    @app.get("/metrics", include_in_schema=False)
    def metrics(request: Request) -> Response:  # plain def: the store is read in a worker thread
        return Response(content=generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    app.state.metrics_registry = registry
    app.state.request_latency = latency  # api.front times what it answers itself


__all__: list[Any] = ["install_metrics"]
