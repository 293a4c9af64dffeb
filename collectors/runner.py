"""Runs collectors: concurrently, each in isolation, each outcome recorded.

One provider's timeout, HTTP error, parse error, implausible data or missing credentials never
stops the others: it becomes that provider's `failed` (or `skipped`) run with the reason, its last
good offers stay (and read as stale), and the rest carry on. FX is collected first, so the quotes
of the same round are converted with the freshest rates.

Every run ends: fetch and parse together run under one deadline (the collector's `deadline_s`,
`GPUPRICE_<PROVIDER>_DEADLINE_S`), so an upstream that trickles a byte at a time fails its run
with "deadline of N s exceeded" instead of holding `collect` (or a scheduler job) forever. Every
text a run reports passes the one redaction point (`RunRecord`, pricedb.redact).

After a run is recorded (and its price sheets written), a snapshot for replicas is published when
GPUPRICE_PUBLISH_TO is set (collectors.publishing): its failure is recorded too, never the run lost.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from collectors import fx_ecb
from collectors.base import Collector, Fetched, Scope
from collectors.errors import CollectorError, FetchError, ImplausibleData, MissingCredentials, ParseError
from collectors.http import Http, make_client
from collectors.publishing import publish_after
from collectors.registry import COLLECTORS
from collectors.replay import Replay, ReplayTransport
from collectors.sanity import check_quotes
from pricedb import clock
from pricedb.files import workdir_prefix
from pricedb.formats.exports import ExportFailed, write_current_exports
from pricedb.models import FxRate, InstanceZone, Pricing, Quote, RunStatus
from pricedb.queries import on_demand_cny_per_hour
from pricedb.settings import Settings
from pricedb.store import PriceStore, RunRecord

Progress = Callable[[str, str, str], None]  # (event, provider, detail); events: start, done
FX_DEADLINE_S = 120.0  # one small XML file


@dataclass
class RunSummary:
    provider: str
    scope: str
    status: RunStatus
    quotes: int = 0
    rejected: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    offline: bool = False
    run_id: int | None = None
    export_error: str | None = None  # the price sheets could not be written after this run
    publish_error: str | None = None  # no snapshot holding this run could be published (GPUPRICE_PUBLISH_TO)


def _transport(settings: Settings, provider: str) -> httpx.AsyncBaseTransport | None:
    if not settings.offline:
        return None
    return ReplayTransport(Replay.load(settings.fixtures_dir, provider))


def _no_progress(event: str, provider: str, detail: str) -> None:
    return


class Deadline:
    """One run's time limit; `phase` says what was going on when it ran out."""

    def __init__(self, provider: str, seconds: float) -> None:
        self.provider, self.seconds, self.phase = provider, seconds, "fetching"

    @asynccontextmanager
    async def enforced(self) -> AsyncIterator[None]:
        timer = asyncio.timeout(self.seconds)
        try:
            async with timer:
                yield
        except TimeoutError:
            if not timer.expired():
                raise  # a TimeoutError of some library, not the deadline
            setting = f"GPUPRICE_{self.provider.upper()}_DEADLINE_S"
            raise FetchError(f"deadline of {self.seconds:g} s exceeded while {self.phase} ({setting})") from None


class _Run:
    """What every run shares, FX or provider: the clock and the progress events, the deadline, any
    failure turned into the run's status and error (a failing run never raises), and the record and
    summary built from them. The two runners say only what they fetch and where it is stored."""

    def __init__(
        self, provider: str, scope: str, detail: str, deadline_s: float, settings: Settings, progress: Progress
    ) -> None:
        self.provider, self.scope, self.settings, self.progress = provider, scope, settings, progress
        self.started, self.timer = clock.now(), time.monotonic()
        self.status: RunStatus = RunStatus.OK
        self.error: str | None = None
        self.notes: list[str] = []
        self.deadline = Deadline(provider, settings.deadline_for(provider, deadline_s))
        progress("start", provider, detail)

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.OK

    @asynccontextmanager
    async def guarded(self) -> AsyncIterator[None]:
        """The run's work: what it raises becomes the run's outcome, and the run carries on to be recorded."""
        try:
            yield
        except MissingCredentials as exc:
            self.status, self.error = RunStatus.SKIPPED, str(exc)
        except CollectorError as exc:
            self.status, self.error = RunStatus.FAILED, str(exc)
        except Exception as exc:  # a bug in one collector is that provider's failure, not everyone's
            self.status, self.error = RunStatus.FAILED, f"unexpected {type(exc).__name__}: {exc}"
            self.notes.append("".join(traceback.format_exception_only(exc)).strip())

    def record(
        self,
        pricings: frozenset[Pricing],
        interval_minutes: int,
        quotes: Sequence[Quote] = (),
        rejected: list[dict[str, str]] | None = None,
        rejected_offers: dict[tuple[str, str, str, str], str] | None = None,
        zones: dict[str, list[InstanceZone]] | None = None,
    ) -> RunRecord:
        return RunRecord(
            provider=self.provider,
            scope=self.scope,
            pricings=pricings,
            started_at=self.started,
            finished_at=clock.now(),
            status=self.status,
            offline=self.settings.offline,
            stale_after_minutes=self.settings.stale_after_minutes(self.provider, interval_minutes),
            error=self.error,
            quotes=quotes,
            rejected=rejected or [],
            notes=self.notes,
            rejected_offers=rejected_offers or {},
            zones=zones or {},
        )

    def summary(
        self,
        record: RunRecord,
        run_id: int,
        count: int,
        export_error: str | None = None,
        publish_error: str | None = None,
    ) -> RunSummary:
        seconds = time.monotonic() - self.timer
        self.progress("done", self.provider, self.status.value)
        return RunSummary(
            self.provider,
            self.scope,
            self.status,
            count,
            len(record.rejected),
            record.error,
            record.notes,
            seconds,
            record.offline,
            run_id,
            export_error,
            publish_error,
        )


async def run_fx(store: PriceStore, settings: Settings, progress: Progress = _no_progress) -> RunSummary:
    run = _Run(fx_ecb.NAME, "daily", "ECB reference rates", FX_DEADLINE_S, settings, progress)
    rates: list[FxRate] = []
    async with run.guarded():
        async with run.deadline.enforced(), make_client(settings, _transport(settings, fx_ecb.NAME)) as client:
            fetched = await fx_ecb.fetch(Http(client, fx_ecb.NAME, settings))
        rates = fx_ecb.parse(fetched)
    record = run.record(frozenset(), settings.fx_interval_minutes)
    run_id = await asyncio.to_thread(store.record_fx, record, rates)
    publish_error = await publish_after(store, settings, run_id)
    return run.summary(record, run_id, len(rates), publish_error=publish_error)


def _refused_notes(refused: list[dict[str, str]], limit: int = 20) -> list[str]:
    """Records a source refused (a hand-typed sheet's bad rows) are for people to fix: they go in
    the run's notes, shown by `gpuprice collect` and /providers, as well as its rejections."""
    notes = [f"refused {r['offer']}: {r['reason']}" for r in refused[:limit]]
    if len(refused) > limit:
        notes.append(f"… and {len(refused) - limit} more refused (all are in the run's rejections)")
    return notes


async def _write_exports(store: PriceStore, settings: Settings, run_id: int) -> str | None:
    """Write the price sheets after a run, which is already stored: a failure (folder not writable,
    disk full) is recorded on the run and returned, and the next providers' runs carry on."""
    try:
        await asyncio.to_thread(write_current_exports, store, settings)
        error = None
    except ExportFailed as exc:
        error = str(exc)
    except Exception as exc:  # a bug in a writer must not take the other providers' runs with it
        error = f"price sheets not written to {settings.export_path}: unexpected {type(exc).__name__}: {exc}"
    await asyncio.to_thread(store.record_export, run_id, error)
    return error


async def run_provider(
    collector: Collector, scope: Scope, store: PriceStore, settings: Settings, progress: Progress = _no_progress
) -> RunSummary:
    name = collector.name
    run = _Run(name, scope.name, scope.name, collector.deadline_s, settings, progress)
    quotes: list[Quote] = []
    rejected: list[dict[str, str]] = []
    rejected_offers: dict[tuple[str, str, str, str], str] = {}  # the store holds these at their last good price
    pricings = set(scope.pricings)
    fetched: Fetched | None = None
    with tempfile.TemporaryDirectory(prefix=workdir_prefix(name)) as workdir:
        async with run.guarded():
            try:
                async with run.deadline.enforced():
                    async with make_client(settings, _transport(settings, name)) as client:
                        http = Http(client, name, settings, workdir=Path(workdir))
                        fetched = await collector.fetch(http, scope)
                    run.notes.extend(fetched.notes)
                    for pricing, why in fetched.not_covered.items():
                        pricings.discard(pricing)
                        run.notes.append(f"{pricing.value} not collected: {why}")
                    run.deadline.phase = "parsing"
                    parsed, refused = await asyncio.to_thread(collector.parse_report, fetched)
            finally:
                if fetched is not None:
                    fetched.remove_files()
            parsed = [q for q in parsed if q.pricing in pricings]
            rejected = list(refused)
            run.notes.extend(_refused_notes(refused))
            if not parsed:
                raise ParseError("the source answered but no quotes were found in it")
            stored_on_demand = await asyncio.to_thread(on_demand_cny_per_hour, store.cursor(), name)
            checked, rejections = check_quotes(parsed, store.fx_table(), settings, stored_on_demand)
            rejected += [r.as_record() for r in rejections]
            rejected_offers = {r.quote.key: r.reason for r in rejections}
            if not checked:
                raise ImplausibleData(f"all {len(parsed)} quotes were rejected; first: {rejections[0].reason}")
            quotes = checked
    record = run.record(
        frozenset(pricings) if run.ok else frozenset(scope.pricings),
        settings.interval_for(name, scope.name, scope.default_interval_minutes),
        quotes=quotes,
        rejected=rejected,
        rejected_offers=rejected_offers if run.ok else {},
        zones=fetched.zones if run.ok and fetched is not None else {},
    )
    run_id = await asyncio.to_thread(store.record_run, record)
    export_error = await _write_exports(store, settings, run_id)
    publish_error = await publish_after(store, settings, run_id)  # after the exports: it publishes their outcome
    return run.summary(record, run_id, len(quotes), export_error=export_error, publish_error=publish_error)


async def collect(
    store: PriceStore,
    settings: Settings,
    providers: list[str] | None = None,
    scope: str | None = None,
    include_fx: bool = True,
    progress: Progress = _no_progress,
) -> list[RunSummary]:
    """One round: FX first, then the named providers (default: all) concurrently."""
    names = providers or list(COLLECTORS)
    unknown = [n for n in names if n not in COLLECTORS]
    if unknown:
        raise KeyError(f"unknown provider(s): {', '.join(unknown)}; known: {', '.join(COLLECTORS)}")
    summaries: list[RunSummary] = []
    if include_fx:
        summaries.append(await run_fx(store, settings, progress))
    collectors = [COLLECTORS[n](settings) for n in names]
    runs = [run_provider(c, c.scope(scope), store, settings, progress) for c in collectors]
    summaries.extend(await asyncio.gather(*runs))
    return summaries


__all__ = ["Pricing", "RunSummary", "collect", "run_fx", "run_provider"]
