"""APScheduler 3.x jobs for `gpuprice serve`.

- `startup`: one round right away (FX first, then every provider), so a fresh server has data;
- `fx`: FX daily;
- `collect:<provider>:<scope>`: each provider scope on its own interval (spot more often than list
  prices), from `GPUPRICE_<PROVIDER>[_<SCOPE>]_INTERVAL_MINUTES` or the collector's default.

Every job has a stable id, `coalesce=True` (a backlog of missed runs becomes one run),
`max_instances=1` (never two runs of one job at once), `misfire_grace_time` (APScheduler's default
of 1 s would silently skip a run that starts a little late) and jitter (so providers are not all
hit on the same second). Last-run state lives in DuckDB (`runs`), not in a job store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from collectors.base import Collector, Scope
from collectors.registry import COLLECTORS
from collectors.runner import collect, run_fx, run_provider
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore, StoreUnavailable

log = get_logger("gpuprice.schedule")

ExtraJob = tuple[str, Callable[[], Awaitable[object]], BaseTrigger]


@contextmanager
def _database_fault_in_one_line() -> Iterator[None]:
    """A run the database refused (disk full, file made read-only) is logged as one line naming the
    file and what to do, not a traceback; /healthz shows it until a write succeeds again."""
    try:
        yield
    except StoreUnavailable as exc:
        log.error("run not recorded: %s", exc)


@dataclass(frozen=True)
class PlannedRun:
    """One collection job: which collector and scope, how often."""

    collector: Collector
    scope: Scope
    interval_minutes: int


def planned_runs(settings: Settings) -> list[PlannedRun]:
    """Every provider scope's job with its interval (`GPUPRICE_<PROVIDER>[_<SCOPE>]_INTERVAL_MINUTES`
    or the collector's default): what `serve` schedules, and what /providers says it schedules."""
    planned = []
    for name, collector_class in COLLECTORS.items():
        collector = collector_class(settings)
        for scope in collector.scopes:
            minutes = settings.interval_for(name, scope.name, scope.default_interval_minutes)
            planned.append(PlannedRun(collector, scope, minutes))
    return planned


def _job_defaults(settings: Settings) -> dict[str, object]:
    return {"coalesce": True, "max_instances": 1, "misfire_grace_time": settings.misfire_grace_s}


def build_scheduler(
    store: PriceStore, settings: Settings, extra_jobs: list[ExtraJob] | None = None, run_at_start: bool = True
) -> AsyncIOScheduler:
    scheduler = AsyncIOScheduler(timezone=UTC, job_defaults=_job_defaults(settings))

    async def startup_round() -> None:
        with _database_fault_in_one_line():
            for s in await collect(store, settings):
                log.info("startup run %s/%s: %s %s", s.provider, s.scope, s.status.value, s.error or "")
                if s.export_error:
                    log.error("%s", s.export_error)

    async def fx_job() -> None:
        with _database_fault_in_one_line():
            await run_fx(store, settings)

    if run_at_start:
        # "At once" on the scheduler's own (system) clock, which decides when jobs fire: a moment from
        # pricedb.clock (pinned in tests, or behind) would make the first round a skipped misfire.
        scheduler.add_job(startup_round, DateTrigger(timezone=UTC), id="startup", name="first round")
    scheduler.add_job(
        fx_job,
        IntervalTrigger(minutes=settings.fx_interval_minutes, jitter=settings.schedule_jitter_s),
        id="fx",
        name="FX reference rates",
    )
    for planned in planned_runs(settings):
        collector, scope = planned.collector, planned.scope

        async def job(collector: Collector = collector, scope: Scope = scope) -> None:
            with _database_fault_in_one_line():
                s = await run_provider(collector, scope, store, settings)
                log.info("%s/%s: %s %s", s.provider, s.scope, s.status.value, s.error or "")
                if s.export_error:
                    log.error("%s", s.export_error)

        scheduler.add_job(
            job,
            IntervalTrigger(minutes=planned.interval_minutes, jitter=settings.schedule_jitter_s),
            id=f"collect:{collector.name}:{scope.name}",
            name=f"{collector.title} ({scope.name})",
        )
    for job_id, function, trigger in extra_jobs or []:
        scheduler.add_job(function, trigger, id=job_id, name=job_id)
    return scheduler
