"""Fault matrix, collector rows (issue 9: parts 2, 3 and 5), each against local fake upstreams:

- **401/403 echo**: every credentialed provider answers 401/403 with a body echoing the request's
  URL, headers and body. No credential anywhere: database (file, WAL, every text read back by SQL),
  `gpuprice collect`/`providers` output, logs, every API answer, the exports; every run recorded.
- **webhook echo**: every digest webhook answers 403 echoing its request. No webhook URL, token or
  secret in the deliveries, logs, `/digest` or the database.
- **trickle**: headers, then one byte every 0.1 s. The run fails at its deadline, `collect` returns,
  the run is recorded.
- **200 MB body**: the run fails with the body cap's reason and is recorded (memory: benchmarks/body_cap.py).
- **×1000 row**: one Azure row's price ×1000, the others normal. That offer keeps its last good price
  (stale, with the reason), nothing is withdrawn, the snapshot of now and the digest agree.
"""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import date, datetime, timedelta
from pathlib import Path
from urllib.parse import quote

import duckdb
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from api.cli import main as cli
from api.digests import run_digest_job
from collectors.replay import Replay
from pricedb import clock
from pricedb.digest import build_digest
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.snapshot import snapshot_at
from pricedb.store import PriceStore
from tests.conftest import FIXTURES, make_settings
from tests.helpers import make_quote, make_run, seed_fx
from tests.support import fake_upstream

# Every credential a provider takes, set through the variables users set (botocore reads AWS's itself).
CREDENTIALS = {
    "lambda": {"GPUPRICE_LAMBDA_API_KEY": "secret_faultmatrix-lambda-key-0123456789"},
    "runpod": {"RUNPOD_API_KEY": "rpa_FAULTMATRIX0123456789ABCDEFGHIJKLMN"},
    "verda": {"VERDA_CLIENT_ID": "verda-faultmatrix-client-4711",
              "VERDA_CLIENT_SECRET": "verda-faultmatrix-secret-0815"},
    "autodl": {"GPUPRICE_AUTODL_TOKEN": "eyJhbGciOiJFUzI1NiJ9.faultmatrix-autodl-login.c2lnbmF0dXJl"},
    "tencent": {
        "TENCENTCLOUD_SECRET_ID": "AKIDfaultMatrix00000000000000000000",
        "TENCENTCLOUD_SECRET_KEY": "faultMatrixTencentSecretKey00000",
    },
    "aliyun": {
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI5tFAULTMATRIX000001",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "FaultMatrixAliyunSecret0123456789",
    },
    "vast": {"VAST_API_KEY": "vast-faultmatrix-key-0123456789abcdef"},
    "gcp": {"GPUPRICE_GCP_API_KEY": "AIzaSyFAULT-matrix-key-0123456789abcd"},
    "aws": {"AWS_ACCESS_KEY_ID": "AKIAFAULTMATRIX00001",
            "AWS_SECRET_ACCESS_KEY": "faultMatrixAws/Secret+Key0123456789abcdefg"},
}  # fmt: skip
SIGNING_ONLY = {"TENCENTCLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "AWS_SECRET_ACCESS_KEY"}  # never sent
PROVIDERS = list(CREDENTIALS)
REFUSAL = "the credentials in this request were refused"  # the fake's own message, kept in run errors


def forms(secret: str) -> set[str]:
    """A secret and what would betray it: URL-encoded, and its first 12 characters (a cut snippet)."""
    return {secret, quote(secret, safe=""), secret[:12]}


def leaks(surfaces: dict[str, str | bytes], secrets: list[str]) -> list[tuple[str, str]]:
    found = []
    for surface, content in surfaces.items():
        text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        found.extend((surface, secret) for secret in secrets if any(form in text for form in forms(secret)))
    return found


def carries_credentials(request: fake_upstream.Request) -> bool:
    headers = {name.lower() for name in request.headers}
    return "authorization" in headers or "key=" in request.path or b"client_secret" in request.body


def refuse(request: fake_upstream.Request) -> fake_upstream.Answer:
    """403 for the Google and AWS shapes of refusal, 401 for the rest; the body echoes everything."""
    status = 403 if "key=" in request.path or "AWS4-HMAC" in request.headers.get("Authorization", "") else 401
    return fake_upstream.echo(status)(request)


def database_texts(db: Path) -> str:
    """Every text value of every table, read back through SQL (immune to how DuckDB stores strings)."""
    conn = duckdb.connect(str(db), read_only=True)
    try:
        out = []
        for (table,) in conn.execute("SELECT table_name FROM information_schema.tables").fetchall():
            out.extend(str(row) for row in conn.execute(f"SELECT * FROM {table}").fetchall())
        return "\n".join(out)
    finally:
        conn.close()


def export_texts(folder: Path) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":  # compressed: read it back
            files[str(path)] = str(duckdb.sql(f"SELECT * FROM read_parquet('{path}')").fetchall())
        else:
            files[str(path)] = path.read_bytes()
    return files


API_PATHS = (
    "/providers",
    "/healthz",
    "/offers?include_stale=true",
    "/cheapest?mem=40GB&include_stale=true&include_unavailable=true",
    "/offers/history?since=2000-01-01",
    "/digest?date=2026-11-28",
    "/digest?date=2026-11-28&format=md",
    "/digest.atom",
    "/export?format=csv",
    "/export?format=json",
    "/export?format=ndjson",
)


def api_answers(settings: Settings) -> dict[str, str]:
    store = PriceStore(settings)
    try:
        with TestClient(create_app(settings, store=store, schedule=False)) as client:
            return {f"GET {path}": client.get(path).text for path in API_PATHS}
    finally:
        store.close()


# ----- row: 401/403 echoing the request -----------------------------------------------------------
def test_echoed_credentials_leak_nowhere(tmp_path: Path, monkeypatch, capfd, caplog) -> None:
    replays = [Replay.load(FIXTURES, name) for name in [*PROVIDERS, "fx"]]
    secrets = [value for env in CREDENTIALS.values() for value in env.values()]
    caplog.set_level(logging.DEBUG)
    with fake_upstream.serve(fake_upstream.pass_through(replays, refuse, carries_credentials)) as upstream:
        for name in [*PROVIDERS, "fx"]:
            monkeypatch.setenv(f"GPUPRICE_{name.upper()}_BASE_URL", upstream.url)
        for env in CREDENTIALS.values():
            for variable, value in env.items():
                monkeypatch.setenv(variable, value)
        for variable, value in (("DB", tmp_path / "gpuprice.duckdb"), ("EXPORT_DIR", tmp_path / "exports"),
                                ("RETRY_BASE_DELAY_S", 0), ("RETRY_MAX_DELAY_S", 0)):  # fmt: skip
            monkeypatch.setenv(f"GPUPRICE_{variable}", str(value))
        with clock.pinned(datetime(2026, 11, 28, 6)):
            status = cli(["collect", "--json", *PROVIDERS])
            collected = capfd.readouterr()
            cli(["providers", "--json"])
            listed = capfd.readouterr()
            settings = Settings()
            answers = api_answers(settings)
        sent = upstream.requests

    runs = json.loads(collected.out)["runs"]
    outcome = {run["provider"]: run for run in runs}
    # every run recorded, and each says what happened (the status and the provider's words)
    assert status == 1 and set(outcome) == {*PROVIDERS, "fx"} and outcome["fx"]["status"] == "ok"
    for provider in PROVIDERS:
        said = outcome[provider]["error"] or " ".join(outcome[provider]["notes"])
        assert any(code in said for code in ("401", "403")) and REFUSAL in said, (provider, said)
    assert outcome["aws"]["status"] == "ok"  # list prices need no key; spot, refused, is "not collected"
    assert {p for p, run in outcome.items() if run["status"] == "failed"} == set(PROVIDERS) - {"aws"}
    # the fake really saw (and echoed) every credential that travels
    echoed = "\n".join(f"{r.path} {r.headers} {r.body!r}" for r in sent)
    travelling = [v for env in CREDENTIALS.values() for k, v in env.items() if k not in SIGNING_ONLY]
    assert [s for s in travelling if s not in echoed] == []

    db = settings.db
    surfaces: dict[str, str | bytes] = {
        "collect stdout": collected.out,
        "collect stderr": collected.err,
        "providers stdout": listed.out,
        "providers stderr": listed.err,
        "logs": caplog.text + "\n".join(r.getMessage() for r in caplog.records),
        "database (SQL)": database_texts(db),
        "database file": db.read_bytes(),
        **answers,
        **export_texts(settings.export_path),
    }  # fmt: skip
    wal = db.with_name(db.name + ".wal")  # gone after a clean close; the WAL test below reads it open
    if wal.exists():
        surfaces["database WAL"] = wal.read_bytes()
    assert REFUSAL.encode() in surfaces["database file"]  # the byte search does see stored run errors
    assert leaks(surfaces, secrets) == []


def test_the_wal_of_an_open_store_holds_no_echoed_credential(tmp_path: Path) -> None:
    """Before close (and checkpoint) the run is in the WAL: it is redacted there too."""
    key = "secret_faultmatrix-wal-key-0123456789"
    replays = [Replay.load(FIXTURES, "lambda")]
    with fake_upstream.serve(fake_upstream.pass_through(replays, refuse, carries_credentials)) as upstream:
        settings = make_settings(tmp_path, base_urls={"lambda": upstream.url}, lambda_api_key=SecretStr(key))
        from collectors.lambda_ import LambdaCollector
        from collectors.runner import run_provider

        store = PriceStore(settings)
        collector = LambdaCollector(settings)
        summary = asyncio.run(run_provider(collector, collector.scope(), store, settings))
        wal = settings.db.with_name(settings.db.name + ".wal").read_bytes()
        store.close()
    assert summary.status.value == "failed" and REFUSAL in (summary.error or "")
    assert REFUSAL.encode() in wal and leaks({"WAL": wal, "database": settings.db.read_bytes()}, [key]) == []


# ----- row: webhooks that echo their requests -------------------------------------------------------
def test_echoing_webhooks_leak_no_url_token_or_secret(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    tokens = {
        "json": "FaultMatrixJsonHookToken0123",
        "slack": "FaultMatrixSlackHookToken0123",
        "feishu": "fault-matrix-feishu-hook-0123",
        "dingtalk": "FaultMatrixDingTalkToken0123",
    }
    feishu_secret, dingtalk_secret = "faultmatrix-feishu-secret-0123", "SECfaultmatrixdingtalksecret0123"
    with fake_upstream.serve(fake_upstream.echo(403)) as upstream:
        settings = make_settings(
            tmp_path,
            digest_time_zone="UTC",
            digest_webhook_url=f"{upstream.url}/hooks/json?token={tokens['json']}",
            digest_slack_webhook_url=f"{upstream.url}/services/T0FAULT/B0FAULT/{tokens['slack']}",
            digest_feishu_webhook_url=f"{upstream.url}/open-apis/bot/v2/hook/{tokens['feishu']}",
            digest_feishu_secret=feishu_secret,
            digest_dingtalk_webhook_url=f"{upstream.url}/robot/send?access_token={tokens['dingtalk']}",
            digest_dingtalk_secret=dingtalk_secret,
        )
        store = PriceStore(settings)
        seed_fx(store, datetime(2026, 11, 27))
        store.record_run(make_run("aws", [make_quote(observed_at=datetime(2026, 11, 27))],
                                  finished_at=datetime(2026, 11, 27)))  # fmt: skip
        digest = asyncio.run(run_digest_job(store, settings, date(2026, 11, 27), clock=lambda: datetime(2026, 11, 28)))
        with TestClient(create_app(settings, store=store, schedule=False)) as client:
            served = {p: client.get(p).text for p in ("/digest?date=2026-11-27", "/digest?date=2026-11-27&format=md")}
        store.close()
        sent = "\n".join(f"{r.path} {r.body!r}" for r in upstream.requests)
    assert digest is not None and [d["status"] for d in digest["deliveries"]] == ["failed"] * 4
    assert all("HTTP 403" in d["error"] for d in digest["deliveries"])
    assert all(token in sent for token in tokens.values())  # they were sent, and echoed back
    kinds = (
        "digest_webhook_url",
        "digest_slack_webhook_url",
        "digest_feishu_webhook_url",
        "digest_dingtalk_webhook_url",
    )
    urls = [getattr(settings, kind).get_secret_value() for kind in kinds]
    surfaces = {
        "deliveries": json.dumps(digest["deliveries"]),
        "logs": caplog.text,
        "database (SQL)": database_texts(settings.db),
        "database file": settings.db.read_bytes(),
        **served,
    }
    assert leaks(surfaces, [*tokens.values(), feishu_secret, dingtalk_secret, *urls]) == []


# ----- row: an upstream that trickles ---------------------------------------------------------------
def test_a_trickling_upstream_ends_in_a_recorded_failed_run_and_collect_returns(
    tmp_path: Path, monkeypatch, capfd
) -> None:
    replays = [Replay.load(FIXTURES, "fx")]
    trickling = fake_upstream.trickle(0.1)
    with fake_upstream.serve(fake_upstream.pass_through(replays, trickling, carries_credentials)) as upstream:
        for variable, value in (("DB", tmp_path / "gpuprice.duckdb"), ("EXPORT_DIR", tmp_path / "exports"),
                                ("LAMBDA_BASE_URL", upstream.url), ("FX_BASE_URL", upstream.url),
                                ("LAMBDA_API_KEY", "secret_faultmatrix-trickle-key"),
                                ("LAMBDA_DEADLINE_S", "1")):  # fmt: skip
            monkeypatch.setenv(f"GPUPRICE_{variable}", str(value))
        status = asyncio.run(asyncio.wait_for(asyncio.to_thread(cli, ["collect", "--json", "lambda"]), 20))
        runs = {r["provider"]: r for r in json.loads(capfd.readouterr().out)["runs"]}
        recorded = duckdb.connect(str(tmp_path / "gpuprice.duckdb"), read_only=True)
        stored = recorded.execute("SELECT provider, status, error FROM runs ORDER BY provider").fetchall()
        recorded.close()
    assert status == 1
    assert runs["lambda"]["error"] == "deadline of 1 s exceeded while fetching (GPUPRICE_LAMBDA_DEADLINE_S)"
    assert stored == [("fx", "ok", None), ("lambda", "failed", runs["lambda"]["error"])]


# ----- row: a 200 MB answer -------------------------------------------------------------------------
def test_a_200_mb_answer_fails_the_run_with_the_cap_and_is_recorded(tmp_path: Path) -> None:
    from collectors.lambda_ import LambdaCollector
    from collectors.runner import run_provider

    with fake_upstream.serve(fake_upstream.huge(200 * 2**20)) as upstream:
        settings = make_settings(
            tmp_path, base_urls={"lambda": upstream.url}, lambda_api_key=SecretStr("secret_faultmatrix-huge-key")
        )
        store = PriceStore(settings)
        collector = LambdaCollector(settings)
        summary = asyncio.run(run_provider(collector, collector.scope(), store, settings))
        stored = store.cursor().execute("SELECT status, error FROM runs WHERE provider = 'lambda'").fetchone()
        store.close()
    assert summary.status.value == "failed"
    assert summary.error is not None and "larger than the body cap of 64 MB" in summary.error
    assert stored == ("failed", summary.error)


# ----- row: one row's price ×1000 -------------------------------------------------------------------
def inflate_first_row(request: fake_upstream.Request, body: bytes) -> bytes:
    """Azure's first page with its first row (NC24ads A100 v4, eastus, Linux, on-demand) ×1000."""
    if "$skip" in request.path or "prices" not in request.path:
        return body
    page = json.loads(body)
    row = page["Items"][0]
    row["retailPrice"] *= 1000
    row["unitPrice"] *= 1000
    return json.dumps(page).encode()


def collect_azure(settings: Settings, edit=None) -> None:
    from collectors.runner import collect

    replays = [Replay.load(FIXTURES, name) for name in ("azure", "fx")]
    with fake_upstream.serve(fake_upstream.replayed(replays, edit)) as upstream:
        live = settings.model_copy(update={"base_urls": {"azure": upstream.url, "fx": upstream.url}})
        store = PriceStore(live)
        try:
            asyncio.run(collect(store, live, ["azure"]))
        finally:
            store.close()


def test_a_price_times_1000_keeps_the_last_good_price_and_withdraws_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, digest_time_zone="UTC")
    day1, day2 = datetime(2026, 11, 28, 6), datetime(2026, 11, 29, 6)
    with clock.pinned(day1):
        collect_azure(settings)
    with clock.pinned(day2):
        collect_azure(settings, inflate_first_row)
    store = PriceStore(settings)
    try:
        cur = store.cursor()
        now = day2.replace(tzinfo=None) + timedelta(minutes=1)
        runs = cur.execute(
            "SELECT status, rejected, notes FROM runs WHERE provider = 'azure' ORDER BY run_id"
        ).fetchall()
        first, second = current_offers(cur, day1).offers, current_offers(cur, now).offers
        snapshot = snapshot_at(cur, now + timedelta(seconds=1), now).offers
        digest = build_digest(cur, date(2026, 11, 29), settings.digest_zone, now)
        with TestClient(create_app(settings, store=store, schedule=False)) as client:
            azure = next(p for p in client.get("/providers").json()["providers"] if p["provider"] == "azure")
            served = {(o["region"], o["sku"], o["pricing"]): o for o in client.get("/offers").json()["offers"]}
    finally:
        store.close()

    assert [status for status, _, _ in runs] == ["ok", "ok"]
    # Besides the sizes of unknown GPUs the pages list (reported every run), one rejection: the inflated price.
    [rejected] = [r for r in json.loads(runs[1][1]) if not r["reason"].startswith("unknown GPU")]
    assert rejected["offer"] == "azure/eastus/Standard_NC24ads_A100_v4/on_demand"
    assert "outside the plausible" in rejected["reason"]
    key = ("azure", "eastus", "Standard_NC24ads_A100_v4", "on_demand")
    before, after = {o.key: o for o in first}, {o.key: o for o in second}
    assert set(after) == set(before)  # no offer lost
    held = after[key]
    assert (
        (held.price, held.observed_at)
        == (before[key].price, before[key].observed_at)
        == (3.673, before[key].observed_at)
    )
    assert held.stale and held.held_reason == rejected["reason"]
    assert [o.key for o in second if o.stale] == [key]  # only the held one
    assert snapshot == second  # `/offers?date=` and the digest replay the same rule
    assert digest["withdrawn"] == [] and all(
        c["sku"] != key[2] or c["pricing"] != "on_demand" for c in digest["changes"]
    )
    assert azure["held_offers"] == 1 and any("held 1 offer(s)" in n for n in azure["notes"])
    assert served[key[1:]]["held_reason"] == rejected["reason"] and served[key[1:]]["stale"] is True
