"""GCP and OCI end to end: offline replay ranks them beside AWS and Azure in `/cheapest`, and a live
collect through a local server answering with the recorded bodies stores exactly the offers those
bodies hold, with the GCP API key sent to the server and kept out of everything stored."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.app import create_app
from api.cli import main as cli
from collectors import fx_ecb
from collectors.replay import Replay, serve_replay
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.collectors.gcp.test_parse import EXPECTED as GCP_OFFERS
from tests.conftest import FIXTURES
from tests.helpers import collect_offline_beside, collect_through_local_server

USD_CNY = 6.8095 / 1.0163  # ECB 2022-07-08, the recorded FX file
KEY = "AIzaSyE2E-not-a-real-key-9876543210zz"


def stored_offers(store: PriceStore) -> dict[tuple[str, ...], tuple[float, float | None, str, str | None]]:
    rows = store.cursor().execute(
        "SELECT provider, region, sku, pricing, price, cny_per_gb_hour, source_url, notes FROM offers "
        "WHERE provider IN ('gcp', 'oci')"
    )
    return {row[:4]: row[4:] for row in rows.fetchall()}


def test_offline_cheapest_ranks_gcp_and_oci_beside_aws_and_azure(offline_round, offline_store: PriceStore) -> None:
    summaries, store = offline_round.summaries, offline_store
    assert {s.provider: s.status.value for s in summaries if s.provider in ("gcp", "oci")} == {"gcp": "ok", "oci": "ok"}
    with TestClient(create_app(store.settings, store=store, schedule=False)) as client:
        options = client.get("/cheapest?mem=60GB&hours=200&gpu=A100&limit=500").json()["options"]
    assert {"aws", "azure", "gcp", "oci"} <= {o["provider"] for o in options}
    totals = [o["total_cny"] for o in options]
    assert totals == sorted(totals)
    by_key = {(o["provider"], o["region"], o["sku"], o["pricing"]): o for o in options}
    # 60 GB needs two 40GB A100s or one 80GB: a2-highgpu-1g (40 GB) is not viable, a2-ultragpu-1g is.
    assert ("gcp", "us-central1", "a2-highgpu-1g", "on_demand") not in by_key
    ultra = by_key[("gcp", "us-central1", "a2-ultragpu-1g", "on_demand")]
    assert (ultra["billed_hours"], ultra["gpu_count"], ultra["gpu_memory_gb"]) == (200, 1, 80)
    assert ultra["total_cny"] == pytest.approx(5.06879789 * USD_CNY * 200, abs=0.01)
    oci = by_key[("oci", "global", "BM.GPU.A100-v2.8", "on_demand")]
    assert oci["total_cny"] == pytest.approx(32.0 * USD_CNY * 200, abs=0.01)
    assert oci["cny_per_gb_hour"] == pytest.approx(32.0 * USD_CNY / 640)
    reserved = by_key[("gcp", "us-central1", "a2-ultragpu-1g", "reserved_1y")]
    assert reserved["billed_hours"] == 8760  # the whole term, however short the job
    # the cheapest GCP way to 60 GB for 200 h is a Spot ultragpu-1g, cheaper than its on-demand price
    gcp_first = next(o for o in options if o["provider"] == "gcp")
    assert (gcp_first["sku"], gcp_first["pricing"]) == ("a2-ultragpu-1g", "spot")


def test_live_collect_against_a_local_server_stores_exactly_what_it_answers(settings: Settings) -> None:
    names = ["gcp", "oci"]
    store, summaries, requests = collect_through_local_server(settings, names, gcp_api_key=SecretStr(KEY))
    assert {s.provider: s.status.value for s in summaries} == {"fx": "ok", "gcp": "ok", "oci": "ok"}
    assert all(not s.offline for s in summaries)
    gcp_paths = [path for _, path, _, _ in requests if "/skus" in path]
    assert len(gcp_paths) == 3 and all(f"key={KEY}" in path for path in gcp_paths)
    stored = stored_offers(store)
    everything = " ".join(
        str(cell) for row in store.cursor().execute("SELECT * FROM observations").fetchall() for cell in row
    ) + " ".join(str(cell) for row in store.cursor().execute("SELECT * FROM runs").fetchall() for cell in row)
    store.close()
    assert KEY not in everything
    assert all(KEY not in path.read_text() for path in store.settings.export_path.glob("*.csv"))
    # The same recorded bodies replayed in-process (offline mode) give exactly the same offers.
    assert collect_offline_beside(settings, names, stored_offers) == stored
    # Independent of the parsers: the numbers the fixtures hold (see fixtures/README.md).
    assert len(stored) == sum(s.quotes for s in summaries if s.provider != "fx")
    assert len([key for key in stored if key[0] == "gcp"]) == len(GCP_OFFERS)
    assert len([key for key in stored if key[0] == "oci"]) == 15
    price, per_gb, url, notes = stored[("gcp", "us-central1", "a2-ultragpu-8g", "on_demand")]
    assert price == pytest.approx(40.550383123) and per_gb == pytest.approx(40.550383123 * USD_CNY / 640)
    assert (
        url
        == "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?pageSize=5000&pageToken=AHn9hGt7rQkYd2vLw0pZc3xF"
    )
    assert notes.startswith("8 × A100 80GB GPU 3.92808 + 96 vCPU × 0.031611")
    assert stored[("gcp", "us-west1", "a2-highgpu-8g", "spot")][0] == pytest.approx(14.4308)
    assert stored[("gcp", "us-central1", "a2-ultragpu-1g", "reserved_3y")][0] == pytest.approx(3.499997559)
    assert stored[("oci", "global", "BM.GPU4.8", "on_demand")][:2] == (24.4, pytest.approx(24.4 * USD_CNY / 320))
    assert stored[("oci", "global", "BM.GPU.A100-v2.8", "on_demand")][0] == 32.0


def test_gpuprice_collect_with_base_url_settings_stores_what_the_local_server_answers(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same as above through the command line and the environment, as a user would run it."""
    replays = [Replay.load(FIXTURES, name) for name in ("gcp", "oci", fx_ecb.NAME)]
    with serve_replay(replays) as server:
        for name in ("GCP", "OCI", "FX"):
            monkeypatch.setenv(f"GPUPRICE_{name}_BASE_URL", server.url)
        monkeypatch.setenv("GPUPRICE_GCP_API_KEY", KEY)
        monkeypatch.setenv("GPUPRICE_EXPORT_DIR", str(settings.export_path))
        status = cli(["collect", "gcp", "oci", "--db", str(settings.db), "--json"])
    runs = {run["provider"]: run for run in json.loads(capsys.readouterr().out)["runs"]}
    assert status == 0 and {p: r["status"] for p, r in runs.items()} == {"fx": "ok", "gcp": "ok", "oci": "ok"}
    store = PriceStore(settings)
    stored = stored_offers(store)
    store.close()
    assert len(stored) == runs["gcp"]["quotes"] + runs["oci"]["quotes"]
    assert len([key for key in stored if key[0] == "gcp"]) == runs["gcp"]["quotes"] == len(GCP_OFFERS)
    assert len([key for key in stored if key[0] == "oci"]) == runs["oci"]["quotes"] == 15
    assert stored[("oci", "global", "BM.GPU4.8", "on_demand")][0] == 24.4
    assert KEY not in json.dumps(runs)
