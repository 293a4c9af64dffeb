"""The daily digest: exact changes, new and withdrawn offers; failed providers never withdraw;
stored vs built on demand; Markdown; the Atom feed checked against RFC 4287; the CLI; the job."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import xml.etree.ElementTree as ET
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient

from api.app import digest_jobs
from api.cli import main as cli
from api.digests import run_digest_job
from collectors.schedule import build_scheduler
from pricedb.digest import build_digest, day_window, load_digest
from pricedb.formats.digest_render import to_markdown
from pricedb.models import Pricing, RunStatus
from pricedb.settings import Settings
from pricedb.store import PriceStore, utc_naive
from tests.helpers import make_quote, make_run, seed_fx, serving

SHANGHAI = ZoneInfo("Asia/Shanghai")
ATOM = "{http://www.w3.org/2005/Atom}"


def at(day: int, hour: int = 4) -> datetime:
    """A moment on 2026-11-<day> (04:00 UTC = 12:00 in Shanghai, the middle of that Shanghai day)."""
    return datetime(2026, 11, day, hour, 0)


def q(sku: str, price: float, moment: datetime, provider: str = "aws", region: str = "us-east-1", **extra):
    memory = 80.0 if "de" in sku or provider == "azure" else 40.0
    return make_quote(provider=provider, region=region, sku=sku, price=price, observed_at=moment,
                      gpu_memory_gb=memory, **extra)  # fmt: skip


@pytest.fixture
def history(store: PriceStore) -> PriceStore:
    """Nov 26: aws p4d 20, p4de 27, spot 8; azure NC24 3.6 and ND96 30.
    Nov 27: aws p4d 21 (+5%), p4de gone, new p5-like p4d in us-west-2; spot unchanged; azure FAILED.
    Nov 28: nothing changes (aws runs again with the same prices); azure skipped.
    """
    for day in (26, 27, 28):
        seed_fx(store, at(day, 0))
    store.record_run(
        make_run(
            "aws",
            [
                q("p4d.24xlarge", 20.0, at(26)),
                q("p4de.24xlarge", 27.0, at(26)),
                q("p4d.24xlarge", 8.0, at(26), pricing=Pricing.SPOT),
            ],
            finished_at=at(26),
        )
    )
    store.record_run(
        make_run(
            "azure",
            [
                q("Standard_NC24ads_A100_v4", 3.6, at(26), "azure", "eastus", gpu_count=1),
                q("Standard_ND96amsr_A100_v4", 30.0, at(26), "azure", "eastus"),
            ],
            finished_at=at(26),
        )
    )
    day27 = [
        q("p4d.24xlarge", 21.0, at(27)),
        q("p4d.24xlarge", 21.0, at(27), region="us-west-2"),
        q("p4d.24xlarge", 8.0, at(27), pricing=Pricing.SPOT),
    ]
    store.record_run(make_run("aws", day27, finished_at=at(27)))
    store.record_run(
        make_run("azure", [], status=RunStatus.FAILED, error="HTTP 503 from prices.azure.com", finished_at=at(27))
    )
    day28 = [
        q("p4d.24xlarge", 21.0, at(28)),
        q("p4d.24xlarge", 21.0, at(28), region="us-west-2"),
        q("p4d.24xlarge", 8.0, at(28), pricing=Pricing.SPOT),
    ]
    store.record_run(make_run("aws", day28, finished_at=at(28)))
    store.record_run(make_run("azure", [], status=RunStatus.SKIPPED, error="no key", finished_at=at(28)))  # fmt: skip
    return store


def keys(rows) -> list[tuple[str, str, str, str]]:
    return [(r["provider"], r["region"], r["sku"], r["pricing"]) for r in rows]


def test_digest_lists_exactly_the_changes_new_and_withdrawn(history: PriceStore) -> None:
    digest = build_digest(history.cursor(), date(2026, 11, 27), SHANGHAI, at(29))
    assert digest["date"] == "2026-11-27" and digest["compared_to"] == "2026-11-26"
    assert digest["window"] == {"from": "2026-11-26T16:00:00Z", "to": "2026-11-27T16:00:00Z"}
    [change] = digest["changes"]
    assert (change["provider"], change["region"], change["sku"], change["pricing"]) == (
        "aws", "us-east-1", "p4d.24xlarge", "on_demand"
    )  # fmt: skip
    assert (change["old_price"], change["new_price"], change["change"], change["pct"]) == (20.0, 21.0, 1.0, 5.0)
    assert change["old_cny_per_gb_hour"] == pytest.approx(20 * 7 / 320)
    assert change["new_cny_per_gb_hour"] == pytest.approx(21 * 7 / 320)
    assert change["cny_per_gb_hour_pct"] == 5.0
    assert keys(digest["new"]) == [("aws", "us-west-2", "p4d.24xlarge", "on_demand")]
    assert keys(digest["withdrawn"]) == [("aws", "us-east-1", "p4de.24xlarge", "on_demand")]
    # azure failed that day: listed as failed, its offers are NOT withdrawn.
    [failed] = digest["failed_providers"]
    assert failed["provider"] == "azure" and failed["status"] == "failed" and failed["failed_runs"] == 1
    assert failed["error"] == "HTTP 503 from prices.azure.com" and failed["stale"]
    assert not any(row["provider"] == "azure" for row in digest["withdrawn"])
    assert not digest["unchanged"] and digest["summary"].startswith("1 price change, 1 new offer, 1 withdrawn offer")
    # Cheapest per memory size and pricing, among fresh offers (azure's are stale now).
    cheapest = {(r["gpu_memory_gb"], r["pricing"]): (r["provider"], r["region"]) for r in digest["cheapest"]}
    assert cheapest == {(40.0, "on_demand"): ("aws", "us-east-1"), (40.0, "spot"): ("aws", "us-east-1")}


def test_the_cheapest_rows_cover_every_card_and_keep_slices_apart(store: PriceStore) -> None:
    """An H100 gets its own row beside the A100s, and a MIG 4g.40gb slice of an A100 80GB, cheaper per GB
    than any whole A100 40GB, is its own row: never "the cheapest A100 40GB"."""
    seed_fx(store, at(27, 0))
    quotes = [
        q("p4d.24xlarge", 20.0, at(27)),  # 8×A100 40GB: ¥140/h over 320 GB
        make_quote(sku="p5.48xlarge", price=98.0, observed_at=at(27), gpu_model="H100", gpu_memory_gb=80.0),
        q("mig-4g", 0.5, at(27), gpu_count=1, gpu_fraction=4 / 7, gpu_partition="MIG 4g.40gb"),
    ]
    store.record_run(make_run("aws", quotes, finished_at=at(27)))
    digest = build_digest(store.cursor(), date(2026, 11, 27), SHANGHAI, at(28))
    rows = {(r["gpu_model"], r["gpu_memory_gb"], r["gpu_partition"]): r["sku"] for r in digest["cheapest"]}
    assert rows == {("A100", 40.0, None): "p4d.24xlarge", ("A100", 40.0, "MIG 4g.40gb"): "mig-4g",
                    ("H100", 80.0, None): "p5.48xlarge"}  # fmt: skip
    new = {r["sku"]: r["gpu_partition"] for r in digest["new"]}
    assert new == {"p4d.24xlarge": None, "p5.48xlarge": None, "mig-4g": "MIG 4g.40gb"}
    markdown = to_markdown(digest)
    assert "| A100 MIG 4g.40gb (40GB) | on_demand | aws |" in markdown and "| H100 80GB | on_demand |" in markdown


def test_a_quiet_day_says_so_and_a_skipped_provider_withdraws_nothing(history: PriceStore) -> None:
    digest = build_digest(history.cursor(), date(2026, 11, 28), SHANGHAI, at(29))
    assert digest["changes"] == [] and digest["new"] == [] and digest["withdrawn"] == []
    assert digest["unchanged"] and digest["summary"].startswith("No price changes, new or withdrawn offers")
    [azure] = digest["failed_providers"]
    assert azure["status"] == "skipped" and azure["failed_runs"] == 1
    first = build_digest(history.cursor(), date(2026, 11, 26), SHANGHAI, at(29))
    assert len(first["new"]) == 5 and first["changes"] == first["withdrawn"] == []


def test_day_windows_follow_the_time_zone() -> None:
    assert day_window(date(2026, 11, 27), SHANGHAI) == (datetime(2026, 11, 26, 16), datetime(2026, 11, 27, 16))
    assert day_window(date(2026, 11, 27), ZoneInfo("UTC")) == (datetime(2026, 11, 27), datetime(2026, 11, 28))


@pytest.fixture
def app_client(history: PriceStore, settings: Settings):
    with serving(settings, history, at(29)) as client:  # 12:00 in Shanghai on Nov 29: yesterday is Nov 28
        yield client


def test_digest_endpoint_builds_on_demand_then_serves_the_stored_one(app_client: TestClient, history) -> None:
    built = app_client.get("/digest?date=2026-11-27").json()
    assert built["stored"] is False and "built on demand" in built["note"]
    assert keys(built["withdrawn"]) == [("aws", "us-east-1", "p4de.24xlarge", "on_demand")]
    default = app_client.get("/digest").json()
    assert default["date"] == "2026-11-28" and default["unchanged"]
    # The daily job stores yesterday's digest; the cached on-demand answer gives way to it.
    stored = asyncio.run(run_digest_job(history, history.settings, clock=lambda: at(29)))
    assert stored is not None and stored["date"] == "2026-11-28" and stored["deliveries"] == []
    again = app_client.get("/digest").json()
    assert again["stored"] is True and "note" not in again and again["summary"] == default["summary"]
    assert load_digest(history.cursor(), date(2026, 11, 28))["date"] == "2026-11-28"
    today = app_client.get("/digest?date=2026-11-29").json()
    assert today["partial"] is True and "not over yet" in today["note"]
    md = app_client.get("/digest?date=2026-11-27&format=md")
    assert md.headers["content-type"].startswith("text/markdown")
    text = md.text
    assert text.startswith("# GPU price digest 2026-11-27 (Asia/Shanghai)")
    assert "| aws | us-east-1 | p4d.24xlarge | on_demand | 20 | 21 USD/hour | 1 | +5.00% |" in text
    assert "## Withdrawn offers" in text and "p4de.24xlarge" in text.split("## Withdrawn offers")[1]
    assert "**azure**: last run failed: HTTP 503 from prices.azure.com" in text


@pytest.mark.parametrize(
    ("url", "parameter", "message"),
    [
        ("/digest?date=2026-11-31", "date", "not a date"),
        ("/digest?date=2026-12-02", "date", "in the future"),
        ("/digest?format=html", "format", "'json' or 'md'"),
        ("/digest?day=2026-11-27", "day", "unknown parameter"),
    ],
)
def test_digest_bad_parameters(app_client: TestClient, url: str, parameter: str, message: str) -> None:
    response = app_client.get(url)
    assert response.status_code == 422
    problem = next(p for p in response.json()["errors"] if p["parameter"] == parameter)
    assert message in problem["message"]


RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def assert_valid_atom(xml: bytes) -> ET.Element:
    """RFC 4287 §4.1: the required elements of atom:feed and atom:entry, in the Atom namespace."""
    feed = ET.fromstring(xml)
    assert feed.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert len(feed.findall(f"{ATOM}{name}")) == 1, name
    assert RFC3339.match(feed.findtext(f"{ATOM}updated"))
    feed_has_author = feed.find(f"{ATOM}author/{ATOM}name") is not None
    ids = []
    for entry in feed.findall(f"{ATOM}entry"):
        for name in ("id", "title", "updated"):
            assert len(entry.findall(f"{ATOM}{name}")) == 1, name
        assert RFC3339.match(entry.findtext(f"{ATOM}updated"))
        assert feed_has_author or entry.find(f"{ATOM}author/{ATOM}name") is not None
        # Without atom:content an entry must have a link rel=alternate; with text content, a summary is optional.
        content = entry.find(f"{ATOM}content")
        alternate = [link for link in entry.findall(f"{ATOM}link") if link.get("rel", "alternate") == "alternate"]
        assert content is not None or alternate
        assert content is None or content.get("type") in (None, "text", "html", "xhtml")
        ids.append(entry.findtext(f"{ATOM}id"))
    assert len(ids) == len(set(ids))
    for link in feed.iter(f"{ATOM}link"):
        assert link.get("href")
    return feed


def test_atom_feed_has_one_entry_per_stored_day_with_stable_ids(app_client: TestClient, history) -> None:
    empty = assert_valid_atom(app_client.get("/digest.atom").content)
    assert empty.findall(f"{ATOM}entry") == []
    for day in (27, 28):
        asyncio.run(run_digest_job(history, history.settings, clock=lambda day=day: at(day + 1)))
    response = app_client.get("/digest.atom")
    assert response.headers["content-type"].startswith("application/atom+xml")
    feed = assert_valid_atom(response.content)
    entries = feed.findall(f"{ATOM}entry")
    assert [e.findtext(f"{ATOM}id") for e in entries] == ["tag:gpuprice,2026:digest:2026-11-28",
                                                           "tag:gpuprice,2026:digest:2026-11-27"]  # fmt: skip
    assert entries[1].findtext(f"{ATOM}updated") == "2026-11-28T04:00:00Z"
    assert "1 price change" in entries[1].findtext(f"{ATOM}title")
    assert feed.findtext(f"{ATOM}updated") == "2026-11-29T04:00:00Z"
    # Rebuilding a day replaces its entry (same id, newer `updated`), never adds a second one.
    asyncio.run(run_digest_job(history, history.settings, date(2026, 11, 28), clock=lambda: at(29, 6)))
    rebuilt = assert_valid_atom(app_client.get("/digest.atom").content).findall(f"{ATOM}entry")
    assert [e.findtext(f"{ATOM}id") for e in rebuilt] == [e.findtext(f"{ATOM}id") for e in entries]
    assert rebuilt[0].findtext(f"{ATOM}updated") == "2026-11-29T06:00:00Z"


def test_cli_digest(history: PriceStore, settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    history.close()
    db = str(settings.db)
    assert cli(["digest", "--date", "2026-11-27", "--db", db, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert keys(body["changes"]) == [("aws", "us-east-1", "p4d.24xlarge", "on_demand")] and body["stored"] is False
    assert cli(["digest", "--date", "2026-11-27", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("# GPU price digest 2026-11-27")
    assert cli(["digest", "--date", "2026-11-27", "--store", "--db", db]) == 0
    assert "digest 2026-11-27 stored" in capsys.readouterr().out
    assert cli(["digest", "--date", "2026-11-27", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stored"] is True
    assert cli(["digest", "--date", "2099-01-01", "--store", "--db", db]) == 2
    assert "is not over yet" in capsys.readouterr().err
    assert cli(["digest", "--date", "27/11/2026", "--db", db]) == 2
    assert "--date: '27/11/2026' is not a date" in capsys.readouterr().err


def test_the_job_is_scheduled_at_the_digest_time_in_its_zone(store: PriceStore, settings: Settings) -> None:
    [(job_id, job, trigger)] = digest_jobs(store, settings)
    assert job_id == "digest" and str(trigger.timezone) == "Asia/Shanghai"
    assert inspect.iscoroutinefunction(job)  # APScheduler's asyncio executor awaits only coroutine functions
    fire = trigger.get_next_fire_time(None, datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("UTC")))
    assert fire.astimezone(ZoneInfo("UTC")) == datetime(2026, 11, 30, 1, 0, tzinfo=ZoneInfo("UTC"))  # 09:00 +08
    scheduler = build_scheduler(store, settings, digest_jobs(store, settings), run_at_start=False)
    digest_job = scheduler.get_job("digest")
    assert digest_job is not None and str(digest_job.trigger.timezone) == "Asia/Shanghai"
    other = settings.model_copy(update={"digest_time": "18:30", "digest_time_zone": "Europe/Berlin"})
    [(_, _, trigger)] = digest_jobs(store, other)
    fire = trigger.get_next_fire_time(None, datetime(2026, 11, 29, 2, 0, tzinfo=ZoneInfo("UTC")))
    assert fire.astimezone(ZoneInfo("UTC")) == datetime(2026, 11, 29, 17, 30, tzinfo=ZoneInfo("UTC"))


def test_a_broken_job_is_logged_not_raised(store: PriceStore, settings: Settings) -> None:
    store.close()  # every query now fails
    assert asyncio.run(run_digest_job(store, settings, clock=lambda: utc_naive(datetime(2026, 11, 29)))) is None


def test_digest_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="not a time of day"):
        Settings(digest_time="25:00")
    with pytest.raises(ValueError, match="not an IANA time zone"):
        Settings(digest_time_zone="Beijing")
    assert Settings(digest_time="7:05").digest_time == "07:05"
    assert Settings().digest_zone.key == "Asia/Shanghai" and Settings().digest_time == "09:00"


def test_yesterday_follows_the_zone() -> None:
    from pricedb.digest import yesterday

    late_utc = datetime(2026, 11, 29, 20, 0)  # already Nov 30 in Shanghai
    assert yesterday(late_utc, SHANGHAI) == date(2026, 11, 29)
    assert yesterday(late_utc, ZoneInfo("UTC")) == date(2026, 11, 28)
    assert yesterday(late_utc - timedelta(hours=12), SHANGHAI) == date(2026, 11, 28)


def test_the_scheduler_runs_the_job_on_its_event_loop(
    store: PriceStore, settings: Settings, frozen_clock: datetime
) -> None:
    from apscheduler.triggers.date import DateTrigger

    from pricedb.digest import yesterday

    [(_, job, _)] = digest_jobs(store, settings)
    day = yesterday(frozen_clock, SHANGHAI)  # the job's "yesterday" comes from the one clock

    async def scenario() -> None:
        # "at once" on the system clock, the one APScheduler fires by
        trigger = DateTrigger(timezone=ZoneInfo("UTC"))
        scheduler = build_scheduler(store, settings, [("digest", job, trigger)], run_at_start=False)
        scheduler.start()
        for _ in range(50):
            await asyncio.sleep(0.1)
            if load_digest(store.cursor(), day) is not None:
                break
        scheduler.shutdown(wait=False)

    asyncio.run(scenario())
    stored = load_digest(store.cursor(), day)
    assert day == date(2026, 11, 28) and stored is not None and stored["unchanged"]
