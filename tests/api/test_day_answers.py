"""Answers about past days built ahead (api.day_answers) are the on-demand answers byte for byte, are
served without building anything, and stop being served when a run lands late for their day."""

from __future__ import annotations

import json
import random
import shutil
from datetime import date, datetime, timedelta

import pytest

import api.answers
import api.day_answers
import api.digests
import api.state
from api.answers import day_page, offers_answer
from api.day_answers import build_day_answers
from api.digests import digest_answer, digest_payload, past_digest_body
from api.query import DigestParams, OffersParams
from api.state import AppState, dumps
from pricedb.day_answers import DAY_PAGE, DIGEST, answers_folder, load_day_answer
from pricedb.digest import build_digest, day_window, record_delivery, store_digest
from pricedb.formats.digest_render import to_markdown
from pricedb.models import Pricing, RunStatus, Unit
from pricedb.settings import Settings
from pricedb.snapshot import end_of_day_utc, market_state
from pricedb.store import PriceStore, utc_naive
from tests.helpers import NOW, make_quote, make_run, seed_fx

OFFERS = [
    (provider, region, sku, pricing)
    for provider, region in (("aws", "us-east-1"), ("azure", "eastus"), ("lambda", "us-west-1"))
    for sku in ("a", "b", "c")
    for pricing in (Pricing.ON_DEMAND, Pricing.SPOT)
]
DAYS = 6  # twelve hit no other line or branch of the day answers' modules (coverage), at twice the time


def _runs(store: PriceStore, rng: random.Random, start: datetime, end: datetime) -> None:
    """Runs per provider at random moments between `start` and `end`: random subsets of its offers
    (withdrawn and new ones), price changes, failed runs, short staleness windows, FX on some days."""
    at = start
    while True:
        at += timedelta(hours=rng.uniform(2, 20), microseconds=rng.randrange(1_000_000))
        if at >= end:
            return
        if rng.random() < 0.5:
            seed_fx(store, at, cny=rng.choice([7.0, 7.123456789]))
        provider = rng.choice(["aws", "azure", "lambda"])
        if rng.random() < 0.15:
            store.record_run(make_run(provider, [], status=RunStatus.FAILED, finished_at=at, error="HTTP 503"))
            continue
        quotes = [
            make_quote(provider=p, region=r, sku=s, pricing=k, observed_at=at,
                       price=round(rng.choice([1.5, 2.25, rng.uniform(0.1, 40)]), rng.choice([2, 6])),
                       unit=rng.choice([Unit.HOUR, Unit.HOUR, Unit.MONTH]))
            for p, r, s, k in OFFERS
            if p == provider and rng.random() < 0.8
        ]  # fmt: skip
        covered = frozenset(Pricing)
        store.record_run(make_run(provider, quotes, finished_at=at, pricings=covered,
                                  stale_after_minutes=rng.choice([6 * 60, 48 * 60])))  # fmt: skip


def _bodies(state: AppState, days: list[date]) -> dict[tuple[str, date], bytes]:
    answers = {}
    for day in days:
        answers["offers", day] = offers_answer(state, OffersParams(date=day))
        for form in ("json", "md"):
            answers[form, day] = digest_answer(state, DigestParams(date=day, format=form))[0]
    return answers


def _refuse_building(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("built on demand, not read as kept")

    monkeypatch.setattr(api.answers, "snapshot_page", refuse)
    monkeypatch.setattr(api.digests, "build_digest", refuse)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai"])
def test_kept_day_answers_are_the_on_demand_bytes(
    store: PriceStore, settings: Settings, zone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings.model_copy(update={"digest_time_zone": zone})
    monkeypatch.setattr(api.day_answers, "BATCH_DAYS", 5)  # a few days' answers still fill batches
    rng = random.Random(zone)
    now = utc_naive(NOW)
    first = now - timedelta(days=DAYS)
    _runs(store, rng, first, now)
    days = [first.date() + timedelta(days=k) for k in range(DAYS)]
    on_demand = _bodies(AppState(store, settings, clock=lambda: now), days)

    built = build_day_answers(store, settings, now)
    over = [d for d in days if end_of_day_utc(d) <= now]
    over_local = [d for d in days if day_window(d, settings.digest_zone)[1] <= now]
    assert built == len(over) + len(over_local) > 2 * (DAYS - 3)
    assert build_day_answers(store, settings, now) == 0  # nothing changed: nothing built again
    with monkeypatch.context() as patched:
        _refuse_building(patched)
        kept = _bodies(AppState(store, settings, clock=lambda: now), over_local)
    assert kept == {key: body for key, body in on_demand.items() if key[1] in over_local}
    assert _bodies(AppState(store, settings, clock=lambda: now), days) == on_demand  # today's: built as before

    # Asked days later: the digest's built_at is the moment of asking, as when built on demand.
    later = now + timedelta(days=3)
    assert _bodies(AppState(store, settings, clock=lambda: later), days) == _plain(store, settings, later, days)

    # A run that lands late for a past day: the answers of that day and after are built again.
    late = days[4]
    late_at = datetime.combine(late, datetime.min.time()) + timedelta(hours=13)
    store.record_run(make_run("azure", [make_quote(provider="azure", region="eastus", sku="a", price=99.0,
                                                   observed_at=late_at)], finished_at=late_at))  # fmt: skip
    for day in over:
        stale = end_of_day_utc(day) > late_at
        assert (
            load_day_answer(store.cursor(), answers_folder(store.path), DAY_PAGE, day, "UTC", end_of_day_utc(day))
            is None
        ) == stale
    for day in over_local:
        end = day_window(day, settings.digest_zone)[1]
        assert (load_day_answer(store.cursor(), answers_folder(store.path), DIGEST, day, zone, end) is None) == (
            end > late_at
        )
    fresh = _plain(store, settings, now, days)
    assert fresh != on_demand
    assert _bodies(AppState(store, settings, clock=lambda: now), days) == fresh
    rebuilt = build_day_answers(store, settings, now)
    assert rebuilt == sum(end_of_day_utc(d) > late_at for d in over) + sum(
        day_window(d, settings.digest_zone)[1] > late_at for d in over_local
    )
    with monkeypatch.context() as patched:
        _refuse_building(patched)
        assert _bodies(AppState(store, settings, clock=lambda: now), over_local) == {
            key: body for key, body in fresh.items() if key[1] in over_local
        }
    # A copy of the database without its answers' folder (a replica, a backup) builds them on demand.
    folder = answers_folder(store.path)
    assert len(list(folder.iterdir())) == built
    shutil.rmtree(folder)
    assert _bodies(AppState(store, settings, clock=lambda: now), days) == fresh


def _plain(store: PriceStore, settings: Settings, now: datetime, days: list[date]) -> dict[tuple[str, date], bytes]:
    """The answers built on demand, with no kept answer to read (those kept are put back after)."""
    kept = store.cursor().execute("SELECT * FROM day_answers").fetchall()
    store.write([("DELETE FROM day_answers", [])])
    try:
        return _bodies(AppState(store, settings, clock=lambda: now), days)
    finally:
        store.write_with(lambda cur: cur.executemany("INSERT INTO day_answers VALUES (?, ?, ?, ?, ?, ?)", kept))


def test_kept_answers_take_at_most_their_bound_newest_days_first(store: PriceStore, settings: Settings) -> None:
    now = utc_naive(NOW)
    first = now - timedelta(days=DAYS)
    _runs(store, random.Random("bound"), first, now)
    days = [first.date() + timedelta(days=k) for k in range(DAYS)]
    unbounded = settings.model_copy(update={"digest_time_zone": "UTC"})
    version = store.version
    built = build_day_answers(store, unbounded, now)
    assert store.version == version  # keeping answers changes none: cached answers and offers stay
    folder = answers_folder(store.path)
    sizes = {
        (kind, day): (folder / name).stat().st_size
        for kind, day, name in store.cursor().execute("SELECT kind, day, file FROM day_answers").fetchall()
    }
    assert len(sizes) == built
    on_demand = _plain(store, unbounded, now, days)

    newest_first = sorted(sizes, key=lambda key: key[1], reverse=True)
    fit = 0
    while sum(sizes[key] for key in newest_first[: fit + 1]) <= sum(sizes.values()) // 2:
        fit += 1
    bound = sum(sizes[key] for key in newest_first[:fit])
    bounded = unbounded.model_copy(update={"day_answers_mb": (bound + 0.5) / (1024 * 1024)})
    assert build_day_answers(store, bounded, now) == 0  # what stays is not built again
    kept = {(kind, day) for kind, day in store.cursor().execute("SELECT kind, day FROM day_answers").fetchall()}
    on_disk = list(folder.iterdir())
    assert len(on_disk) == len(kept) and sum(path.stat().st_size for path in on_disk) <= bound
    oldest_kept = min(day for _, day in kept)
    assert all(day < oldest_kept or (kind, day) in kept for kind, day in sizes)  # the newest days stay
    assert 0 < len(kept) < len(sizes)
    # the days no longer kept are built on demand, the same bytes
    assert _bodies(AppState(store, bounded, clock=lambda: now), days) == on_demand

    nothing = unbounded.model_copy(update={"day_answers_mb": 0.0})
    assert build_day_answers(store, nothing, now) == 0
    assert not list(folder.iterdir()) and not store.cursor().execute("SELECT * FROM day_answers").fetchall()


def test_past_days_read_each_market_state_once_per_data_change_and_answer_as_built_plainly(
    store: PriceStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Questions about past days (pages, digests) share each cutoff's market state, read once while
    the data stands and again after a run lands; the answers are those built without it."""
    now = utc_naive(NOW)
    first = now - timedelta(days=7)
    _runs(store, random.Random("states"), first, now)
    days = [first.date() + timedelta(days=k) for k in range(3, 7)]  # a late run lands on the second
    zone = settings.digest_zone
    reads: list[datetime] = []

    def counted(cur: object, cutoff: datetime) -> object:
        reads.append(cutoff)
        return market_state(cur, cutoff)  # type: ignore[arg-type]

    monkeypatch.setattr(api.state, "market_state", counted)
    orders = (("cny_per_gb_hour", False, 0), ("provider", True, 2))
    questions = [
        OffersParams(date=day, sort=sort, desc=desc, limit=3, offset=offset)
        for day in days
        for sort, desc, offset in orders
    ]

    def plainly_answered(state: AppState) -> None:
        cur = store.cursor()
        payloads = {day: digest_payload(AppState(store, settings, clock=lambda: now), day) for day in days}
        reads.clear()
        for params in questions:
            assert offers_answer(state, params) == dumps(day_page(cur, params.date, now, params))
        for day in days:
            assert build_digest(cur, day, zone, now, state.market_states()) == build_digest(cur, day, zone, now)
            # a past day's markdown is written from its JSON answer: the same as from the payload
            assert digest_answer(state, DigestParams(date=day, format="json"))[0] == dumps(payloads[day])
            assert digest_answer(state, DigestParams(date=day, format="md"))[0] == to_markdown(payloads[day]).encode()

    state = AppState(store, settings, clock=lambda: now)
    plainly_answered(state)
    cutoffs = {end_of_day_utc(day) for day in days} | {edge for day in days for edge in day_window(day, zone)}
    assert sorted(reads) == sorted(cutoffs)  # each once
    late_at = datetime.combine(days[1], datetime.min.time()) + timedelta(hours=13)
    store.record_run(make_run("azure", [make_quote(provider="azure", region="eastus", sku="a", price=99.0,
                                                   observed_at=late_at)], finished_at=late_at))  # fmt: skip
    plainly_answered(state)
    assert sorted(reads) == sorted(cutoffs)


def test_a_stored_or_kept_digest_is_answered_around_its_json_as_the_parsed_digest_would_be(
    store: PriceStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A past day's digest JSON is its stored or kept JSON with the answer's members written around
    it, not parsed and written again (megabytes on a day of many changes): the same bytes as the
    parsed digest with those members set, text needing escapes and a delivery included."""
    now = utc_naive(NOW)
    first = now - timedelta(days=DAYS)
    _runs(store, random.Random("digest bytes"), first, now)
    odd_sku = '智星云 "A100" \\ 80G'
    for hours, price in ((30, 1.5), (54, 2.5)):
        at = first + timedelta(hours=hours)
        quote = make_quote(provider="vast", region="cn", sku=odd_sku, price=price, observed_at=at)
        store.record_run(make_run("vast", [quote], finished_at=at, pricings=frozenset(Pricing)))
    zone = settings.digest_zone
    over = [first.date() + timedelta(days=k) for k in range(1, DAYS - 1)]  # the first day is not kept
    stored_day = over[2]
    store_digest(store, build_digest(store.cursor(), stored_day, zone, now))
    record_delivery(store, stored_day, "webhook 1", now, None)
    built = build_day_answers(store, settings, now)
    assert built > 0
    state = AppState(store, settings, clock=lambda: now + timedelta(days=2))
    expected = {day: dumps(digest_payload(state, day)) for day in over}
    assert odd_sku.encode() not in expected[over[0]] and json.dumps(odd_sku, ensure_ascii=False).encode() in b"".join(
        expected.values()
    )
    with monkeypatch.context() as patched:
        patched.setattr(api.digests, "digest_payload", _refused)
        assert {day: past_digest_body(state, day) for day in over} == expected

    # A stored digest written another way (spaces after separators): parsed, as before.
    cur = store.cursor()
    spaced = json.dumps(json.loads(cur.execute("SELECT body FROM digests").fetchone()[0]))
    cur.execute("UPDATE digests SET body = ?", [spaced])
    assert past_digest_body(state, stored_day) == dumps(digest_payload(state, stored_day))


def _refused(*args: object) -> None:
    raise AssertionError("the digest was parsed and written again")
