"""Answers about the past: `/offers/history` (observations over time) and day snapshots
(`/offers?date=`, `/export?date=`), shared by the HTTP API and the CLI."""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from api.accept_encoding import preferred
from api.budget import check_budget
from api.errors import ApiError
from api.history_frames import FramedSeries, SeriesFrames, frames_limit, write_frames
from api.history_query_fast import plain_history_params
from api.history_records import history_from_files
from api.json_encoding import CODINGS, EncodedJson, accept_encoding_of, encoded_json
from api.limits import limits_of
from api.query import HistoryParams, as_routed
from api.state import AppState, dumps
from api.zstd_splice import spliced_frame
from pricedb.clock import iso_utc
from pricedb.history import History, HistoryQuery, PointBuilder, Series, TooManyPoints, history
from pricedb.history_files import PointFiles
from pricedb.history_layout import Layout, read_layout
from pricedb.history_recent import RecentPoints, extend_recent, read_recent
from pricedb.scratch import Scratch
from pricedb.snapshot import Snapshot, snapshot_of_day
from pricedb.store import PriceStore

DEFAULT_HISTORY_DAYS = 30


def day_snapshot(state: AppState, day: date) -> Snapshot:
    """The market at the end of a UTC day; a future day is refused (422 naming `date`)."""
    return snapshot_of_day(state.cursor(), day, not_future(state, day))


def not_future(state: AppState, day: date) -> datetime:
    """Now; a future day is refused (422 naming `date`)."""
    now = state.clock()
    if day > now.date():
        text = day.isoformat()
        raise ApiError(422, f"{text} is in the future (today is {now.date().isoformat()} UTC)", "date", text)
    return now


def history_query(state: AppState, params: HistoryParams) -> HistoryQuery:
    until = params.until or state.clock()
    since = params.since or until - timedelta(days=DEFAULT_HISTORY_DAYS)
    if since >= until:  # only reachable with a defaulted `until` (now) and a future `since`
        given = params.since.isoformat() if params.since else None
        raise ApiError(422, f"since ({iso_utc(since)}) must be before until ({iso_utc(until)})", "since", given)
    return HistoryQuery(
        since=since,
        until=until,
        offers=params.offer_filter(),
        limit=params.limit,
        offset=params.offset,
        max_points=state.settings.api_max_points,
    )


def _too_broad(query: HistoryQuery, exc: TooManyPoints) -> ApiError:
    parameter = "limit" if exc.series > 1 else "since"
    return ApiError(
        422,
        f"too broad: {exc} that one answer may hold (GPUPRICE_API_MAX_POINTS); narrow it with a smaller "
        f"limit (series per page, then offset), a shorter since/until window, or provider, region, sku",
        parameter,
        str(query.limit) if parameter == "limit" else iso_utc(query.since),
    )


_layouts: weakref.WeakKeyDictionary[PriceStore, _Held] = weakref.WeakKeyDictionary()
_layouts_lock = threading.Lock()
FILES_RETRY_S = 1.0  # a layout without files looks for them again after this long (written after its commit)


@dataclass(frozen=True)
class _Held:
    version: int
    layout: Layout
    files: PointFiles | None
    looked_at: float  # time.monotonic() when the files were last looked for
    recent: RecentPoints | None = None  # the observations since the compaction, when files and a tail
    frames: SeriesFrames | None = None  # the files' series compressed ahead (api.history_frames)


def _layout(state: AppState, look_again: bool = False) -> tuple[Layout, PointFiles | None, RecentPoints | None]:
    """The history layout at the store's data version, read once per version (its series numbers and
    its files, pricedb.history_files, once per compaction; the observations since the compaction,
    pricedb.history_recent, once per version a run lands), so a named offer's question is one query,
    or none. The files are written after the compaction commits, so a layout read in between looks
    for them again a moment later (and so are the frames, written after the files; at once with
    `look_again`)."""
    store = state.store
    version = store.version  # read before the layout: a write meanwhile only makes the layout newer
    with _layouts_lock:
        held = _layouts.get(store)
    now = time.monotonic()
    if held is not None and held.version == version:
        whole = held.files is not None and held.frames is not None
        if not look_again and (whole or now - held.looked_at < FILES_RETRY_S or held.layout.compacted_upto == 0):
            return held.layout, held.files, held.recent
        layout = held.layout
    else:
        layout = read_layout(state.cursor(), held.layout if held is not None else None)
    if held is not None and held.files is not None and held.files.compacted_upto == layout.compacted_upto:
        files: PointFiles | None = held.files
    else:
        files = PointFiles.open(store.path, layout.compacted_upto, len(layout.keys) - 1, layout.laid_out_points)
    recent = _recent(state, layout, files, held.recent if held is not None else None)
    frames = None
    if held is not None and held.frames is not None and files is not None and held.frames.token == files.token:
        frames = held.frames
    elif files is not None:
        frames = SeriesFrames.open(store.path, files)
    with _layouts_lock:
        _layouts[store] = _Held(version, layout, files, now, recent, frames)
    return layout, files, recent


def warm_history(state: AppState) -> None:
    """Read the current data version's layout, its files and the observations since the compaction
    now (api.web.warm calls it in its worker thread when a run lands), so the first history question
    after the run finds them held instead of reading or extending them itself (0.3-0.9 s at 50k); and
    write the files' frames (api.history_frames) if they have none yet: files written before frames
    existed, or a compaction whose job was stopped before it wrote them."""
    _, files, _ = _layout(state)
    with _layouts_lock:
        held = _layouts.get(state.store)
    unframed = files is not None and held is not None and held.files is files and held.frames is None
    if unframed and files is not None and write_frames(state.store.path, files, frames_limit(state.settings, files)):
        _layout(state, look_again=True)


def _recent(
    state: AppState, layout: Layout, files: PointFiles | None, held: RecentPoints | None
) -> RecentPoints | None:
    """The observations since the compaction (None when there are none, no files to join them to, or
    more than GPUPRICE_HISTORY_RECENT_MB); the ones held are kept while no observation lands."""
    if files is None or layout.newest_id == layout.compacted_upto:
        return None
    limit = state.settings.history_recent_mb * 1024 * 1024
    if held is not None and held.after == layout.compacted_upto and held.upto <= layout.newest_id:
        if held.upto == layout.newest_id:
            return held
        with state.store.memory_lifted():  # a day of runs at 50,000 offers needs more than serving's share
            return extend_recent(state.cursor(), held, layout.newest_id, limit)
    with state.store.memory_lifted():  # bounded by GPUPRICE_HISTORY_RECENT_MB instead
        return read_recent(state.cursor(), layout.compacted_upto, layout.newest_id, files.codes, limit)


def _number(value: float | None) -> str:
    """`dumps`'s text for a number or null (repr for a finite float: what json writes)."""
    return repr(value) if type(value) is float and math.isfinite(value) else dumps(value).decode()


def _moment_texts() -> Callable[[datetime], str]:
    moments: dict[datetime, str] = {}  # points share their observation moments: format each once

    def at(moment: datetime) -> str:
        text = moments.get(moment)
        if text is None:  # iso_utc's text for the naive UTC moments stored, in one call instead of two
            text = moments[moment] = (
                moment.isoformat(timespec="seconds") + "Z" if moment.tzinfo is None else iso_utc(moment)
            )
        return text

    return at


def _point_json(at: Callable[[datetime], str]) -> PointBuilder:
    """Each point written straight to its JSON text, as `dumps` writes the plain point (as_dict) whose
    moment is `at`'s text; tests compare the two."""

    def point(
        moment: datetime, price: float, per_hour: float | None, per_gb: float | None, changed: tuple[str, str] | None
    ) -> str:
        text = (
            f'{{"observed_at":"{at(moment)}","price":{_number(price)},"cny_per_hour":{_number(per_hour)},'
            f'"cny_per_gb_hour":{_number(per_gb)}'
        )
        if changed is None:
            return text + "}"
        return text + f',"currency":{dumps(changed[0]).decode()},"unit":{dumps(changed[1]).decode()}}}'

    return point


def _history_body(state: AppState, query: HistoryQuery) -> bytes:
    """The answer's JSON, each point written as it is read and the series encoded one at a time: a big
    answer is many short steps, between which other threads (the event loop) get the interpreter, not
    one long one that holds it."""
    layout, files, recent = _layout(state)
    try:
        found = history_from_files(query, layout, files, recent)
        if found is None:
            found = history(state.cursor(), query, layout=layout, point=_point_json(_moment_texts()))
    except TooManyPoints as exc:
        raise _too_broad(query, exc) from None
    return b"".join(_body(query, found))


def _body(query: HistoryQuery, found: History) -> list[bytes | memoryview]:
    """The answer's JSON in pieces, for the caller to join or to compress one by one (api.json_encoding)."""
    parts: list[bytes | memoryview] = [dumps(answer_head(query, found))[: -len(b"[]}")], b"["]
    for number, s in enumerate(found.series):
        check_budget()
        if number:
            parts.append(b",")
        parts.append(dumps({**series_head(s), "points": []})[: -len(b"[]}")])
        parts.append(b"[")
        if s.points_json is not None:
            parts.extend(s.points_json)
        else:
            parts.append(",".join(s.points).encode())
        parts.append(b"]}")
    parts.append(b"]}")
    return parts


def answer_head(query: HistoryQuery, found: History) -> dict[str, Any]:
    """The answer's fields before its series (`series` empty)."""
    return {
        "query": {
            "since": iso_utc(query.since),
            "until": iso_utc(query.until),
            "gpu": ",".join(query.offers.gpus) or None,  # as written (A100,H100); null: every card
            "provider": list(query.offers.providers),
            "pricing": list(query.offers.pricings),
            "region": list(query.offers.regions),
            "sku": list(query.offers.skus),
            "include_unavailable": query.offers.include_unavailable,
            "limit": query.limit,
            "offset": query.offset,
        },
        "count": found.total_series,
        "points": found.points,
        "series": [],
    }


SERIES_FIELDS = ("provider", "region", "sku", "pricing", "gpu_model", "gpu_memory_gb", "gpu_count", "currency", "unit")


def series_head(s: Series) -> dict[str, Any]:
    """A series' fields before its points."""
    return {name: getattr(s, name) for name in SERIES_FIELDS}


# An answer read from at most this many records (216 KB) may be written on the loop: with api.points_json
# 1.0-1.5 ms of CPU for 6,000 points whose prices change daily, what 2,000 points cost written one by one
# (the bound before).
AT_ONCE_POINTS = 6_000


def _held_with_files(state: AppState) -> _Held | None:
    """The layout of the current data version, when it has been read and has files."""
    with _layouts_lock:
        held = _layouts.get(state.store)
    return None if held is None or held.files is None or held.version != state.store.version else held


# The buffer the answers written at once take their records, rows and gathered body from
# (pricedb.scratch): 6,000 records (216 KB), their rows and the body they make (~140 bytes a point,
# ~190 with a currency and unit each, twice) fit.
_scratch = Scratch(3 * 1024 * 1024)


def history_answer_at_once(state: AppState, params: HistoryParams, accept_encoding: str) -> EncodedJson | None:
    """The answer, as the client that sent `accept_encoding` takes it (api.json_encoding), when the
    history files (pricedb.history_files) and the observations since the compaction held in memory
    hold it whole, at most AT_ONCE_POINTS records already in the page cache or memory, and the layout
    of this data version is already read; None otherwise (ask `history_answer` in a worker thread,
    through the heavy-answer gate). No database query, no disk wait, a bounded read and at most
    ~1.5 ms of writing (and ~0.5 ms compressing): work the event loop may do itself, sparing the
    answer the thread hop and the budget's bookkeeping (which cost more than it). Its records and
    rows go into the scratch buffer, held until its bytes are joined or compressed."""
    held = _held_with_files(state)
    if held is None:
        return None
    query = history_query(state, params)
    frames = held.frames if preferred(accept_encoding, CODINGS) == "zstd" else None
    with _scratch.held() as room:
        try:
            found = history_from_files(
                query, held.layout, held.files, held.recent, at_once=AT_ONCE_POINTS, room=room, frames=frames
            )
        except TooManyPoints as exc:
            raise _too_broad(query, exc) from None
        if found is None:
            return None
        if found.series and isinstance(found.series[0], FramedSeries):
            return EncodedJson(_framed_body(query, found, found.series[0]), "zstd", varies=True)
        return encoded_json(_body(query, found), accept_encoding, room)


def _framed_body(query: HistoryQuery, found: History, series: FramedSeries) -> bytes:
    """The answer of one series whose compacted points are compressed ahead, as one zstd frame: the
    answer's other bytes (`_body`'s, the points since the compaction after a comma) around that
    series' blocks (api.zstd_splice)."""
    parts = _body(query, found)
    points_at = 4  # the answer's head, `[`, the series' head, `[`: then its points
    after = [b",", *parts[points_at:]] if series.points_json else parts[points_at:]
    return spliced_frame(parts[:points_at], series.frame, after)


HISTORY_PATH = "/offers/history"
TRIED_AT_ONCE = "gpuprice.history_tried_at_once"  # in a request's scope: api.front asked, and the answer is not at hand


def history_in_front(state: AppState, scope: dict[str, Any]) -> EncodedJson | None:
    """`history_answer_at_once` for a GET of HISTORY_PATH before routing (api.front), its query read
    into `HistoryParams` as FastAPI reads it; None when the route must answer: parameters the model
    refuses, a layout not read yet, or an answer not at hand (marked TRIED_AT_ONCE, so the route does
    not ask again, and goes off the loop)."""
    if _held_with_files(state) is None:
        return None  # not parsed: the route reads the layout
    params = plain_history_params(scope["query_string"])  # a plain question, without the model's machinery
    if params is None:
        try:
            with limits_of(state.settings):
                params = HistoryParams.model_validate(as_routed(scope["query_string"]))
        except ValidationError:
            return None
    encoded = history_answer_at_once(state, params, accept_encoding_of(scope["headers"]))
    if encoded is None:
        scope[TRIED_AT_ONCE] = True
    return encoded


def history_answer(state: AppState, params: HistoryParams) -> bytes:
    query = history_query(state, params)
    if params.since and params.until:  # a fixed window: the answer changes only when data lands
        return state.cached_value(("history", params.model_dump_json()), lambda _: _history_body(state, query))
    return _history_body(state, query)
