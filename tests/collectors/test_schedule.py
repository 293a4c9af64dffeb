"""The scheduler's jobs: stable ids, per-scope intervals from settings, and the settings that keep
APScheduler from silently skipping or piling up runs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from collectors.registry import COLLECTORS
from collectors.schedule import build_scheduler
from pricedb.settings import Settings
from pricedb.store import PriceStore


def jobs_of(store: PriceStore, settings: Settings) -> dict:
    async def build():
        scheduler = build_scheduler(store, settings)
        scheduler.start(paused=True)
        jobs = {job.id: job for job in scheduler.get_jobs()}
        scheduler.shutdown(wait=False)
        return jobs

    return asyncio.run(build())


def test_every_scope_has_a_stable_job_with_safe_defaults(store: PriceStore, settings: Settings) -> None:
    settings = settings.model_copy(update={"schedule_jitter_s": 90, "misfire_grace_s": 600})
    jobs = jobs_of(store, settings)
    expected = {"startup", "fx"} | {
        f"collect:{name}:{scope.name}" for name, cls in COLLECTORS.items() for scope in cls.scopes
    }
    assert set(jobs) == expected
    assert isinstance(jobs["startup"].trigger, DateTrigger)
    for job_id, job in jobs.items():
        assert job.coalesce is True and job.max_instances == 1 and job.misfire_grace_time == 600, job_id
        if job_id != "startup":
            assert isinstance(job.trigger, IntervalTrigger) and job.trigger.jitter == 90


def test_the_first_round_is_due_at_once_on_the_schedulers_clock(
    store: PriceStore, settings: Settings, frozen_clock: datetime
) -> None:
    """APScheduler fires by the system clock; a start moment taken from pricedb.clock (pinned here,
    days away from the system's) would make the first round a skipped misfire or a late one."""
    before = datetime.now(UTC)  # the scheduler's own "now", not pricedb.clock's
    due = jobs_of(store, settings)["startup"].next_run_time
    assert before <= due <= datetime.now(UTC) and due != frozen_clock


def test_intervals_come_from_settings_per_scope(store: PriceStore, settings: Settings) -> None:
    settings = settings.model_copy(update={"intervals": {"aws:spot": 15, "azure": 360}, "fx_interval_minutes": 720})
    jobs = jobs_of(store, settings)
    assert jobs["collect:aws:spot"].trigger.interval.total_seconds() == 15 * 60
    assert jobs["collect:aws:list"].trigger.interval.total_seconds() == 24 * 3600  # the collector's default
    assert jobs["collect:azure:all"].trigger.interval.total_seconds() == 360 * 60
    assert jobs["fx"].trigger.interval.total_seconds() == 720 * 60


def test_settings_read_per_provider_variables_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("GPUPRICE_AWS_SPOT_INTERVAL_MINUTES", "30")
    monkeypatch.setenv("GPUPRICE_AZURE_BASE_URL", "http://127.0.0.1:9000")
    monkeypatch.setenv("GPUPRICE_AWS_REGIONS", "us-east-1, eu-west-1")
    monkeypatch.setenv("GPUPRICE_AZURE_STALE_AFTER_MINUTES", "90")
    settings = Settings()
    assert settings.interval_for("aws", "spot", 60) == 30 and settings.interval_for("aws", "list", 1440) == 1440
    assert settings.base_url_for("azure") == "http://127.0.0.1:9000" and settings.base_url_for("aws") is None
    assert settings.regions_for("aws", ["x"]) == ["us-east-1", "eu-west-1"]
    assert settings.regions_for("azure", ["eastus"]) == ["eastus"]
    assert settings.stale_after_minutes("azure", 1440) == 90 and settings.stale_after_minutes("aws", 60) == 120
