"""The answers behind each endpoint, as JSON bytes. The HTTP routes return them as they are and the
CLI prints them with `--json` (or renders them as tables), so both always say the same thing."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from api import cheapest
from api.cheapest import CheapestQuery, iso
from api.cheapest_estimate import EstimateJudge, JudgeMemo
from api.cheapest_fast import OfferColumns, RowSelection, select_fast
from api.cheapest_hours import MEM_ANSWER, MemAnswer
from api.cheapest_write import Written, written_answer
from api.history import not_future
from api.offer_rows import ROW_BYTES, OfferRows
from api.query import CheapestParams, EstimateParams, OffersParams, known_providers
from api.state import COLUMNS, Answer, AppState, dumps
from collectors.schedule import planned_runs
from pricedb.day_answers import DAY_PAGE, answers_folder, load_day_answer
from pricedb.formats.sheet import SHEET_COLUMNS, sheet_value
from pricedb.offer_filter import matches
from pricedb.queries import CurrentOffers, ExportAttempt, Offer, PublishAttempt, provider_states
from pricedb.runs import RunRow, recent_runs
from pricedb.settings import Settings
from pricedb.snapshot import StateOf, end_of_day_utc, snapshot_page


def _echo(params: CheapestParams, query: CheapestQuery, settings: Settings) -> dict[str, Any]:
    """The question as understood: `mem_gb` (or the estimator's inputs), then the rest of the query."""
    echo: dict[str, Any] = {"mem_gb": query.mem_gb}
    if params.estimate is not None:
        # The estimator's inputs as understood (only those given; the estimate states the defaults).
        echo.update(params.estimate.query.model_dump(mode="json", exclude_unset=True))
        echo["headroom"] = settings.gpu_memory_headroom
    echo.update(query.model_dump(mode="json", exclude={"mem_gb", "work"}))
    if query.work is not None:  # the amount of work instead of hours, as given (and the training MFU used)
        echo.update(query.work.model_dump(exclude_none=True))
        if params.estimate is not None and params.estimate.workload.training:
            echo["mfu"] = settings.training_mfu
    return echo


def _judge(params: CheapestParams, settings: Settings) -> EstimateJudge | None:
    if params.estimate is None:
        return None
    memo = params.shared.setdefault(("judge", settings.gpu_memory_headroom, settings.training_mfu), JudgeMemo())
    return EstimateJudge(
        params.estimate,
        memo=memo,
        headroom=settings.gpu_memory_headroom,
        single_gpu=params.single_gpu,
        gpus=params.estimate.gpus if "gpus" in params.estimator_values() else None,
        rank_by=params.rank_by,
        work=params.work,
        mfu=settings.training_mfu,
    )


def cheapest_json(
    params: CheapestParams, current: CurrentOffers, settings: Settings, columns: OfferColumns | None
) -> bytes:
    """`/cheapest`'s JSON: selected over `columns` (api.cheapest_fast) and written from each offer's
    pieces (api.cheapest_write), or without them by the plain reference (api.cheapest.select,
    answer, `dumps`); both give the same bytes (tests/api/test_cheapest_fast.py). By `mem`, what the
    question holds without its hours is worked out once per data version and kept with it
    (api.cheapest_hours)."""
    if params.estimate is None and columns is not None:
        return mem_answer(params, current, columns, settings).write(params.hours)
    query = params.to_query()
    echo = _echo(params, query, settings)
    judge = _judge(params, settings)
    selection = None if columns is None else select_fast(columns, query, settings, judge)
    if not isinstance(selection, RowSelection):
        return dumps(cheapest.answer(current.offers, query, settings, current.as_of, echo, judge, selection))
    assert columns is not None and judge is not None  # by `mem` over columns: answered above
    judge.written = True  # its memo's JSON: the estimate, the viability block's pieces, each kind of option's members
    ranked = [
        (row, cost, judge.option_members(offer))
        for row, (offer, cost) in zip(selection.ranked_rows, selection.ranked, strict=True)
    ]

    def fields(options: Written, unpriced: Written) -> dict[str, Any]:
        return cheapest.answer_fields(echo, current.as_of, selection, judge, options, unpriced)

    return written_answer(fields, columns.pieces, ranked, selection.unpriced_rows)


def _columns(state: AppState, current: CurrentOffers) -> OfferColumns:
    return state.derived(current, COLUMNS, lambda c: OfferColumns.build(c.offers, state.settings))


def mem_answer(params: CheapestParams, current: CurrentOffers, columns: OfferColumns, settings: Settings) -> MemAnswer:
    """The answer of a question by `mem` without its hours, kept with its parameters (and their copies)."""
    found = params.shared.get(MEM_ANSWER)
    if not isinstance(found, MemAnswer) or not found.serves(columns, current.as_of, settings):
        query = params.to_query()
        found = params.shared[MEM_ANSWER] = MemAnswer(
            columns, query, _echo(params, query, settings), current.as_of, settings
        )
    return found


def cheapest_answer(
    state: AppState,
    params: CheapestParams,
    hours: float | None = None,
    memory: tuple[CurrentOffers, OfferColumns] | None = None,
) -> bytes:
    """The answer to `params`, or to `params` with other `hours` (by `mem`, no copy needed); `memory`:
    the current offers and their columns, when the caller has them (`AppState.in_memory`)."""
    if params.estimate is None:  # by `mem`: worked out for less than looking it up costs (api.cheapest_hours)
        if memory is None:
            current = state.current()
            memory = current, _columns(state, current)
        state.computed("answer")
        found = mem_answer(params, *memory, state.settings)
        return found.write(params.hours if hours is None else hours)
    if hours is not None:
        params = params.model_copy(update={"hours": hours})
    key = ("cheapest", params.model_dump_json())
    return state.cached_value(
        key, lambda current: cheapest_json(params, current, state.settings, _columns(state, current))
    )


def estimate_answer(params: EstimateParams) -> bytes:
    """`/estimate`: needs no prices, so no store."""
    assert params.estimate is not None  # EstimateParams validation made it
    return dumps(params.estimate.model_dump(mode="json"))


def offer_json(offer: Offer) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for column in SHEET_COLUMNS:
        value = sheet_value(offer, column)
        row[column] = iso(value) if isinstance(value, datetime) else value
    row["fx_date"] = offer.fx_date.isoformat() if offer.fx_date else None
    row.update(
        term_hours=offer.term_hours,
        list_price=offer.list_price,
        tax_included=offer.tax_included,
        billing_increment_s=offer.billing_increment_s,
        billing_minimum_s=offer.billing_minimum_s,
        price_steps=[s.model_dump() for s in offer.price_steps],
        notes=offer.notes,
        fx_note=offer.fx_note,
        offline=offer.offline,
        held_reason=offer.held_reason,  # stale because its newest quote was rejected: why
        run_id=offer.run_id,  # the run that observed it (its record: /providers' recent_runs, the offer page)
    )
    return row


def _sort_key(params: OffersParams):
    def key(offer: Offer) -> tuple[Any, ...]:
        value = getattr(offer, params.sort)
        missing = value is None
        return (missing, value if not missing else 0, offer.key)

    return key


OFFER_ROWS_PAGES = 2  # current offers' JSON rows kept: two full pages (api.offer_rows; 12 MB at the defaults)


def offer_rows(current: CurrentOffers, settings: Settings) -> OfferRows:
    """The current offers' JSON rows kept while they are current (api.offer_rows), bounded in bytes."""
    found: OfferRows | None = current.derived.get("offer_json")
    if found is None:
        bound = OFFER_ROWS_PAGES * settings.max_page_limit * ROW_BYTES
        found = current.derived.setdefault("offer_json", OfferRows(bound, offer_json))
    return found


def current_rows(current: CurrentOffers, offers: list[Offer], settings: Settings) -> list[dict[str, Any]]:
    """`offers` (current ones) as JSON rows, each written once while kept: every answer holding an
    offer then holds the same row, which the market page's row memo recognises."""
    return offer_rows(current, settings).rows(offers)


def offers_answer(state: AppState, params: OffersParams) -> bytes:
    """Current offers, or with `date` the market at the end of that UTC day (its first page in the
    default order read as built ahead, api.day_answers, while the runs it was built from stand)."""
    if params.date is not None and is_kept_day_question(params):
        kept = kept_day_page(state, params.date)
        if kept is not None:
            return kept
    return offers_result(state, params).body


_FIRST_PAGE = OffersParams().model_dump(exclude={"date"})


def is_kept_day_question(params: OffersParams) -> bool:
    """Whether this `/offers?date=` question is the one kept per past day: no filter, the default
    order, the first page (api.day_answers builds it ahead)."""
    return params.model_dump(exclude={"date"}) == _FIRST_PAGE


def kept_day_page(state: AppState, day: date) -> bytes | None:
    """The kept answer of `/offers?date=day` (None: none kept, or built from other runs than now)."""
    now = not_future(state, day)
    cutoff = end_of_day_utc(day)
    if cutoff > now:  # the day is not over: its offers' staleness still moves with the clock
        return None
    return load_day_answer(state.cursor(), answers_folder(state.store.path), DAY_PAGE, day, "UTC", cutoff)


def day_page(
    cur: Any, day: date, now: datetime, params: OffersParams, state_of: StateOf | None = None
) -> dict[str, Any]:
    """`/offers?date=` as built: the day's market filtered, sorted and paged in the database."""
    found = snapshot_page(cur, end_of_day_utc(day), now, params.offer_filter(), params.sort, params.desc,
                          params.limit, params.offset, state_of)  # fmt: skip
    return {
        "date": day.isoformat(),
        "as_of": iso(found.as_of),
        "count": found.count,
        "offset": params.offset,
        "limit": params.limit,
        "offers": [offer_json(o) for o in found.offers],
    }


def offers_result(state: AppState, params: OffersParams) -> Answer:
    """`offers_answer` with its payload as built (what the market page shows)."""
    key = ("offers", params.model_dump_json())
    chosen_offers = params.offer_filter()

    def build(current: CurrentOffers) -> dict[str, Any]:
        if params.date:  # only the page is read from the past: filtered, sorted and counted in the database
            return day_page(state.cursor(), params.date, not_future(state, params.date), params, state.market_states())
        kept = [o for o in current.offers if matches(o, chosen_offers)]
        chosen = sorted(kept, key=_sort_key(params), reverse=params.desc)
        page = chosen[params.offset : params.offset + params.limit]
        return {
            "as_of": iso(current.as_of),
            "count": len(chosen),
            "offset": params.offset,
            "limit": params.limit,
            "offers": current_rows(current, page, state.settings),
        }

    # A past day's rows are its own, charged to the answer cache too (the current offers' are kept once).
    return state.cached_value(key, lambda current: Answer.of(build(current), own_rows=params.date is not None))


RECENT_RUNS = 5  # per provider in /providers


def run_json(run: RunRow) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "scope": run.scope,
        "pricings": list(run.pricings),
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "status": run.status,
        "error": run.error,
        "quotes": run.quote_count,
        "rejected": run.rejected_count,
        "notes": list(run.notes),
        "offline": run.offline,
        "stale_after_minutes": run.stale_after_minutes,
        "export_error": run.export_error,
    }


def schedules(settings: Settings) -> dict[str, list[dict[str, Any]]]:
    """What `serve` runs for each provider and how often (FX under `fx`)."""
    planned: dict[str, list[dict[str, Any]]] = {
        "fx": [{"scope": "daily", "pricings": [], "interval_minutes": settings.fx_interval_minutes}]
    }
    for run in planned_runs(settings):
        planned.setdefault(run.collector.name, []).append(
            {
                "scope": run.scope.name,
                "pricings": sorted(p.value for p in run.scope.pricings),
                "interval_minutes": run.interval_minutes,
            }
        )
    return planned


def providers_answer(state: AppState) -> bytes:
    cur = state.cursor()
    states = provider_states(cur, state.clock(), known_providers())
    recent = recent_runs(cur, RECENT_RUNS)
    planned = schedules(state.settings)
    return dumps(
        {
            "providers": [
                {
                    "provider": s.provider,
                    "status": s.last_status or "never_run",
                    "error": s.last_error,
                    "last_run_at": iso(s.last_run_at),
                    "last_success_at": iso(s.last_success_at),
                    "offers": s.offers,
                    "stale_offers": s.stale_offers,
                    "held_offers": s.held_offers,
                    "stale": s.stale,
                    "offline": s.last_offline,
                    "scope": s.last_scope,
                    "notes": s.last_notes,
                    "export_error": s.last_export_error,
                    # Extensions: how often serve collects it, and its newest runs (newest first).
                    "schedule": planned.get(s.provider, []),
                    "recent_runs": [run_json(run) for run in recent.get(s.provider, [])],
                }
                for s in states
            ]
        }
    )


def health_answer(state: AppState) -> bytes:
    """The threaded path: current offers, the last export and publish attempts, each read again only after a write."""
    published = state.store.last_publish() if state.settings.publish_targets else None
    return health_body(state, state.current(), state.store.last_export(), published)


def health_body(
    state: AppState, current: CurrentOffers, export: ExportAttempt | None, published: PublishAttempt | None = None
) -> bytes:
    """`/healthz` from what is in memory: no query, so liveness never waits behind heavy answers.
    `degraded` (with the reasons in `problems`) when the last write to the database, to the export
    files or of a snapshot for replicas failed: the API answers, but what it and the sheets say is
    ageing. A replica is degraded when its snapshot is older than GPUPRICE_REPLICA_STALE_AFTER_S (or
    none is loaded yet); the collecting process's exports are its own business there."""
    problems = [p for p in (state.store.write_problem,) if p]
    body: dict[str, Any] = {"role": "replica" if state.replica else "collector"}
    if state.replica is not None:
        body["snapshot"], snapshot_problems = state.replica.health()
        problems += snapshot_problems
    else:
        problems += [p for p in (export.error if export else None, published.error if published else None) if p]
    body.update(
        {
            "status": "degraded" if problems else "ok",
            "problems": problems,
            "schema_version": state.schema_version,
            "offers": len(current.offers),
            "as_of": iso(current.as_of),
            "offline": state.settings.offline,
            "exports": None
            if export is None
            else {"attempted_at": iso(export.at), "after": export.provider, "error": export.error},
        }
    )
    if published is not None:
        body["publish"] = {
            "attempted_at": iso(published.at),
            "version": published.version,
            "targets": published.targets,
            "error": published.error,
        }
    return dumps(body)
