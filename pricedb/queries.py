"""Read side of the store: current offers (with staleness) and each provider's state.

An offer is stale when its provider's newest run covering its pricing failed or was skipped, when
its newest successful one is too old, or when that run *held* it: the run's new quote for it was
rejected by the sanity checks, so the offer keeps its last good observation, marked stale with the
rejection's reason (`held_reason`), instead of disappearing as if withdrawn."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import date, datetime, timedelta
from typing import Any

import duckdb

from pricedb.models import PriceStep
from pricedb.schema import QUOTE_COLUMNS


@dataclass(frozen=True, slots=True)
class Offer:
    """A current offer: its latest good observation, with CNY figures and staleness."""

    observation_id: int
    run_id: int
    provider: str
    region: str
    sku: str
    gpu_model: str
    gpu_memory_gb: float
    gpu_count: int
    form_factor: str | None
    interconnect: str | None
    pricing: str
    price: float
    currency: str
    unit: str
    term_hours: float | None
    billing_increment_s: int
    billing_minimum_s: int
    availability: str
    list_price: float | None
    tax_included: bool | None
    price_steps: tuple[PriceStep, ...]
    notes: str | None
    source_url: str
    observed_at: datetime
    offline: bool
    fx_rate: float | None
    fx_date: date | None
    fx_note: str | None
    cny_per_hour: float | None
    cny_per_gpu_hour: float | None
    cny_per_gb_hour: float | None
    vcpus: int | None
    memory_gib: float | None
    gpu_partition: str | None  # a slice of one GPU (MIG, vGPU): what it is, and its share; None: whole GPUs
    gpu_fraction: float | None
    stale: bool
    held_reason: str | None = None  # why the newest quote was rejected, when the offer is held at its last good one

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.sku, self.pricing)


OFFER_FIELDS = tuple(f.name for f in fields(Offer))
STORED_FIELDS = OFFER_FIELDS[:-2]  # the columns of `offers` (and `observations`); the rest is judged on reading
assert STORED_FIELDS[2:] == QUOTE_COLUMNS, "Offer must mirror the stored quote columns"

# Runs grouped by what they covered: per (provider, pricings list, status) the newest run, before the
# parameter. A few dozen groups, however many runs there are (one per collection round and provider:
# 65,000 in the benchmark), so reading them costs one scan of `runs` without unnesting every run's
# pricings or ranking every run (which cost 30-100 ms at that size). `run_state` unnests the groups.
_RUN_GROUPS_SQL = """
    SELECT provider, pricings, status, max((finished_at, run_id)), arg_max(stale_after_minutes, (finished_at, run_id))
    FROM runs WHERE finished_at < ? GROUP BY provider, pricings, status
"""


@dataclass(frozen=True, slots=True)
class Coverage:
    last_status: str
    ok_at: datetime | None
    stale_after_minutes: int | None

    def stale_from(self) -> datetime | None:
        """The moment offers under this coverage go stale by age (None: already stale, or never)."""
        if self.ok_at is None or self.stale_after_minutes is None:
            return None
        return self.ok_at + timedelta(minutes=self.stale_after_minutes)

    def is_stale(self, now: datetime) -> bool:
        if self.last_status != "ok":
            return True
        moment = self.stale_from()
        return moment is None or now >= moment


@dataclass(frozen=True)
class RunState:
    """What the runs finished before a moment say, per (provider, pricing): the newest run covering it
    (its status: `coverage`) and the newest successful one (`newest_ok`, its run id: that run's
    observations and the offers it held are the market of that moment, pricedb.snapshot)."""

    coverage: dict[tuple[str, str], Coverage]
    newest_ok: dict[tuple[str, str], int]


def run_state(cur: duckdb.DuckDBPyConnection, before: datetime | None = None) -> RunState:
    """The runs finished before `before` (default: all runs), newest first by (finished_at, run_id)."""
    newest: dict[tuple[str, str], tuple[tuple[datetime, int], str]] = {}
    newest_ok: dict[tuple[str, str], tuple[tuple[datetime, int], int]] = {}
    for provider, pricings, status, last, stale_after in cur.execute(
        _RUN_GROUPS_SQL, [before or datetime.max]
    ).fetchall():
        for pricing in pricings:
            pair = (provider, pricing)
            if pair not in newest or last > newest[pair][0]:
                newest[pair] = (last, status)
            if status == "ok" and (pair not in newest_ok or last > newest_ok[pair][0]):
                newest_ok[pair] = (last, stale_after)
    cover = {
        pair: Coverage(status, newest_ok[pair][0][0] if pair in newest_ok else None,
                       newest_ok[pair][1] if pair in newest_ok else None)
        for pair, (_, status) in newest.items()
    }  # fmt: skip
    return RunState(cover, {pair: last[1] for pair, (last, _) in newest_ok.items()})


@dataclass(frozen=True, slots=True)
class HeldOffer:
    observation_id: int  # the last good observation, still shown
    reason: str  # why the newest quote was rejected


def held_by(cur: duckdb.DuckDBPyConnection, state: RunState) -> dict[tuple[str, str, str, str], HeldOffer]:
    """The offers the newest successful run of their (provider, pricing) held at their last good
    observation (`held_offers` rows of those runs, found by run id)."""
    runs = sorted(set(state.newest_ok.values()))
    if not runs:
        return {}
    rows = cur.execute(
        "SELECT run_id, observation_id, provider, region, sku, pricing, reason FROM held_offers "
        f"WHERE run_id IN ({', '.join(str(int(r)) for r in runs)})"
    ).fetchall()
    return {
        (provider, region, sku, pricing): HeldOffer(observation_id, reason)
        for run_id, observation_id, provider, region, sku, pricing, reason in rows
        if state.newest_ok.get((provider, pricing)) == run_id
    }


def offer_from_row(row: tuple[Any, ...], stale: bool, held_reason: str | None = None) -> Offer:
    values = dict(zip(STORED_FIELDS, row, strict=True))
    steps = values["price_steps"]
    values["price_steps"] = tuple(PriceStep(**s) for s in json.loads(steps)) if steps else ()
    return Offer(**values, stale=stale or held_reason is not None, held_reason=held_reason)


FETCH_ROWS = 10_000  # rows turned into offers at a time


@dataclass(frozen=True)
class CurrentOffers:
    offers: list[Offer]
    as_of: datetime | None  # newest observation among them
    valid_until: datetime | None  # when some offer's staleness flips next (cache horizon)
    # What readers derive from exactly these offers (the API's JSON rows), kept as long as they are current.
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def current_offers(cur: duckdb.DuckDBPyConnection, now: datetime) -> CurrentOffers:
    """Every current offer, with `stale` judged at `now` (naive UTC)."""
    state = run_state(cur)
    cover, held = state.coverage, {key: h.reason for key, h in held_by(cur, state).items()}
    columns = ", ".join(STORED_FIELDS)
    cur.execute(f"SELECT {columns} FROM offers ORDER BY provider, region, sku, pricing")
    offers: list[Offer] = []
    # Read in chunks, and every repeated text (provider, currency, unit, source URL, notes) kept once:
    # 50,000 offers then hold a few MB of distinct texts instead of one copy per offer.
    texts: dict[str, str] = {}
    for chunk in iter(lambda: cur.fetchmany(FETCH_ROWS), []):
        for fetched in chunk:
            row = tuple(texts.setdefault(v, v) if type(v) is str else v for v in fetched)
            entry = cover.get((row[2], row[10]))
            stale = entry.is_stale(now) if entry is not None else True
            offers.append(offer_from_row(row, stale, held.get((row[2], row[3], row[4], row[10]))))
    upcoming = [m for c in cover.values() if (m := c.stale_from()) is not None and m > now and c.last_status == "ok"]
    as_of = max((o.observed_at for o in offers), default=None)
    return CurrentOffers(offers, as_of, min(upcoming, default=None))


@dataclass(frozen=True)
class ProviderState:
    provider: str
    last_run_at: datetime | None
    last_status: str | None
    last_error: str | None
    last_scope: str | None
    last_offline: bool | None
    last_notes: list[str]
    last_success_at: datetime | None
    offers: int
    stale_offers: int
    held_offers: int  # of the stale ones: held at their last good price, their newest quote rejected
    stale: bool
    last_export_error: str | None = None  # the price sheets could not be written after its last run


@dataclass(frozen=True)
class ExportAttempt:
    """The newest attempt to write the export files (after a run): when, after whose run, and why
    it failed (None: the files were written)."""

    at: datetime
    provider: str
    error: str | None


def last_export(cur: duckdb.DuckDBPyConnection) -> ExportAttempt | None:
    # max() first, then the few rows at that moment: 10× cheaper than a top-1 sort over every run.
    row = cur.execute(
        "SELECT exported_at, provider, export_error FROM runs "
        "WHERE exported_at = (SELECT max(exported_at) FROM runs) ORDER BY run_id DESC LIMIT 1"
    ).fetchone()
    return ExportAttempt(*row) if row else None


@dataclass(frozen=True)
class PublishAttempt:
    """An attempt to publish a snapshot (pricedb.replication): when, which version (None: it failed),
    the newest run it held, where to, and why it failed (None: published)."""

    at: datetime
    version: int | None
    last_run_id: int
    targets: str
    error: str | None


def last_publish(cur: duckdb.DuckDBPyConnection) -> PublishAttempt | None:
    row = cur.execute(
        "SELECT attempted_at, version, last_run_id, targets, error FROM publishes "
        "ORDER BY attempted_at DESC, version DESC NULLS LAST LIMIT 1"
    ).fetchone()
    return PublishAttempt(*row) if row else None


def last_run_finished(cur: duckdb.DuckDBPyConnection) -> datetime | None:
    """When the newest run ended (any provider, any outcome): the data's Last-Modified and the
    Atom feed's `updated` when no digest is stored yet. None before the first run."""
    row = cur.execute("SELECT max(finished_at) FROM runs").fetchone()
    return row[0] if row else None


def on_demand_cny_per_hour(cur: duckdb.DuckDBPyConnection, provider: str) -> dict[tuple[str, str, str], float]:
    """The provider's current on-demand prices in CNY per hour by (provider, region, sku): the sanity
    checks hold a spot quote above its on-demand price against them."""
    rows = cur.execute(
        "SELECT provider, region, sku, cny_per_hour FROM offers "
        "WHERE provider = ? AND pricing = 'on_demand' AND cny_per_hour IS NOT NULL",
        [provider],
    ).fetchall()
    return {(p, r, s): float(c) for p, r, s, c in rows}


def run_counts(cur: duckdb.DuckDBPyConnection) -> list[tuple[str, str, int, int]]:
    """(provider, status, runs, quotes rejected) over every run recorded (/metrics)."""
    rows = cur.execute(
        "SELECT provider, status, count(*), coalesce(sum(rejected_count), 0) FROM runs GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    return [(provider, status, int(runs), int(rejected)) for provider, status, runs, rejected in rows]


def publish_counts(cur: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(published, failed) attempts to publish a snapshot (/metrics)."""
    row = cur.execute(
        "SELECT count(*) FILTER (error IS NULL), count(*) FILTER (error IS NOT NULL) FROM publishes"
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def provider_states(cur: duckdb.DuckDBPyConnection, now: datetime, known: list[str]) -> list[ProviderState]:
    """Each provider's last run and how many of its offers are current and stale."""
    last = {
        row[0]: row[1:]
        for row in cur.execute(
            """
            SELECT provider, arg_max(finished_at, finished_at), arg_max(status, finished_at),
                   arg_max(error, finished_at), arg_max(scope, finished_at), arg_max(offline, finished_at),
                   arg_max(notes, finished_at),
                   max(finished_at) FILTER (WHERE status = 'ok'), arg_max(export_error, finished_at)
            FROM runs GROUP BY provider
            """
        ).fetchall()
    }
    offers = current_offers(cur, now).offers
    states: list[ProviderState] = []
    for provider in sorted(set(known) | set(last) - {"fx"}) + (["fx"] if "fx" in last else []):
        at, status, error, scope, offline, notes, ok_at, export_error = last.get(provider, (None,) * 8)
        mine = [o for o in offers if o.provider == provider]
        stale_count = sum(o.stale for o in mine)
        states.append(
            ProviderState(
                provider=provider,
                last_run_at=at,
                last_status=status,
                last_error=error,
                last_scope=scope,
                last_offline=offline,
                last_notes=json.loads(notes) if notes else [],
                last_success_at=ok_at,
                offers=len(mine),
                stale_offers=stale_count,
                held_offers=sum(o.held_reason is not None for o in mine),
                stale=bool(mine) and stale_count > 0,
                last_export_error=export_error,
            )
        )
    return states


def instance_zones(cur: duckdb.DuckDBPyConnection, provider: str) -> dict[tuple[str, str], list[str]]:
    """(region, sku) → the zones it is sold in, as last surveyed; empty when never surveyed."""
    rows = cur.execute(
        "SELECT region, sku, zone FROM instance_zones WHERE provider = ? ORDER BY region, sku, zone", [provider]
    ).fetchall()
    zones: dict[tuple[str, str], list[str]] = {}
    for region, sku, zone in rows:
        zones.setdefault((region, sku), []).append(zone)
    return zones
