"""The SkyPilot and gpuhunt catalogs of the providers whose sources publish host shapes (Lambda,
Verda, RunPod, Vast, …), over the offline round of every collector: each read back by column name
(SkyPilot) and by gpuhunt's own reader, prices, GPU fields and shapes compared with `/offers`."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from pricedb import clock
from pricedb.cards import cards_of
from pricedb.formats.exports import write_current_exports
from pricedb.formats.sheet import SHEET_COLUMNS
from pricedb.shapes import HostShape, host_shape
from pricedb.store import PriceStore
from tests.conftest import fixture_bytes

# skypilot-org/skypilot-catalog catalogs/v8/lambda/vms.csv and catalogs/v8/verda/vms.csv headers.
SKYPILOT_LAMBDA = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price", "Region",
                   "GpuInfo", "SpotPrice"]  # fmt: skip
SKYPILOT_VERDA = ["InstanceType", "UpstreamCloudId", "vCPUs", "MemoryGiB", "AcceleratorName", "AcceleratorCount",
                  "GpuInfo", "Region", "Price", "SpotPrice"]  # fmt: skip


@pytest.fixture
def client(offline_store: PriceStore):
    app = create_app(offline_store.settings, store=offline_store, schedule=False)
    with TestClient(app) as test_client:
        yield test_client


def offers(client: TestClient, provider: str) -> list[dict]:
    """What `/offers` says: the figures every catalog must carry."""
    return client.get(f"/offers?provider={provider}&include_unavailable=false&limit=1000").json()["offers"]


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_skypilot_lambda_has_lambdas_columns_prices_and_host_shapes(client: TestClient) -> None:
    response = client.get("/export/skypilot/lambda/vms.csv")
    assert response.status_code == 200 and response.text.splitlines()[0] == ",".join(SKYPILOT_LAMBDA)
    catalog = {(r["InstanceType"], r["Region"]): r for r in rows(response.text)}
    listed = offers(client, "lambda")
    # every card Lambda rents, sold-out left out
    assert set(catalog) == {(o["sku"], o["region"]) for o in listed} and len(catalog) == len(listed) == 16
    cents = json.loads(fixture_bytes("lambda", "instance_types.json"))["data"]
    for offer in listed:
        row = catalog[(offer["sku"], offer["region"])]
        specs = cents[offer["sku"]]["instance_type"]
        assert float(row["Price"]) == specs["price_cents_per_hour"] / 100 == offer["price"]
        assert (float(row["vCPUs"]), float(row["MemoryGiB"])) == (specs["specs"]["vcpus"], specs["specs"]["memory_gib"])
        assert row["SpotPrice"] == "" and float(row["AcceleratorCount"]) == offer["gpu_count"]
    big = catalog[("gpu_8x_a100_80gb_sxm4", "us-midwest-1")]
    assert (big["AcceleratorName"], big["AcceleratorCount"], big["vCPUs"], big["MemoryGiB"]) == (
        "A100-80GB", "8.0", "240.0", "1800.0"
    )  # fmt: skip
    info = ast.literal_eval(big["GpuInfo"])
    assert info["Gpus"][0] == {"Name": "A100-80GB", "Manufacturer": "NVIDIA", "Count": 8.0,
                               "MemoryInfo": {"SizeInMiB": 81920}}  # fmt: skip
    assert info["TotalGpuMemoryInMiB"] == 8 * 81920  # the true total
    assert catalog[("gpu_8x_a100", "us-east-1")]["AcceleratorName"] == "A100"  # 40GB: SkyPilot's bare name


def test_skypilot_verda_merges_spot_and_names_cards_as_skypilot_does(client: TestClient) -> None:
    response = client.get("/export/skypilot/verda/vms.csv")
    assert response.text.splitlines()[0] == ",".join(SKYPILOT_VERDA)
    catalog = {(r["InstanceType"], r["Region"]): r for r in rows(response.text)}
    listed = offers(client, "verda")
    hourly = {(o["sku"], o["region"], o["pricing"]): o for o in listed if o["pricing"] in ("on_demand", "spot")}
    assert set(catalog) == {(sku, region) for sku, region, _ in hourly}
    for (sku, region, pricing), offer in hourly.items():
        row = catalog[(sku, region)]
        assert float(row["Price" if pricing == "on_demand" else "SpotPrice"]) == offer["price"]
        assert (int(float(row["vCPUs"])), float(row["MemoryGiB"])) == (offer["vcpus"], offer["memory_gib"])
        assert row["UpstreamCloudId"] == sku
    one = catalog[("1A100.22V", "FIN-01")]
    assert (one["Price"], one["SpotPrice"], one["vCPUs"], one["MemoryGiB"]) == ("1.16", "0.58", "22.0", "120.0")
    assert (one["AcceleratorName"], one["AcceleratorCount"]) == ("A100-80GB", "1.0")
    info = json.loads(one["GpuInfo"])  # Verda's catalog writes JSON; SkyPilot's literal_eval reads it too
    assert info == ast.literal_eval(one["GpuInfo"])
    assert info == {"Gpus": [{"Name": "A100-80GB", "Count": 1, "MemoryInfo": {"SizeInMiB": 81920}}],
                    "TotalGpuMemoryInMiB": 81920}  # fmt: skip
    small = catalog[("8A100.40S.176V", "FIN-03")]  # 40GB: SkyPilot's own Verda catalog says A100 (fetch_verda.py)
    assert small["AcceleratorName"] == "A100" and json.loads(small["GpuInfo"])["Gpus"][0]["Name"] == "A100"
    assert json.loads(small["GpuInfo"])["TotalGpuMemoryInMiB"] == 8 * 40960


@pytest.mark.parametrize(
    ("cloud", "reason"),
    [
        ("runpod", "no country or data center"),
        ("vast", "median of the matching hosts"),
        ("oci", "availability domain"),
        ("gcp", "separate rows"),
    ],
)
def test_clouds_skypilot_lays_out_differently_are_refused_with_the_reason(
    client: TestClient, cloud: str, reason: str
) -> None:
    response = client.get(f"/export/skypilot/{cloud}/vms.csv")
    assert response.status_code == 404
    assert reason in response.json()["errors"][0]["message"]


def test_gpuhunt_reads_lambda_runpod_and_verda_back_with_its_catalog(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuhunt

    folder = tmp_path / "gpuhunt"
    folder.mkdir()
    lambdalabs = client.get("/export/gpuhunt/lambdalabs.csv")
    ours = client.get("/export/gpuhunt/lambda.csv")
    assert lambdalabs.content == ours.content  # both names, one catalog
    assert ours.headers["content-disposition"] == 'attachment; filename="lambdalabs.csv"'
    for name in ("runpod", "verda"):
        response = client.get(f"/export/gpuhunt/{name}.csv")
        assert response.headers["content-disposition"] == f'attachment; filename="{name}.csv"'
        (folder / f"{name}.csv").write_bytes(response.content)
    (folder / "lambdalabs.csv").write_bytes(lambdalabs.content)
    monkeypatch.setenv("GPUHUNT_CATALOG_DIR", str(folder))
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    for provider, ours_name in (("lambdalabs", "lambda"), ("runpod", "runpod"), ("verda", "verda")):
        items = catalog.query(provider=provider)
        expected = {
            (o["sku"], o["region"], o["pricing"] == "spot"): o
            for o in offers(client, ours_name)
            if o["pricing"] in ("on_demand", "spot")
        }
        assert items and {(i.instance_name, i.location, i.spot) for i in items} == set(expected)
        for item in items:
            offer = expected[(item.instance_name, item.location, item.spot)]
            assert (item.price, item.cpu, item.memory) == (offer["price"], offer["vcpus"], offer["memory_gib"])
            assert (item.gpu_name, item.gpu_count, item.gpu_memory) == (
                cards_of(offer["gpu_model"])[0].gpuhunt_name,  # the name gpuhunt gives the card
                offer["gpu_count"],
                offer["gpu_memory_gb"],
            )
    # gpuhunt's own filters work on RunPod's shapes: a 2-GPU Secure pod has 16 vCPUs and 234 GB.
    pods = catalog.query(provider="runpod", min_cpu=16, max_gpu_count=2, spot=False)
    assert ("NVIDIA A100 80GB PCIe x2 (secure)", 16, 234.0) in {(i.instance_name, i.cpu, i.memory) for i in pods}


def test_gpuhunt_vastai_catalog_reads_back_with_gpuhunts_storage_reader(client: TestClient) -> None:
    from gpuhunt._internal.storage import load

    response = client.get("/export/gpuhunt/vastai.csv")
    assert response.headers["content-disposition"] == 'attachment; filename="vastai.csv"'
    assert client.get("/export/gpuhunt/vast.csv").content == response.content
    items = list(load(io.StringIO(response.text), provider="vastai"))
    expected = {(o["sku"], o["region"], o["pricing"] == "spot"): o for o in offers(client, "vast")}
    assert items and {(i.instance_name, i.location, i.spot) for i in items} == set(expected)
    one = next(i for i in items if (i.instance_name, i.location, i.spot) == ("A100-SXM4-80GB x1", "US", False))
    offer = expected[("A100-SXM4-80GB x1", "US", False)]
    assert (one.price, one.cpu, one.memory, one.gpu_memory) == (offer["price"], 32, 125.0, 80.0)


def test_gpuhunt_names_and_unknown_names(client: TestClient) -> None:
    assert client.get("/export/gpuhunt/datacrunch.csv").content == client.get("/export/gpuhunt/verda.csv").content
    missing = client.get("/export/gpuhunt/nosuch.csv")
    assert missing.status_code == 404 and "lambdalabs" in missing.json()["errors"][0]["message"]


def test_after_run_files_hold_every_catalog_under_gpuhunts_names(
    offline_store: PriceStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuhunt

    paths = write_current_exports(offline_store, offline_store.settings, clock.now())
    folder = offline_store.settings.export_path
    for cloud in ("aws", "azure", "lambda", "verda"):
        assert folder / "skypilot" / cloud / "vms.csv" in paths
    assert not (folder / "skypilot" / "runpod").exists()
    for name in ("lambdalabs", "vastai", "runpod", "verda", "aliyun", "tencent", "autodl", "e2e", "oci"):
        path = folder / "gpuhunt" / f"{name}.csv"
        assert path in paths and len(rows(path.read_text())) > 0, name
    assert not (folder / "gpuhunt" / "lambda.csv").exists()
    monkeypatch.setenv("GPUHUNT_CATALOG_DIR", str(folder / "gpuhunt"))
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    assert all(catalog.query(provider=p) for p in ("lambdalabs", "runpod", "verda", "oci"))
    lambda_rows = rows((folder / "skypilot" / "lambda" / "vms.csv").read_text())
    assert {r["InstanceType"] for r in lambda_rows} >= {"gpu_8x_a100_80gb_sxm4", "gpu_1x_a100_sxm4"}


def test_the_price_sheet_ends_with_the_host_shape_own_first_then_the_table(client: TestClient) -> None:
    assert SHEET_COLUMNS[-4:-2] == ("vcpus", "memory_gib")  # then the GPU slice columns
    sheet = rows(client.get("/export?format=csv&provider=aws,lambda").text)
    by_key = {(r["provider"], r["region"], r["sku"], r["pricing"]): r for r in sheet}
    own = by_key[("lambda", "us-east-1", "gpu_8x_a100", "on_demand")]
    assert (own["vcpus"], own["memory_gib"]) == ("124", "1800")
    spot = next(r for k, r in by_key.items() if k[0] == "aws" and k[3] == "spot")  # spot prices carry no shape
    assert (spot["vcpus"], spot["memory_gib"]) == ("96", "1152")  # … so the table's figures
    listed = client.get("/offers?provider=aws&pricing=spot&limit=1").json()["offers"][0]
    assert (listed["vcpus"], listed["memory_gib"]) == (96, 1152.0)


class _Offer:
    def __init__(self, provider: str, sku: str, vcpus: int | None, memory_gib: float | None) -> None:
        self.provider, self.sku, self.vcpus, self.memory_gib = provider, sku, vcpus, memory_gib


def test_host_shape_prefers_the_source_and_keeps_what_only_the_table_knows() -> None:
    assert host_shape(_Offer("lambda", "gpu_1x_a100", 30, 200.0)) == HostShape(30, 200.0)
    assert host_shape(_Offer("lambda", "gpu_1x_a100", None, None)) is None
    assert host_shape(_Offer("aws", "p4d.24xlarge", None, None)) == HostShape(96, 1152.0)
    azure = host_shape(_Offer("azure", "Standard_NC24ads_A100_v4", 24, 216.0))  # the source wins on figures
    assert azure == HostShape(24, 216.0, generation="V2")
