"""One offer's history read from the compacted history's files (pricedb.history_files,
api.history_records) is the plain reference's answer byte for byte, and files that are missing,
partial, corrupt, from another compaction or never written leave the answer unchanged (DuckDB
answers it)."""

from __future__ import annotations

import json
import random
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from api import history as api_history
from api.history import _history_body, _layout, history_query
from api.history_records import history_from_files
from api.query import HistoryParams
from api.state import AppState
from pricedb.history import HistoryQuery, history
from pricedb.history_files import RECORD, files_folder, write_point_files
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.api.test_history_fast import OFFERS, _questions, _reference_body, _rounds
from tests.helpers import NOW, serving


def _check(state: AppState, questions: list[HistoryQuery]) -> int:
    """Every answer is the reference's; returns how many of those holding points came from the files."""
    _layout_cache_cleared()
    from_files = 0
    for query in questions:
        plain = history(state.store.cursor(), query, laid_out=False)
        assert _history_body(state, query) == _reference_body(query, plain), query
        from_files += plain.points > 0 and history_from_files(query, *_layout(state)) is not None
    return from_files


def _with_points(state: AppState, questions: list[HistoryQuery]) -> int:
    """How many questions name their offers and hold points."""
    named = [q for q in questions if q.offers.providers and q.offers.regions and q.offers.skus and q.offers.pricings]
    return sum(history(state.store.cursor(), q, laid_out=False).points > 0 for q in named)


def _layout_cache_cleared() -> None:
    with api_history._layouts_lock:
        api_history._layouts.clear()


@pytest.fixture
def compacted(settings: Settings, store: PriceStore) -> tuple[AppState, list[HistoryQuery]]:
    rng = random.Random(1414)
    state = AppState(store, settings, clock=lambda: NOW)
    start = NOW - timedelta(days=200)
    end = _rounds(store, rng, start, 30)
    store.compact_history()
    questions = [q for _ in range(4) for q in _questions(rng, start, end)]
    return state, questions


def test_files_answer_named_offers_after_a_compaction(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    state, questions = compacted
    assert _check(state, questions) == _with_points(state, questions) > 30
    folder = files_folder(state.store.path)
    assert sorted(p.name.split("-")[0] for p in folder.iterdir()) == ["history", "points", "series"]


def test_observations_since_the_compaction_are_read_from_duckdb(
    compacted: tuple[AppState, list[HistoryQuery]],
) -> None:
    state, questions = compacted
    end = _rounds(state.store, random.Random(7), NOW - timedelta(days=5), 3)
    assert end > NOW - timedelta(days=5)
    assert _check(state, questions) == 0
    state.store.compact_history()  # a second compaction: its files replace the first's
    assert _check(state, questions) == _with_points(state, questions) > 30
    assert len(list(files_folder(state.store.path).iterdir())) == 3


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
    assert _check(state, questions) == 0


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
    assert _check(state, questions) == 0


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
    assert _check(state, questions) == 0


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
    assert _check(state, questions) == _with_points(state, questions) > 30


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


def test_small_answers_written_on_the_loop_are_the_same_bytes(
    compacted: tuple[AppState, list[HistoryQuery]], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over HTTP: answered at once on the event loop (small, cached records), in the heavy answers'
    thread from the files (AT_ONCE_POINTS exceeded, or the page cache may not be asked), and by DuckDB
    (no files): the same bytes, which are the plain reference's."""
    state, _ = compacted
    urls = _urls(random.Random(5))
    at_once = []
    answer = api_history.history_answer_at_once

    def counted(*args: object) -> bytes | None:
        body = answer(*args)  # type: ignore[arg-type]
        at_once.append(body is not None)
        return body

    monkeypatch.setattr("api.routes.offers.history_answer_at_once", counted)
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
    assert _check(state, questions) == 0
    state.store.settings = state.store.settings.model_copy(update={"history_files_mb": records / 1024 / 1024})
    state.store.compact_history()
    assert _check(state, questions) == _with_points(state, questions) > 30
