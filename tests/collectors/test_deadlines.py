"""Every run ends: one deadline around a provider's whole fetch and parse, and a cap on a body read
whole. Against real loopback servers that trickle or flood (tests.support.fake_upstream), with tiny limits."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from collectors.aws import AwsCollector
from collectors.base import Collector, Fetched, Scope
from collectors.errors import FetchError
from collectors.http import Http, make_client
from collectors.lambda_ import LambdaCollector
from collectors.runner import collect, run_provider
from collectors.schedule import build_scheduler
from pricedb import clock
from pricedb.models import Pricing, RunStatus
from pricedb.queries import provider_states
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import make_settings
from tests.support import fake_upstream

SAFETY_S = 15.0  # without a deadline the runs below never end: fail instead of hanging the suite


def lambda_settings(folder: Path, upstream: str, **overrides: object) -> Settings:
    return make_settings(
        folder, lambda_api_key=SecretStr("secret_lambda-deadline-key"), base_urls={"lambda": upstream}, **overrides
    )


def run_lambda(settings: Settings):
    store = PriceStore(settings)
    try:
        collector = LambdaCollector(settings)
        summary = asyncio.run(asyncio.wait_for(run_provider(collector, collector.scope(), store, settings), SAFETY_S))
        states = {s.provider: s for s in provider_states(store.cursor(), clock.now_naive(), ["lambda"])}
        return summary, states["lambda"]
    finally:
        store.close()


def test_a_trickling_upstream_fails_the_run_at_its_deadline_and_the_run_is_recorded(tmp_path: Path) -> None:
    with fake_upstream.serve(fake_upstream.trickle(0.1)) as upstream:
        settings = lambda_settings(tmp_path, upstream.url, deadlines={"lambda": 0.5})
        started = time.monotonic()
        summary, state = run_lambda(settings)
    elapsed = time.monotonic() - started
    assert summary.status is RunStatus.FAILED
    assert summary.error == "deadline of 0.5 s exceeded while fetching (GPUPRICE_LAMBDA_DEADLINE_S)"
    assert elapsed < 5  # the per-read timeout (2 s here) never fired: a byte came every 0.1 s
    assert state.last_status == "failed" and state.last_error == summary.error


def test_the_deadline_is_a_setting_per_provider_with_the_collectors_default(monkeypatch) -> None:
    monkeypatch.setenv("GPUPRICE_LAMBDA_DEADLINE_S", "42")
    settings = Settings()
    assert settings.deadline_for("lambda", LambdaCollector.deadline_s) == 42.0
    assert settings.deadline_for("azure", 600.0) == 600.0
    assert LambdaCollector.deadline_s == 300.0  # a JSON API: minutes
    assert AwsCollector.deadline_s >= 30 * 60  # streamed price files of hundreds of MB


class SlowParse(Collector):
    """A collector whose parse outlives the deadline: the deadline covers parsing too."""

    name = "slowparse"
    title = "Slow parse"
    source_urls = ()
    pricings = frozenset({Pricing.ON_DEMAND})
    scopes = (Scope("all", pricings, 60),)
    deadline_s = 0.3

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        return Fetched([])

    def parse(self, fetched: Fetched):
        time.sleep(1.0)
        return []


def test_parsing_counts_against_the_deadline_too(settings: Settings, store: PriceStore) -> None:
    collector = SlowParse(settings)
    summary = asyncio.run(run_provider(collector, collector.scope(), store, settings))
    assert summary.status is RunStatus.FAILED
    assert summary.error == "deadline of 0.3 s exceeded while parsing (GPUPRICE_SLOWPARSE_DEADLINE_S)"


def test_collect_returns_while_one_provider_trickles_and_the_others_are_recorded(tmp_path: Path) -> None:
    with fake_upstream.serve(fake_upstream.trickle(0.1)) as upstream:
        settings = make_settings(
            tmp_path,
            lambda_api_key=SecretStr("secret_lambda-deadline-key"),
            base_urls={"lambda": upstream.url, "fx": upstream.url},
            deadlines={"lambda": 0.5, "fx": 0.5},
        )
        store = PriceStore(settings)
        try:
            summaries = asyncio.run(asyncio.wait_for(collect(store, settings, ["lambda"]), SAFETY_S))
            statuses = {s.provider: (s.status, s.error) for s in summaries}
            recorded = store.cursor().execute("SELECT provider, status FROM runs ORDER BY provider").fetchall()
        finally:
            store.close()
    assert statuses["fx"] == (RunStatus.FAILED, "deadline of 0.5 s exceeded while fetching (GPUPRICE_FX_DEADLINE_S)")
    assert statuses["lambda"][0] is RunStatus.FAILED and "deadline of 0.5 s" in statuses["lambda"][1]
    assert recorded == [("fx", "failed"), ("lambda", "failed")]


def test_inside_serve_the_scheduled_job_records_the_failed_run(tmp_path: Path) -> None:
    with fake_upstream.serve(fake_upstream.trickle(0.1)) as upstream:
        settings = lambda_settings(tmp_path, upstream.url, deadlines={"lambda": 0.5})
        store = PriceStore(settings)
        try:
            scheduler = build_scheduler(store, settings, run_at_start=False)
            job = scheduler.get_job("collect:lambda:all")
            asyncio.run(asyncio.wait_for(job.func(), SAFETY_S))
            row = store.cursor().execute("SELECT status, error FROM runs WHERE provider = 'lambda'").fetchone()
        finally:
            store.close()
    assert row == ("failed", "deadline of 0.5 s exceeded while fetching (GPUPRICE_LAMBDA_DEADLINE_S)")


# ----- the body cap -----------------------------------------------------------------------------------
async def get(settings: Settings, url: str) -> bytes:
    async with make_client(settings) as client:
        return (await Http(client, "x", settings).get(url)).body


@pytest.mark.parametrize("announce_length", [True, False])
def test_a_body_over_the_cap_fails_with_the_reason_whether_or_not_announced(settings, announce_length) -> None:
    capped = settings.model_copy(update={"http_max_body_mb": 1.0})
    with (
        fake_upstream.serve(fake_upstream.huge(3 * 2**20, announce_length)) as upstream,
        pytest.raises(FetchError) as caught,
    ):
        asyncio.run(get(capped, upstream.url + "/prices?key=abc"))
    message = str(caught.value)
    assert message.startswith(f"the answer from {upstream.url}/prices is larger than the body cap of 1 MB (")
    assert re.search(r"\(it announces 3\.0 MB;" if announce_length else r"\(stopped reading at 1\.[01] MB;", message)
    assert message.endswith("GPUPRICE_HTTP_MAX_BODY_MB)")


def test_a_body_within_the_cap_is_read_whole(settings) -> None:
    capped = settings.model_copy(update={"http_max_body_mb": 1.0})
    with fake_upstream.serve(fake_upstream.huge(2**20 - 10)) as upstream:
        assert len(asyncio.run(get(capped, upstream.url + "/prices"))) == 2**20 - 10


def test_the_cap_fails_the_run_not_the_process(tmp_path: Path) -> None:
    with fake_upstream.serve(fake_upstream.huge(3 * 2**20)) as upstream:
        summary, state = run_lambda(lambda_settings(tmp_path, upstream.url, http_max_body_mb=1.0))
    assert summary.status is RunStatus.FAILED and "larger than the body cap of 1 MB" in (summary.error or "")
    assert state.last_status == "failed"
