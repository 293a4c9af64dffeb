"""The daily digest as served (`/digest`, `/digest.atom`, `gpuprice digest`) and as scheduled.

A stored digest (built by the daily job) is served as stored. For a day with none stored (the
server was down at digest time, or the day is older than the database's digests), the digest is
built on demand from the observations, served with `"stored": false` and a note saying so, and not
stored: the daily job remains the one writer of the digests table. The day not yet over is served
too, marked `"partial": true`.

Answers are cached until the data changes: storing a digest or recording a delivery moves the
store's version, and the cache key holds the resolved day (so the default "yesterday" moves on at
midnight in the digest's time zone)."""

from __future__ import annotations

import asyncio
import json
import mmap
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from api.day_answers import build_day_answers
from api.delivery import deliver
from api.errors import ApiError
from api.history_frames import write_history_frames
from api.json_members import member_at, with_member_replaced, with_new_members
from api.query import DigestParams
from api.state import AppState, dumps, now_utc
from pricedb.clock import iso_utc
from pricedb.day_answers import DIGEST, answers_folder, map_day_answer
from pricedb.digest import (
    build_digest,
    day_window,
    deliveries_for,
    load_digest,
    load_digest_body,
    recent_digests,
    store_digest,
    yesterday,
)
from pricedb.formats.digest_render import to_atom, to_markdown
from pricedb.queries import last_run_finished
from pricedb.redact import get_logger
from pricedb.settings import Settings
from pricedb.store import PriceStore

log = get_logger("gpuprice.digest")

ON_DEMAND_NOTE = "built on demand from observations: no digest was stored for this day"
PARTIAL_NOTE = "the day is not over yet in {zone}: this digest covers it so far"


def resolve_day(state: AppState, params: DigestParams) -> date:
    zone = state.settings.digest_zone
    now = state.clock()
    day = params.date or yesterday(now, zone)
    start, _ = day_window(day, zone)
    if start > now:  # only a given day can be
        today = now.replace(tzinfo=UTC).astimezone(zone).date()
        raise ApiError(
            422, f"{day.isoformat()} is in the future (today is {today} in {zone.key})", "date", day.isoformat()
        )
    return day


def digest_payload(state: AppState, day: date) -> dict[str, Any]:
    cur = state.cursor()
    digest = load_digest(cur, day)
    if digest is not None:
        digest["stored"] = True
    else:
        zone = state.settings.digest_zone
        now = state.clock()
        digest = kept_digest(cur, answers_folder(state.store.path), day, zone, now) or build_digest(
            cur, day, zone, now, state.market_states()
        )
        digest["stored"] = False
        digest["note"] = PARTIAL_NOTE.format(zone=zone.key) if digest["partial"] else ON_DEMAND_NOTE
    digest["deliveries"] = deliveries_for(cur, day)
    return digest


def kept_digest(cur: Any, folder: Path, day: date, zone: ZoneInfo, now: datetime) -> dict[str, Any] | None:
    """`build_digest(cur, day, zone, now)` as built ahead (api.day_answers) for a day that is over,
    while the runs it was built from stand; None: build it. Only `built_at` (now) differs between
    two builds of a day that is over, so it is set here."""
    body = kept_digest_body(cur, folder, day, zone, now)
    if body is None:
        return None
    digest = json.loads(body[:])
    digest["built_at"] = iso_utc(now)
    return digest


def kept_digest_body(cur: Any, folder: Path, day: date, zone: ZoneInfo, now: datetime) -> mmap.mmap | None:
    """`kept_digest`'s JSON as kept, with the `built_at` of its build: its file mapped, not read
    (pricedb.day_answers.map_day_answer), as `past_digest_body` copies it once into the answer."""
    _, end = day_window(day, zone)
    if end > now:
        return None
    return map_day_answer(cur, folder, DIGEST, day, zone.key, end)


# build_digest's members ahead of `built_at`, in its order
BEFORE_BUILT_AT = ("date", "compared_to", "time_zone", "window")


def past_digest_body(state: AppState, day: date) -> bytes:
    """`dumps(digest_payload(state, day))` for a day that is over, written around the stored or kept
    digest's JSON instead of parsing and writing it again: a digest of 7,000 price changes is ~4 MB,
    and parsing and writing it took ~0.2 s. Both are `build_digest`'s dict as `dumps` writes it, so
    `digest_payload`'s members go after its own (and the kept one's `built_at` becomes now); a body
    in another shape (a stored digest written by another version) is parsed as before."""
    cur = state.cursor()
    deliveries = deliveries_for(cur, day)
    body: bytes | None = None
    stored = load_digest_body(cur, day)
    if stored is not None:
        if member_at(stored, "built_at", BEFORE_BUILT_AT) is not None:
            body = with_new_members(stored, [("stored", True), ("deliveries", deliveries)])
    else:
        now = state.clock()
        kept = kept_digest_body(cur, answers_folder(state.store.path), day, state.settings.digest_zone, now)
        if kept is not None:  # a kept digest is of a day that was over when it was built: not partial
            added = [("stored", False), ("note", ON_DEMAND_NOTE), ("deliveries", deliveries)]
            body = with_member_replaced(kept, "built_at", iso_utc(now), BEFORE_BUILT_AT, added)
    return body if body is not None else dumps(digest_payload(state, day))


def digest_answer(state: AppState, params: DigestParams) -> tuple[bytes, str]:
    """(body, media type) for `/digest`."""
    day = resolve_day(state, params)

    _, end = day_window(day, state.settings.digest_zone)
    if end > state.clock():  # today so far: staleness and the window move with the clock
        digest = digest_payload(state, day)
        return (to_markdown(digest).encode(), MARKDOWN) if params.format == "md" else (dumps(digest), JSON)
    body, _ = state.cached_value(("digest", day.isoformat(), "json"), lambda _: (past_digest_body(state, day), JSON))
    if params.format == "json":
        return body, JSON
    # A past day's markdown is written from its JSON answer, built once for both (as a kept digest's is).
    return state.cached_value(
        ("digest", day.isoformat(), "md"), lambda _: (to_markdown(json.loads(body)).encode(), MARKDOWN)
    )


JSON = "application/json"
MARKDOWN = "text/markdown; charset=utf-8"


def atom_answer(state: AppState, base_url: str) -> bytes:
    def build(_: object) -> bytes:
        cur = state.cursor()
        digests = recent_digests(cur, state.settings.digest_feed_entries)
        if digests:
            updated = max(d["built_at"] for d in digests)
        else:
            finished = last_run_finished(cur)
            updated = iso_utc(finished) if finished else "1970-01-01T00:00:00Z"
        return to_atom(digests, base_url, updated)

    return state.cached_value(("digest.atom", base_url), build)


async def run_digest_job(
    store: PriceStore,
    settings: Settings,
    day: date | None = None,
    clock: Callable[[], datetime] = now_utc,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, Any] | None:
    """The scheduled job: build the digest of `day` (default: yesterday in the digest's time zone),
    store it, deliver it. Whatever goes wrong is logged and recorded, never raised into the
    scheduler; returns the digest with its delivery outcomes, or None if it could not be built."""
    try:
        zone = settings.digest_zone
        now = clock()
        day = day or yesterday(now, zone)
        digest = await asyncio.to_thread(build_digest, store.cursor(), day, zone, now)
        await asyncio.to_thread(store_digest, store, digest)
        log.info("digest %s stored: %s", day, digest["summary"])
        digest["deliveries"] = await deliver(store, settings, {**digest, "stored": True}, transport)
        return digest
    except Exception:
        log.exception("the digest job failed at %s", clock().isoformat())
        return None


async def run_compaction_job(store: PriceStore, settings: Settings, clock: Callable[[], datetime] = now_utc) -> None:
    """After the daily digest: lay the day's observations out by offer (pricedb.history_layout), so
    history questions about named offers read few row groups, compress each series ahead
    (api.history_frames), then build the answers about the days now over (api.day_answers). A
    failure is logged, never raised."""
    try:
        upto = await asyncio.to_thread(store.compact_history)
        log.info("history laid out by offer up to observation %d", upto)
        await asyncio.to_thread(write_history_frames, store)  # its series compressed ahead, once
        built = await asyncio.to_thread(build_day_answers, store, settings, clock())
        log.info("%d answers about past days built ahead", built)
    except Exception:
        log.exception("laying out the history by offer failed")
