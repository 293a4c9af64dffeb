"""One offer's history read from the compacted history's files (pricedb.history_files,
api.history_records) is the plain reference's answer byte for byte, and files that are missing,
partial, corrupt, from another compaction or never written leave the answer unchanged (DuckDB
answers it)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from api import history as api_history
from api.history import _history_body, _layout, history_query
from api.history_records import history_from_files
from api.query import HistoryParams
from api.state import AppState
from api.web.warm import keep_warm
from pricedb.history import HistoryQuery, history
from pricedb.history_files import RECORD, files_folder, write_point_files
from pricedb.models import Availability, Pricing, Unit
from pricedb.offer_filter import OfferFilter
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.api.test_history_fast import OFFERS, _questions, _reference_body, _rounds
from tests.conftest import make_settings
from tests.helpers import NOW, make_quote, make_run, serving


class Checked(NamedTuple):
    from_files: int  # questions holding points whose answer came from the files
    named: int  # questions naming their offers (every key column) and holding points


class Reference(NamedTuple):
    body: bytes
    points: int


# The plain reference's answers, by the observations they were read from (`_observed`) and question:
# most tests ask the module's questions of the compacted data as made, having only damaged its files,
# so each reference is read from DuckDB once per module rather than once per test (it was most of the
# module's time). Any change to the observations table changes the fingerprint, and the reference is
# read again.
_references: dict[tuple[tuple[int, int], HistoryQuery], Reference] = {}


def _observed(state: AppState) -> tuple[int, int]:
    """A fingerprint of the observations table, the one table the plain reference reads: how many rows
    and the sum of their hashes (every column)."""
    count, hashes = state.store.cursor().execute("SELECT count(*), sum(hash(o)) FROM observations o").fetchone()
    return count, int(hashes or 0)


def _reference(state: AppState, query: HistoryQuery, observed: tuple[int, int]) -> Reference:
    known = _references.get((observed, query))
    if known is None:
        plain = history(state.store.cursor(), query, laid_out=False)
        known = _references[observed, query] = Reference(_reference_body(query, plain), plain.points)
    return known


def _check(state: AppState, questions: list[HistoryQuery], clear: bool = True) -> Checked:
    """Every answer is the reference's; counts which came from the files. Each question's reference is
    read once per state of the observations (`_references`) and counted both ways.
    `clear`: the layout (and what it holds) read anew, not extended from the last version's."""
    if clear:
        _layout_cache_cleared()
    from_files = named = 0
    observed = _observed(state)
    for query in questions:
        plain = _reference(state, query, observed)
        assert _history_body(state, query) == plain.body, query
        from_files += plain.points > 0 and history_from_files(query, *_layout(state)) is not None
        offers = query.offers
        named += bool(offers.providers and offers.regions and offers.skus and offers.pricings) and plain.points > 0
    return Checked(from_files, named)


def _named_from_files(state: AppState, questions: list[HistoryQuery], clear: bool = True) -> int:
    """`_check`, asserting that exactly the questions naming their offers and holding points came
    from the files; returns how many did."""
    checked = _check(state, questions, clear)
    assert checked.from_files == checked.named, checked
    return checked.named


def _layout_cache_cleared() -> None:
    with api_history._layouts_lock:
        api_history._layouts.clear()


@pytest.fixture(scope="module")
def _compacted_once(tmp_path_factory: pytest.TempPathFactory, _migrated_db: Path) -> tuple[Path, list[HistoryQuery]]:
    """200 days of runs, compacted: the database and its history files, made once for the module
    (every test starts from a copy, as a restarted server would open them) and the questions."""
    settings = make_settings(tmp_path_factory.mktemp("compacted"))
    shutil.copyfile(_migrated_db, settings.db)
    store = PriceStore(settings)
    try:
        rng = random.Random(1414)
        start = NOW - timedelta(days=200)
        end = _rounds(store, rng, start, 30)
        store.compact_history()
    finally:
        store.close()
    # Two draws of the questions (42, 21 of them naming their offer): four drew the same kinds again and
    # hit no other line or branch of api.history*, pricedb.history* (coverage), at twice the time.
    return settings.db, [q for _ in range(2) for q in _questions(rng, start, end)]


@pytest.fixture
def compacted(
    settings: Settings, _compacted_once: tuple[Path, list[HistoryQuery]], request: pytest.FixtureRequest
) -> tuple[AppState, list[HistoryQuery]]:
    made, questions = _compacted_once
    settings.db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(made, settings.db)
    shutil.copytree(files_folder(made), files_folder(settings.db))
    store: PriceStore = request.getfixturevalue("store")  # opens the copy
    return AppState(store, settings, clock=lambda: NOW), list(questions)


def test_files_answer_named_offers_after_a_compaction(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    state, questions = compacted
    assert _named_from_files(state, questions) > 15
    folder = files_folder(state.store.path)
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["history", "points", "series"]


def test_observations_since_the_compaction_are_held_beside_the_files(
    compacted: tuple[AppState, list[HistoryQuery]],
) -> None:
    """Runs landed since the compaction: the files answer with those observations held in memory
    (pricedb.history_recent), read again each time a run lands; a second compaction's files replace
    the first's and nothing is held."""
    state, questions = compacted
    end = NOW - timedelta(days=5)
    for seed in range(3):  # a run at a time: each lands a new data version, read on top of the last
        end = _rounds(state.store, random.Random(seed), end, 2)
        assert _named_from_files(state, questions, clear=seed == 0) > 15
        assert _layout(state)[2] is not None
    extended = _layout(state)[2]
    assert _named_from_files(state, questions)  # read whole: the same answers
    fresh = _layout(state)[2]
    assert extended is not None and fresh is not None and extended is not fresh
    assert sorted(extended.keys) == fresh.keys and len(extended.held) == len(fresh.held)
    state.store.compact_history()  # a second compaction: its files replace the first's
    assert _named_from_files(state, questions) > 15
    assert _layout(state)[2] is None
    assert len(list(files_folder(state.store.path).iterdir())) == 3


NEW_OFFER = ("aws", "US-East-1", "g6e.48xlarge", Pricing.SPOT)


def _runs_since(store: PriceStore, rng: random.Random, moments: list[datetime], offers: list[tuple]) -> None:
    """A run per provider at each moment, every one of `offers` observed (prices, currency, unit,
    GPU model and availability drawn as in `_rounds`)."""
    for at in moments:
        for provider in ("aws", "azure"):
            quotes = [
                make_quote(provider=p, region=r, sku=s, pricing=k, observed_at=at,
                           price=rng.choice([rng.lognormvariate(1, 2), 7.5, 123456789.125]),
                           currency=rng.choice(["USD", "USD", "CNY", "INR"]), unit=rng.choice(list(Unit)[:2]),
                           gpu_model=rng.choice(["A100", "H100", "L4"]), availability=rng.choice(list(Availability)))
                for p, r, s, k in offers if p == provider
            ]  # fmt: skip
            if quotes:
                store.record_run(make_run(provider, quotes, finished_at=at))


def _edge_questions(moments: list[datetime], rng: random.Random) -> list[HistoryQuery]:
    """Named offers' questions whose window starts or ends exactly at a point, on either side of the
    compaction (since is inclusive, until exclusive), plus each offer's whole history."""
    questions = []
    for p, r, s, k in [*OFFERS, NEW_OFFER]:
        named = OfferFilter(providers=(p,), regions=(r.lower(),), skus=(s,), pricings=(k.value,),
                            gpus=rng.choice([(), ("A100",), ("H100", "L4")]),
                            include_unavailable=rng.random() < 0.7)  # fmt: skip
        for since, until in itertools.pairwise(moments):
            questions.append(HistoryQuery(utc_naive(since), utc_naive(until), named))
        questions.append(HistoryQuery(utc_naive(moments[0]), utc_naive(moments[-1] + timedelta(days=1)), named))
        questions.append(HistoryQuery(utc_naive(NOW - timedelta(days=400)), utc_naive(NOW), named))
    several = OfferFilter(providers=("aws",), regions=("us-east-1",), skus=(OFFERS[0][2], NEW_OFFER[2]),
                          pricings=("on_demand", "spot"))  # fmt: skip
    for limit, offset in ((1, 0), (1, 1), (2, 1), (5, 0)):
        questions.append(HistoryQuery(utc_naive(NOW - timedelta(days=400)), utc_naive(NOW), several, limit, offset))
    return questions


def test_an_offer_new_or_withdrawn_since_the_compaction_and_windows_at_its_edges(
    compacted: tuple[AppState, list[HistoryQuery]],
) -> None:
    """Several runs since the compaction, one listing an offer never seen before and none listing
    the last one (withdrawn); a run observed at the very moment of a compacted point (the later id
    comes second); windows starting or ending at a point on either side: the reference's bytes."""
    state, questions = compacted
    rng = random.Random(41)
    cur = state.store.cursor()
    (last,) = cur.execute("SELECT max(observed_at) FROM history_points").fetchone()
    moments = [last, last + timedelta(hours=3), last + timedelta(hours=5, microseconds=7), NOW - timedelta(hours=1)]
    _runs_since(state.store, rng, moments[:1], OFFERS[:-1])  # the same moment as compacted points
    _layout(state)
    for at in moments[1:]:  # each run read on top of what is held: a new offer, then its next points
        _runs_since(state.store, rng, [at], [*OFFERS[:-1], NEW_OFFER])
        _layout(state)
    edges = _edge_questions(moments, rng)
    assert _named_from_files(state, [*questions, *edges], clear=False) > 40
    assert _named_from_files(state, [*questions, *edges])
    p, r, s, k = NEW_OFFER
    whole = OfferFilter(providers=(p,), regions=(r,), skus=(s,), pricings=(k.value,))
    (new,) = history(cur, HistoryQuery(utc_naive(moments[0]), utc_naive(NOW), whole), laid_out=False).series
    assert len(new.points) == 3
    assert history_from_files(HistoryQuery(utc_naive(moments[0]), utc_naive(NOW), whole), *_layout(state))


def test_a_tail_over_its_bound_is_read_from_duckdb(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    """GPUPRICE_HISTORY_RECENT_MB: observations since the compaction that would take more are not
    held, and the answers are DuckDB's; so are they when the files are missing."""
    state, questions = compacted
    _rounds(state.store, random.Random(3), NOW - timedelta(days=3), 2)
    state.settings = state.settings.model_copy(update={"history_recent_mb": 0.0})
    assert _check(state, questions).from_files == 0
    assert _layout(state)[1:] == (_layout(state)[1], None)
    state.settings = state.settings.model_copy(update={"history_recent_mb": 1.0})
    assert _named_from_files(state, questions) > 15
    for path in files_folder(state.store.path).iterdir():
        path.unlink()
    assert _check(state, questions).from_files == 0


def _one(folder: Path, prefix: str) -> Path:
    (path,) = folder.glob(f"{prefix}-*")
    return path


def test_corrupt_records_fall_back_to_duckdb(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    state, questions = compacted
    points = _one(files_folder(state.store.path), "points")
    data = bytearray(points.read_bytes())
    for at in range(RECORD.itemsize // 2, len(data), RECORD.itemsize):  # a byte of every record
        data[at] ^= 0x40
    points.write_bytes(bytes(data))
    assert _check(state, questions).from_files == 0


@pytest.mark.parametrize("damage", ["no folder", "no manifest", "short points", "bad index", "other layout", "junk"])
def test_missing_or_partial_files_fall_back_to_duckdb(
    compacted: tuple[AppState, list[HistoryQuery]], damage: str
) -> None:
    state, questions = compacted
    folder = files_folder(state.store.path)
    manifest = _one(folder, "history")
    if damage == "no folder":
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    elif damage == "no manifest":  # the writer stopped before its last rename
        manifest.rename(manifest.with_name(manifest.name + ".partial"))
    elif damage == "short points":
        points = _one(folder, "points")
        points.write_bytes(points.read_bytes()[: -RECORD.itemsize])
    elif damage == "bad index":
        _one(folder, "series").write_bytes(b"\x93NUMPY not an array")
    elif damage == "other layout":
        text = json.loads(manifest.read_bytes())
        manifest.write_text(json.dumps({**text, "points": text["points"] + 1}))
    else:
        manifest.write_bytes(b"{not json")
    assert _check(state, questions).from_files == 0


def test_a_layout_holding_a_non_finite_number_writes_no_files(
    compacted: tuple[AppState, list[HistoryQuery]],
) -> None:
    """NaN is how the files keep NULL, so a layout holding one (or an infinity) is read from DuckDB."""
    state, questions = compacted
    cur = state.store.cursor()
    for table in ("observations", "history_points"):
        cur.execute(f"UPDATE {table} SET cny_per_hour = 'inf' WHERE observation_id = (SELECT min(observation_id) "
                    "FROM history_points)")  # fmt: skip
    assert write_point_files(cur, state.store.path) is None
    assert not list(files_folder(state.store.path).iterdir())
    assert _check(state, questions).from_files == 0


def test_files_written_after_a_question_are_found(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question between the compaction's commit and its files' writing reads DuckDB; once written,
    the files are looked for again (after FILES_RETRY_S) at the same data version."""
    state, questions = compacted
    folder = files_folder(state.store.path)
    saved = {path: path.read_bytes() for path in folder.iterdir()}
    for path in saved:
        path.unlink()
    _layout_cache_cleared()
    assert _layout(state)[1] is None
    for path, data in saved.items():
        path.write_bytes(data)
    monkeypatch.setattr(api_history, "FILES_RETRY_S", 0.0)
    assert _layout(state)[1] is not None
    assert _named_from_files(state, questions) > 15


def _urls(rng: random.Random) -> list[str]:
    """Named offers' questions as a user asks them, windows in whole seconds and days."""
    urls = []
    for p, r, s, k in OFFERS * 3:
        since = NOW - timedelta(days=rng.randint(100, 210), seconds=rng.randrange(86_400))
        until = since + timedelta(days=rng.randint(1, 150))
        query = {"provider": p, "region": rng.choice([r, r.upper()]), "sku": s, "pricing": k.value,
                 "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"), "until": until.date().isoformat()}  # fmt: skip
        if rng.random() < 0.3:
            query["gpu"] = rng.choice(["A100", "H100", "A100,L4"])
        if rng.random() < 0.3:
            query["include_unavailable"] = "false"
        urls.append("/offers/history?" + urlencode(query))
    return urls


def counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str, *also: str) -> list[bool]:
    """Whether each call of `module.name` (also where `also` imported it) answered, in order."""
    answered: list[bool] = []
    answer = getattr(module, name)

    def counted(*args: object) -> bytes | None:
        body = answer(*args)
        answered.append(body is not None)
        return body

    monkeypatch.setattr(module, name, counted)
    for where in also:
        monkeypatch.setattr(where, counted)
    return answered


def counting_at_once(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each history request was answered at once on the event loop (before routing, api.front,
    or by the route), in order: each request asks once."""
    return counting(monkeypatch, api_history, "history_answer_at_once", "api.routes.offers.history_answer_at_once")


@pytest.mark.parametrize("runs_since", [False, True])
def test_small_answers_written_on_the_loop_are_the_same_bytes(
    compacted: tuple[AppState, list[HistoryQuery]],
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    runs_since: bool,
) -> None:
    """Over HTTP, right after the compaction and with runs landed since: answered at once on the
    event loop (small, cached records), in the heavy answers' thread from the files (AT_ONCE_POINTS
    exceeded, or the page cache may not be asked), and by DuckDB (no files): the same bytes, which
    are the plain reference's."""
    state, _ = compacted
    if runs_since:
        moments = [NOW - timedelta(days=d, hours=h) for d in (120, 60, 1) for h in (0, 7)]
        _runs_since(state.store, random.Random(2), moments, [*OFFERS[:-1], NEW_OFFER])
    urls = _urls(random.Random(5))
    at_once = counting_at_once(monkeypatch)
    with serving(settings, state.store, NOW) as client:
        first = [client.get(url) for url in urls]
        assert [r.status_code for r in first] == [200] * len(urls), [r.text for r in first if r.status_code != 200]
        assert sum(at_once) > len(urls) // 2  # every one after the layout was read, unless empty
        with monkeypatch.context() as patch:
            patch.setattr(api_history, "AT_ONCE_POINTS", -1)
            assert [client.get(url).content for url in urls] == [r.content for r in first]
        with monkeypatch.context() as patch:
            patch.setattr("pricedb.history_files.NOWAIT", None)
            assert [client.get(url).content for url in urls] == [r.content for r in first]
        folder = files_folder(state.store.path)
        for path in folder.iterdir():
            path.unlink()
        _layout_cache_cleared()
        assert [client.get(url).content for url in urls] == [r.content for r in first]
        assert at_once[-len(urls) :] == [False] * len(urls)
    plain = [
        _reference_body(q, history(state.store.cursor(), q, laid_out=False))
        for q in (history_query(state, HistoryParams.model_validate(dict(parse_qsl(urlsplit(u).query)))) for u in urls)
    ]
    assert [r.content for r in first] == plain


def test_files_over_their_bound_are_not_kept(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    """GPUPRICE_HISTORY_FILES_MB: a layout whose records need more keeps no file (the last compaction's
    go too), and every answer is read from DuckDB."""
    state, questions = compacted
    folder = files_folder(state.store.path)
    records = _one(folder, "points").stat().st_size
    state.store.settings = state.store.settings.model_copy(update={"history_files_mb": (records - 1) / 1024 / 1024})
    state.store.compact_history()
    assert not list(folder.iterdir())
    assert _check(state, questions).from_files == 0
    state.store.settings = state.store.settings.model_copy(update={"history_files_mb": records / 1024 / 1024})
    state.store.compact_history()
    assert _named_from_files(state, questions) > 15


def test_the_warm_up_reads_a_landed_run_so_the_first_question_does_not(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When a run lands, the market's warm-up (api.web.warm.keep_warm, in its worker thread) also reads
    the new data version's layout and the observations since the compaction (the first run: read
    whole; the next: extended); the history questions after it read nothing and answer as before."""
    compacted_state, questions = compacted
    state = AppState(compacted_state.store, compacted_state.settings, clock=lambda: utc_naive(NOW))  # as the app's
    reads: list[str] = []
    for name in ("read_layout", "read_recent", "extend_recent"):
        original = getattr(api_history, name)
        monkeypatch.setattr(api_history, name, lambda *a, _f=original, _n=name, **k: reads.append(_n) or _f(*a, **k))
    _layout_cache_cleared()

    async def warmed_after_a_run(seed: int, at: datetime) -> None:
        _runs_since(state.store, random.Random(seed), [at], OFFERS)
        task = asyncio.create_task(keep_warm(state, every_s=0.01))
        try:
            for _ in range(1000):  # until the warm-up holds this data version's layout
                with api_history._layouts_lock:
                    held = api_history._layouts.get(state.store)
                if held is not None and held.version == state.store.version:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError("history not read ahead within 10 s")
        finally:
            task.cancel()

    end = NOW - timedelta(days=5)
    for landed, read in ((1, ["read_layout", "read_recent"]), (2, ["read_layout", "extend_recent"])):
        asyncio.run(warmed_after_a_run(landed, end + timedelta(hours=landed)))
        assert reads == read
        reads.clear()
        assert _named_from_files(state, questions, clear=False) > 15
        assert reads == []  # every question found them held


def _mangled(rng: random.Random, url: str) -> str:
    """`url` as a user might also send it: refused, repeated, unknown or odd parameters, or not naming
    its offer whole (the route answers those: off the loop, or a 422)."""
    path, _, query = url.partition("?")
    parts = query.split("&")
    change = rng.choice((
        "limit=0", "limit=abc", "limit=2", "offset=1", "offset=-1", "since=yesterday", "until=2001-01-01",
        "include_stale=true", "unknown=1", "pricing=bogus", "gpu=NOPE", "provider=aws", "region=", "sku=",
        "include_unavailable=maybe", "since=", "gpu=A100&gpu=L4",
    ))  # fmt: skip
    if rng.random() < 0.3:
        parts = [p for p in parts if not p.startswith(change.split("=")[0] + "=")]
    return f"{path}?{'&'.join(rng.sample([*parts, change], len(parts) + 1))}"


@pytest.mark.parametrize("runs_since", [False, True])
def test_the_front_answers_history_as_the_app_does(
    compacted: tuple[AppState, list[HistoryQuery]], settings: Settings, monkeypatch: pytest.MonkeyPatch,
    runs_since: bool,
) -> None:  # fmt: skip
    """api.front answers a named offer's history before routing when it is at hand: the whole response
    (status, every header, body; HEAD too; compressed as each Accept-Encoding asks, api.json_encoding)
    and the request timings in `/metrics` are those of the same app entered below the front, on valid,
    odd and refused questions, and on questions too broad for GPUPRICE_API_MAX_POINTS (the route's
    422), and on answers too long to write at once (the route's, written off the loop)."""
    from fastapi import FastAPI

    from api import front as api_front
    from api.app import create_app
    from tests.api.test_front import call, requests_timed

    state, _ = compacted
    if runs_since:
        moments = [NOW - timedelta(days=d, hours=h) for d in (120, 60, 1) for h in (0, 7)]
        _runs_since(state.store, random.Random(3), moments, [*OFFERS[:-1], NEW_OFFER])
    fronted = counting(monkeypatch, api_front, "history_in_front")
    monkeypatch.setattr(api_history, "AT_ONCE_POINTS", api_history.AT_ONCE_POINTS)  # set per request below
    monkeypatch.setattr("api.json_encoding.COMPRESS_FROM_BYTES", 260)  # this data's answers: some over, some under
    encodings = [(), ((b"accept-encoding", b"gzip, deflate, br, zstd"),), ((b"Accept-Encoding", b"gzip;q=0.5, br"),),
                 ((b"accept-encoding", b"identity"),)]  # fmt: skip
    compressed: list[bool] = []
    rng = random.Random(14 + runs_since)
    limited = settings.model_copy(update={"api_max_points": 12})
    front, below = (create_app(limited, store=state.store, schedule=False) for _ in range(2))

    async def run() -> tuple[int, int]:
        async with front.router.lifespan_context(front), below.router.lifespan_context(below):
            for app in (front, below):
                app.state.gpuprice.clock = lambda: utc_naive(NOW)
            urls = _urls(rng)
            for first in (front, below):  # the route reads the layout (shared by the store's apps)
                await call(first, "GET", urls[0])
            statuses = []
            for url in urls * 4:
                target = _mangled(rng, url) if rng.random() < 0.4 else url
                method = "HEAD" if rng.random() < 0.15 else "GET"
                api_history.AT_ONCE_POINTS = 0 if rng.random() < 0.2 else 6_000  # 0: off the loop, after the front
                headers = rng.choice(encodings)
                answered = await call(front, method, target, headers)
                assert answered == await call(lambda *a: FastAPI.__call__(below, *a), method, target, headers), target
                statuses.append(answered[0])
                compressed.append(any(name == b"content-encoding" for name, _ in answered[1]))
            return statuses.count(200), statuses.count(422)

    ok, refused = asyncio.run(run())
    assert sum(fronted) > 20 and ok > sum(fronted) and refused > 10  # each kind of answer was compared
    assert sum(compressed) > 5
    timed = [requests_timed(app) for app in (front, below)]
    assert timed[0] == timed[1] and len(timed[0]) >= 2


def test_a_question_reading_the_held_runs_itself_lifts_the_databases_memory_limit(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the runs held since the compaction needs more than serving's share of the memory budget
    at 50,000 offers (56-64 MB a day against 48), so a history question that reads them before the
    warm-up does, read whole or extended, does it with DuckDB's limit lifted, and the limit is back after."""
    state, questions = compacted

    def limit() -> str:
        return state.store.conn.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    bounded, seen = limit(), []
    for name in ("read_recent", "extend_recent"):
        original = getattr(api_history, name)
        monkeypatch.setattr(
            api_history, name, lambda *a, _f=original, _n=name, **k: seen.append((_n, limit())) or _f(*a, **k)
        )
    end = NOW - timedelta(days=5)
    for seed in range(2):  # the first run's observations read whole, the second's added to them
        end = _rounds(state.store, random.Random(seed), end, 1)
        assert _named_from_files(state, questions, clear=seed == 0) > 15
    assert [name for name, _ in seen] == ["read_recent", "extend_recent"]
    assert all(lifted != bounded for _, lifted in seen) and limit() == bounded
