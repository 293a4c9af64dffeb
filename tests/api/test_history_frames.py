"""Each series' points compressed once per compaction (api.history_frames) and spliced into the
answers of clients taking zstd (api.zstd_splice): decoded, every answer is the plain reference's, byte
for byte, over random offers, windows, filters and pages, with runs landed since the compaction or
not; a compaction replaces them whole; frames missing, partial or damaged are not used."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import pytest
import zstandard

from api import history as api_history
from api import history_records
from api.digests import run_compaction_job
from api.history import _layout, history_answer_at_once, warm_history
from api.history_frames import SeriesFrames, write_history_frames
from api.state import AppState
from pricedb.history import HistoryQuery
from pricedb.history_files import PointFiles, files_folder
from pricedb.offer_filter import OfferFilter
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.api import test_history_files
from tests.api.test_history_fast import OFFERS
from tests.api.test_history_files import NEW_OFFER, _layout_cache_cleared, _observed, _reference, _runs_since, counting
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

_compacted_once, compacted = test_history_files._compacted_once, test_history_files.compacted  # its fixtures

ZSTD_CLIENT = "gzip, deflate, br, zstd"


@pytest.fixture(autouse=True)
def _small_answers_compressed(monkeypatch: pytest.MonkeyPatch) -> None:
    """This data's series hold a few KB of points: compressed from 300 bytes, as big answers are."""
    monkeypatch.setattr("api.json_encoding.COMPRESS_FROM_BYTES", 300)


COMPACTED_FROM = NOW - timedelta(days=200)  # the compacted observations' first day, ~25 days of them (_rounds)


def _questions(rng: random.Random) -> list[HistoryQuery]:
    """Named offers' questions, most around a series' whole history, some cutting it, some filtering
    its points, some paging through several offers."""
    questions = []
    for p, r, s, k in [*OFFERS, NEW_OFFER] * 6:
        since = (
            NOW - timedelta(days=400) if rng.random() < 0.5 else COMPACTED_FROM + timedelta(days=rng.uniform(-3, 20))
        )
        until = NOW + timedelta(days=1) if rng.random() < 0.6 else since + timedelta(days=rng.uniform(3, 30))
        named = OfferFilter(providers=(p,), regions=(rng.choice([r, r.upper(), r.lower()]),), skus=(s,),
                            pricings=(k.value,), gpus=rng.choice([(), (), (), ("A100", "H100", "L4"), ("A100",)]),
                            include_unavailable=rng.random() < 0.9,
                            include_interruptible=rng.random() < 0.9)  # fmt: skip
        questions.append(HistoryQuery(utc_naive(since), utc_naive(until), named))
    several = OfferFilter(providers=("aws", "azure"), regions=("us-east-1", "eastus", "eu-west-1"),
                          skus=tuple(sorted({o[2] for o in OFFERS})), pricings=("on_demand", "spot"))  # fmt: skip
    for offset in range(6):
        questions.append(HistoryQuery(utc_naive(NOW - timedelta(days=400)), utc_naive(NOW), several, 1, offset))
    questions.append(HistoryQuery(utc_naive(NOW - timedelta(days=400)), utc_naive(NOW), several, 3, 1))
    return questions


class Ways(NamedTuple):
    spliced: int  # answers sent as a spliced frame (a series' whole compacted history)
    cut: int  # answers whose compacted points were cut out of a frame decompressed


def _answers(state: AppState, questions: list[HistoryQuery], monkeypatch: pytest.MonkeyPatch) -> Ways:
    """Each question asked at once as a client taking zstd would: decoded, the plain reference's
    bytes; how many went each way that reads the frames."""
    spliced = counting(monkeypatch, api_history, "_framed_body")
    cut = counting(monkeypatch, history_records, "_cut")
    _layout(state)
    observed = _observed(state)
    with monkeypatch.context() as patch:
        patch.setattr(api_history, "history_query", lambda _, query: query)  # asked as parsed
        for query in questions:
            encoded = history_answer_at_once(state, query, ZSTD_CLIENT)  # type: ignore[arg-type]
            assert encoded is not None, query
            body = encoded.body if encoded.encoding is None else zstandard.ZstdDecompressor().decompress(encoded.body)
            assert body == _reference(state, query, observed).body, query
    return Ways(len(spliced), sum(cut))


def _some_spliced(state: AppState, questions: list[HistoryQuery], monkeypatch: pytest.MonkeyPatch) -> None:
    """`_answers`, asserting that some went as a spliced frame (this data's points change currency and
    unit at random: few windows cut out of a frame, test_windows_cut_out_of_a_frame_are_the_reference's do)."""
    ways = _answers(state, questions, monkeypatch)
    assert ways.spliced >= 5, ways


@pytest.mark.parametrize("runs_since", [False, True])
def test_frames_answer_as_the_reference(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch, runs_since: bool
) -> None:
    state, _ = compacted
    questions = _questions(random.Random(11 + runs_since))
    assert _answers(state, questions, monkeypatch) == (0, 0)  # no frames written yet
    assert write_history_frames(state.store)
    assert sorted(p.name.split("-")[0] for p in files_folder(state.store.path).iterdir()) == [
        "frames", "frames", "history", "points", "series",
    ]  # fmt: skip
    if runs_since:
        moments = [NOW - timedelta(days=d, hours=h) for d in (3, 2, 1) for h in (0, 7)]
        _runs_since(state.store, random.Random(4), moments, [*OFFERS[:-1], NEW_OFFER])
    _layout_cache_cleared()
    _some_spliced(state, questions, monkeypatch)


def test_frames_over_http_and_only_to_clients_taking_zstd(
    compacted: tuple[AppState, list[HistoryQuery]], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    state, _ = compacted
    assert write_history_frames(state.store)
    spliced = counting(monkeypatch, api_history, "_framed_body")
    p, r, s, k = OFFERS[0]
    url = f"/offers/history?provider={p}&region={r}&sku={s}&pricing={k.value}&since=2000-01-01"
    with serving(settings, state.store, NOW) as client:
        plain = client.get(url, headers={"accept-encoding": "identity"})
        client.get(url)  # the route reads the layout and its frames; then the front answers
        zstd = client.get(url, headers={"accept-encoding": ZSTD_CLIENT})
        brotli = client.get(url, headers={"accept-encoding": "br"})
    assert (zstd.headers["content-encoding"], brotli.headers["content-encoding"]) == ("zstd", "br")
    assert zstd.content == brotli.content == plain.content and len(spliced) == 2


def test_a_compaction_replaces_the_frames_whole(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next compaction's files go without the last one's frames (a reader holding them keeps
    reading them); its job writes its own; the warm-up writes frames for files found without."""
    state, _ = compacted
    folder = files_folder(state.store.path)
    assert write_history_frames(state.store)
    _layout(state)
    held = api_history._held_with_files(state)
    assert held is not None and held.frames is not None and held.files is not None
    before = held.frames.blocks(1)
    _runs_since(state.store, random.Random(7), [NOW - timedelta(days=2)], OFFERS)
    state.store.compact_history()
    assert not list(folder.glob("frames-*"))
    assert held.frames.blocks(1) == before is not None  # still read from the file it opened
    asyncio.run(run_compaction_job(state.store, state.settings))
    (index,) = folder.glob("frames-*.npy")
    (manifest,) = folder.glob("history-*.json")
    assert index.name.removeprefix("frames-").removesuffix(".npy") == manifest.stem.removeprefix("history-")
    questions = _questions(random.Random(3))
    _some_spliced(state, questions, monkeypatch)
    for path in folder.glob("frames-*"):
        path.unlink()
    _layout_cache_cleared()
    warm_history(state)
    assert len(list(folder.glob("frames-*"))) == 2
    _some_spliced(state, questions, monkeypatch)


def _frames_path(folder: Path, suffix: str) -> Path:
    (path,) = folder.glob(f"frames-*.{suffix}")
    return path


@pytest.mark.parametrize("damage", ["no index", "short blocks", "bad index", "flipped byte", "other files"])
def test_damaged_frames_are_not_used(
    compacted: tuple[AppState, list[HistoryQuery]], monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    state, _ = compacted
    assert write_history_frames(state.store)
    folder = files_folder(state.store.path)
    blocks, index = _frames_path(folder, "bin"), _frames_path(folder, "npy")
    if damage == "no index":  # the writer stopped before its last rename
        index.unlink()
    elif damage == "short blocks":
        blocks.write_bytes(blocks.read_bytes()[:-1])
    elif damage == "bad index":
        index.write_bytes(b"\x93NUMPY not an array")
    elif damage == "flipped byte":  # every series' blocks fail their check
        data = bytearray(blocks.read_bytes())
        for at in range(0, len(data), 64):
            data[at] ^= 0x20
        blocks.write_bytes(bytes(data))
    else:  # another compaction's frames under this one's name
        index.rename(folder / "frames-other.npy")
        blocks.rename(folder / "frames-other.bin")
    _layout_cache_cleared()
    assert _answers(state, _questions(random.Random(5)), monkeypatch) == (0, 0)


def test_frames_over_the_files_bound_are_not_written(compacted: tuple[AppState, list[HistoryQuery]]) -> None:
    """GPUPRICE_HISTORY_FILES_MB bounds the records and the frames together: frames that do not fit
    beside the records are not written (the records are kept)."""
    state, _ = compacted
    folder = files_folder(state.store.path)
    records = next(folder.glob("points-*")).stat().st_size
    state.store.settings = state.store.settings.model_copy(update={"history_files_mb": (records + 100) / 1024 / 1024})
    assert not write_history_frames(state.store)
    assert not list(folder.glob("frames-*")) and len(list(folder.iterdir())) == 3
    state.store.settings = state.store.settings.model_copy(update={"history_files_mb": 2048.0})
    assert write_history_frames(state.store)
    layout = api_history.read_layout(state.store.cursor())
    files = PointFiles.open(state.store.path, layout.compacted_upto, len(layout.keys) - 1, layout.laid_out_points)
    assert files is not None and SeriesFrames.open(state.store.path, files) is not None


def _steady_rounds(store: PriceStore, rng: random.Random, start: datetime, count: int) -> list[datetime]:
    """`count` runs of OFFERS' aws and azure offers, each in its one currency and unit (as providers
    publish them), prices changing now and then, some observed twice within one second; the moments."""
    moments, at = [], start
    for _ in range(count):
        at += timedelta(hours=rng.uniform(0.0002, 30), microseconds=rng.randrange(1_000_000))
        moments.append(at)
        for provider in ("aws", "azure"):
            quotes = [
                make_quote(provider=p, region=r, sku=s, pricing=k, observed_at=at, price=rng.choice([2.5, 3.75, 4.0]),
                           currency="USD" if p == "aws" else "CNY")
                for p, r, s, k in OFFERS if p == provider and rng.random() < 0.9
            ]  # fmt: skip
            store.record_run(make_run(provider, quotes, finished_at=at))
    return moments


def test_windows_cut_out_of_a_frame_are_the_reference(
    settings: Settings, store: PriceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows starting and ending anywhere (on a point's second, inside a second points share, between
    two) cut their points out of the frame's, or leave them to be written, and answer as the reference."""
    rng = random.Random(8)
    seed_fx(store, NOW - timedelta(days=90))
    moments = _steady_rounds(store, rng, NOW - timedelta(days=90), 80)
    store.compact_history()
    _steady_rounds(store, rng, moments[-1], 3)  # a tail since the compaction
    state = AppState(store, settings, clock=lambda: NOW)
    assert write_history_frames(store)
    questions = []
    for p, r, s, k in OFFERS[:3] * 8:
        edges = sorted(  # most as people ask, in whole seconds
            rng.choice(moments).replace(microsecond=0) + timedelta(microseconds=rng.choice([0, 0, 0, 1, -1, 500_000]))
            for _ in range(2)
        )
        if rng.random() < 0.3:
            edges[1] = NOW + timedelta(days=1)
        named = OfferFilter(providers=(p,), regions=(r,), skus=(s,), pricings=(k.value,))
        questions.append(HistoryQuery(utc_naive(edges[0]), utc_naive(edges[1] + timedelta(microseconds=1)), named))
    ways = _answers(state, questions, monkeypatch)
    assert ways.cut > len(questions) // 3
