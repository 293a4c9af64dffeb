"""Publishing snapshots and loading them, in one process: a replica's tables equal the collector's,
a publish adds only what changed, a file that does not match its checksum is refused, old snapshots
are pruned, and a publish that fails loses no run (the processes themselves: test_replicas.py)."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.cli import main as cli
from collectors import publishing
from collectors.runner import collect
from pricedb import clock
from pricedb.queries import PublishAttempt
from pricedb.redact import redact
from pricedb.replication.manifest import MANIFEST_NAME, Manifest, ManifestRefused, parse_manifest
from pricedb.replication.partitions import FAMILIES
from pricedb.replication.publish import publish
from pricedb.replication.replica import Check, SnapshotLoader
from pricedb.replication.storage import FolderStorage, StorageError, open_storage
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import make_quote, make_run, seed_fx
from tests.support.faultfs import unwritable

TABLES = [table.name for family in FAMILIES.values() for table in family.tables]
THEN = datetime(2026, 11, 29, 8, 30, tzinfo=UTC)


def rows(store: PriceStore, table: str) -> list[str]:
    return sorted(map(repr, store.cursor().execute(f"SELECT * FROM {table}").fetchall()))


def manifest_of(folder: Path) -> Manifest:
    return Manifest.model_validate_json((folder / MANIFEST_NAME).read_bytes())


@pytest.fixture
def replica_store(tmp_path: Path):
    store = PriceStore(Settings(db=tmp_path / "replica" / "replica.duckdb"))
    yield store
    store.close()


def loader_of(replica_store: PriceStore, folder: Path) -> SnapshotLoader:
    return SnapshotLoader(replica_store, FolderStorage(folder), replica_store.path.parent)


def test_a_replica_holds_and_answers_exactly_what_the_collector_does(
    offline_store: PriceStore, replica_store: PriceStore, tmp_path: Path, frozen_clock: datetime
) -> None:
    # Pinned: history's default `until` is now, which must be the same instant for both apps.
    target = tmp_path / "published"
    published = publish(offline_store, [FolderStorage(target, writable=True)], timedelta(days=1))
    loader = loader_of(replica_store, target)
    assert loader.check() is Check.LOADED and loader.manifest is not None
    assert loader.manifest.version == published.version == 1
    assert loader.last is not None and loader.last.downloaded_bytes == loader.manifest.total_bytes > 0
    for table in TABLES:
        assert rows(replica_store, table) == rows(offline_store, table), table
    assert rows(replica_store, "observations") and rows(replica_store, "fx_rates")  # not two empty tables
    assert rows(replica_store, "instance_zones")  # the AWS zones SkyPilot's catalog needs
    assert loader.check() is Check.UNCHANGED  # the folder's manifest is the same file: nothing read
    questions = ["/cheapest?mem=60GB&hours=200", "/offers?sort=cny_per_gb_hour", "/providers", "/export?format=csv",
                 "/offers/history?since=2020-01-01", "/export/gpuhunt/lambda.csv", "/export/skypilot/aws/vms.csv",
                 "/digest?date=2026-11-28"]  # fmt: skip
    answers = {}
    # both asked at one moment: history's default `until` is "now", and a digest built on demand says when
    with clock.pinned(clock.now()):
        for store in (offline_store, replica_store):
            app = create_app(offline_store.settings, store=store, schedule=False)
            with TestClient(app) as client:
                answers[store.path] = [client.get(q).content for q in questions]
    assert answers[offline_store.path] == answers[replica_store.path]


def _seed_days(store: PriceStore) -> None:
    """Runs on three days: two closed days, an hour of today that is over, and the open tail."""
    for at, price in ((datetime(2026, 11, 26, 10), 20.0), (datetime(2026, 11, 27, 10), 21.0),
                      (datetime(2026, 11, 29, 7, 10), 22.0), (datetime(2026, 11, 29, 8, 10), 23.0)):  # fmt: skip
        moment = at.replace(tzinfo=UTC)
        seed_fx(store, moment)
        store.record_run(make_run("aws", [make_quote(price=price, observed_at=moment)], finished_at=moment))


def test_history_is_cut_by_day_and_today_by_hour_and_a_publish_adds_only_what_changed(
    store: PriceStore, replica_store: PriceStore, tmp_path: Path
) -> None:
    target = FolderStorage(tmp_path / "published", writable=True)
    with clock.pinned(THEN):
        _seed_days(store)
        first = publish(store, [target], timedelta(days=1))
        manifest = manifest_of(target.root)
        runs = [p for p in manifest.partitions if p.family == "runs"]
        assert [p.label for p in runs] == ["2026-11-26", "2026-11-27", "2026-11-29T07", "open"]
        assert [(p.lo, p.hi) for p in runs] == [(None, 3), (3, 5), (5, 7), (7, None)]  # FX and aws runs alternate
        assert {f.table for f in runs[0].files} == {"runs", "observations"}  # no held offers: no file
        loader = loader_of(replica_store, target.root)
        assert loader.check() is Check.LOADED

        # One more run today: the open tail, the current offers and the month's FX rates change; the closed days do not.
        later = datetime(2026, 11, 29, 8, 20, tzinfo=UTC)
        store.record_run(make_run("aws", [make_quote(price=24.0, observed_at=later)], finished_at=later))
        second = publish(store, [target], timedelta(days=1))
    assert [p.identity for p in manifest_of(target.root).partitions] == [p.identity for p in manifest.partitions]
    assert second.version == 2 and second.files_uploaded == 3  # the tail's runs and observations, the offers
    assert second.bytes_uploaded < first.bytes_uploaded
    with clock.pinned(THEN):
        assert loader.check() is Check.LOADED
    assert loader.last is not None and loader.last.downloaded_files == 3  # runs and observations of the tail, offers
    for table in TABLES:
        assert rows(replica_store, table) == rows(store, table), table


def test_a_run_s_later_export_outcome_rewrites_its_closed_day(
    store: PriceStore, replica_store: PriceStore, tmp_path: Path
) -> None:
    target = FolderStorage(tmp_path / "published", writable=True)
    with clock.pinned(THEN):
        _seed_days(store)
        publish(store, [target], timedelta(days=1))
        loader = loader_of(replica_store, target.root)
        loader.check()
        store.record_export(2, "price sheets not written to /x: disk full")  # run 2 ended on 2026-11-26
        done = publish(store, [target], timedelta(days=1))
        assert loader.check() is Check.LOADED
    assert done.files_uploaded == 1  # that day's runs; its observations file is the same bytes, the same name
    assert rows(replica_store, "runs") == rows(store, "runs")
    assert replica_store.last_export() == store.last_export()


def test_a_file_that_does_not_match_its_checksum_is_refused_and_the_old_snapshot_kept(
    store: PriceStore, replica_store: PriceStore, tmp_path: Path
) -> None:
    target = FolderStorage(tmp_path / "published", writable=True)
    with clock.pinned(THEN):
        _seed_days(store)
        publish(store, [target], timedelta(days=1))
        loader = loader_of(replica_store, target.root)
        loader.check()
        before = {table: rows(replica_store, table) for table in TABLES}
        later = datetime(2026, 11, 29, 8, 20, tzinfo=UTC)
        store.record_run(make_run("aws", [make_quote(price=99.0, observed_at=later)], finished_at=later))
        publish(store, [target], timedelta(days=1))
    offers = next(f for f in manifest_of(target.root).files if f.table == "offers")
    (target.root / offers.path).write_bytes(b"PAR1 not what was published")
    with pytest.raises(StorageError, match=r"does not match the manifest .*snapshot 2 not loaded"):
        loader.check()
    assert loader.manifest is not None and loader.manifest.version == 1
    assert {table: rows(replica_store, table) for table in TABLES} == before
    assert not list((replica_store.path.parent / "files").glob(".*.tmp"))  # no half-downloaded file left


def test_a_snapshot_of_a_newer_schema_is_refused_with_what_to_do(tmp_path: Path) -> None:
    body = json.dumps({"origin": "x", "version": 3, "published_at": "2026-11-29T08:00:00Z", "schema_version": 99,
                       "gpuprice_version": "9.0", "last_run_id": 1, "partitions": []}).encode()  # fmt: skip
    with pytest.raises(ManifestRefused, match=r"schema 99, newer than this gpuprice's 6 .*upgrade this gpuprice"):
        parse_manifest(body, "s3://prices", 6)
    with pytest.raises(ManifestRefused, match="is not a gpuprice snapshot manifest"):
        parse_manifest(b"<html>", "https://mirror.example", 6)


def test_old_snapshots_and_orphan_files_are_pruned_never_the_current(store: PriceStore, tmp_path: Path) -> None:
    target = FolderStorage(tmp_path / "published", writable=True)
    retention = timedelta(hours=1)
    with clock.pinned(THEN):
        _seed_days(store)
        publish(store, [target], retention)
    orphan = target.root / "data" / "runs" / "open.from-a-killed-publish.parquet"
    orphan.write_bytes(b"uploaded, never named by a manifest")
    for minutes, price in ((40, 25.0), (80, 26.0)):
        with clock.pinned(THEN + timedelta(minutes=minutes)) as now:
            store.record_run(make_run("aws", [make_quote(price=price, observed_at=now)], finished_at=now))
            publish(store, [target], retention)
        if minutes == 40:
            assert not orphan.exists() and len(target.list("snapshots")) == 2  # snapshot 1 is 40 minutes old: kept
            first = {f.path for f in Manifest.model_validate_json((target.root / "snapshots/000000000001.json")
                                                                  .read_bytes()).files}  # fmt: skip
            assert first <= set(target.list("data"))
    # Snapshot 1 is 80 minutes old now: pruned with the files only it named; snapshot 2 (40 minutes) kept.
    assert target.list("snapshots") == ["snapshots/000000000002.json", "snapshots/000000000003.json"]
    kept = {
        f.path
        for name in target.list("snapshots")
        for f in Manifest.model_validate_json((target.root / name).read_bytes()).files
    }
    assert set(target.list("data")) == kept and not first <= kept
    with clock.pinned(THEN + timedelta(minutes=90)):
        unchanged = publish(store, [target], timedelta(0))  # nothing changed: no new version, nothing pruned
        assert unchanged.version == 3 and unchanged.files_uploaded == 0 and len(target.list("snapshots")) == 2
        store.record_export(9, None)
        publish(store, [target], timedelta(0))  # without retention, only the current snapshot stays
    assert target.list("snapshots") == ["snapshots/000000000004.json"]
    assert set(target.list("data")) == {f.path for f in manifest_of(target.root).files}


def test_a_failed_publish_loses_no_run_and_degrades_healthz_until_one_succeeds(
    offline_round, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "published"
    target.mkdir()
    settings = Settings(db=tmp_path / "c.duckdb", export_dir=tmp_path / "exports", publish_to=str(target))
    shutil.copyfile(offline_round.db, settings.db)
    monkeypatch.setenv("GPUPRICE_EXPORT_DIR", str(settings.export_path))
    monkeypatch.setenv("GPUPRICE_PUBLISH_TO", str(target))
    with unwritable(target):
        status = cli(["collect", "--db", str(settings.db), "--offline", "manual", "--json"])
        out, err = capsys.readouterr()
    assert status == 6  # every run recorded; the snapshot could not be published
    assert err.strip().splitlines()[-1].startswith(f"error: snapshot not published to {target}: {target}: ")
    payload = json.loads(out)
    assert [r["status"] for r in payload["runs"]] == ["ok", "ok"] and payload["publish"]["version"] is None
    assert all(r["publish_error"] for r in payload["runs"])
    store = PriceStore(settings.model_copy(update={"offline": True}))
    try:
        assert store.cursor().execute("SELECT count(*) FROM runs WHERE provider = 'manual'").fetchone()[0] == 2
        with unwritable(target), TestClient(create_app(settings, store=store, schedule=False)) as client:
            wait_for(lambda: publishes(store) == 3)  # serve publishes at start what may not be published yet
            health = client.get("/healthz").json()
        assert health["status"] == "degraded" and health["publish"]["version"] is None
        assert health["problems"] == [health["publish"]["error"]] and "Operation not permitted" in health["problems"][0]
        with TestClient(create_app(settings, store=store, schedule=False)) as client:
            wait_for(lambda: publishes(store) == 4)  # the folder takes files again
            health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["publish"]["version"] == 1 and health["problems"] == []
    finally:
        store.close()


def publishes(store: PriceStore) -> int:
    return store.cursor().execute("SELECT count(*) FROM publishes").fetchone()[0]


def wait_for(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_runs_that_land_during_a_publish_share_the_next_one(
    store: PriceStore, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[int] = []

    def slow_publish(store: PriceStore, settings: Settings) -> PublishAttempt:
        attempts.append(len(attempts) + 1)
        time.sleep(0.2)  # the other runs land meanwhile
        return PublishAttempt(clock.now_naive(), len(attempts), 0, "a folder", None)

    monkeypatch.setattr(publishing, "publish_and_record", slow_publish)
    publisher = publishing.Publisher(store, settings.model_copy(update={"publish_to": str(settings.db.parent)}))

    async def round_of_eight() -> list[PublishAttempt]:
        return list(await asyncio.gather(*(publisher.after_run(run_id) for run_id in range(1, 9))))

    outcomes = asyncio.run(round_of_eight())
    assert attempts == [1, 2]  # the first run's publish, then one for the seven that landed while it ran
    assert [o.version for o in outcomes] == [1] + [2] * 7


def test_a_round_publishes_a_snapshot_holding_every_run(offline_round, tmp_path: Path) -> None:
    settings = Settings(
        db=tmp_path / "c.duckdb", export_dir=tmp_path / "exports", publish_to=str(tmp_path / "pub"), offline=True
    )
    store = PriceStore(settings)
    try:
        summaries = asyncio.run(collect(store, settings, ["manual", "lambda"]))
        versions = [v for (v,) in store.cursor().execute("SELECT version FROM publishes ORDER BY 1").fetchall()]
        newest = store.cursor().execute("SELECT max(run_id) FROM runs").fetchone()[0]
    finally:
        store.close()
    assert [s.publish_error for s in summaries] == [None, None, None]
    assert versions == list(range(1, len(versions) + 1))
    assert manifest_of(tmp_path / "pub").last_run_id == newest == 3


def test_manifests_name_only_files_of_the_snapshot() -> None:
    """A manifest comes from outside: a path or checksum that would reach beyond the replica's folder is refused."""
    entry = {"table": "runs", "path": "data/runs/open.ab.parquet", "rows": 1, "bytes": 1, "sha256": "a" * 64}
    partition = {"family": "runs", "label": "open", "signature": "1:0", "files": [entry]}
    manifest = {"origin": "x", "version": 1, "published_at": "2026-11-29T08:00:00Z", "schema_version": 6,
                "gpuprice_version": "0.1.0", "last_run_id": 1, "partitions": [partition]}  # fmt: skip
    assert parse_manifest(json.dumps(manifest).encode(), "x", 6).files[0].path == entry["path"]
    for bad in ({"path": "../../etc/passwd"}, {"path": "data/runs/../../x.parquet"}, {"sha256": "../" + "a" * 61},
                {"table": "schema_migrations"}):  # fmt: skip
        partition["files"] = [{**entry, **bad}]
        with pytest.raises(ManifestRefused, match="is not a gpuprice snapshot manifest"):
            parse_manifest(json.dumps(manifest).encode(), "x", 6)


def test_s3_credentials_are_masked_wherever_text_leaves(tmp_path: Path) -> None:
    secret = "s3-secret-0123456789abcdef"
    settings = Settings(
        db=tmp_path / "x.duckdb",
        s3_endpoint_url="http://127.0.0.1:9",  # nothing listens: the request fails
        s3_access_key_id="AKIAEXAMPLEEXAMPLE",
        s3_secret_access_key=secret,
        retry_attempts=1,
    )
    storage = open_storage("s3://prices/gpuprice", settings, writable=True)
    with pytest.raises(StorageError) as failure:
        storage.read("manifest.json")
    assert str(failure.value).startswith("s3://prices/gpuprice: EndpointConnectionError")
    assert redact(f"key={secret} id AKIAEXAMPLEEXAMPLE") == "key=*** id ***"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--replica-of", "ftp://mirror.example/prices"], "--replica-of ftp://mirror.example/prices: not a folder, "),
        (["--replica-of", "s3://"], "--replica-of s3://: no bucket (write s3://bucket/prefix)"),
        (["--replica-of", "/srv/published", "--offline"], "--replica-of collects nothing: leave out --offline"),
    ],
)
def test_a_replica_source_that_cannot_be_one_is_refused_in_one_line(
    argv: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(["serve", "--db", str(tmp_path / "r.duckdb"), "--port", "0", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {said}") and len(err.splitlines()) == 1
    assert not (tmp_path / "r-replica").exists()  # nothing was opened
