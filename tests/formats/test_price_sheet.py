"""`/export` in every format with the contract's columns, caching validators, day snapshots, and
the SkyPilot and gpuhunt catalogs read back by a CSV reader by column name and by gpuhunt itself."""

from __future__ import annotations

import ast
import csv
import io
import json
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient

from api.cli import main as cli
from pricedb.formats.exports import write_current_exports
from pricedb.formats.sheet import SHEET_COLUMNS
from pricedb.models import Availability, InstanceZone, Pricing, RunStatus, Unit
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import SeededStore
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

# skypilot-org/skypilot sky/catalog/data_fetchers/fetch_aws.py and fetch_azure.py USEFUL_COLUMNS.
SKYPILOT_AWS = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
                "SpotPrice", "Region", "AvailabilityZone", "Arch", "LocalDiskType", "NVMeSupported", "LocalDiskSize",
                "LocalDiskCount", "MaximumEfaInterfaces"]  # fmt: skip
SKYPILOT_AZURE = ["InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo", "Price",
                  "SpotPrice", "Region", "Generation"]  # fmt: skip


def _seed(store: PriceStore) -> None:
    seed_fx(store)  # 1 USD = ¥7 = 1 EUR
    store.record_run(
        make_run(
            "aws",
            [
                make_quote(),  # p4d 8×40GB 21.957642 USD/h
                make_quote(pricing=Pricing.SPOT, price=8.1915, notes="cheapest of 2 zones: us-east-1a (use1-az2)"),
                make_quote(sku="p4de.24xlarge", gpu_memory_gb=80.0, price=27.44705),
                make_quote(sku="p4de.24xlarge", gpu_memory_gb=80.0, price=17.4, pricing=Pricing.RESERVED_1Y),
                make_quote(region="us-west-2", pricing=Pricing.SPOT, price=7.9992,  # spot only in this region
                           notes="only zone: us-west-2b (usw2-az1)"),
                make_quote(sku="p5.48xlarge", gpu_memory_gb=80.0, price=55.04),  # host shape not in the table
            ],
            zones={"us-east-1": [InstanceZone("us-east-1", "p4d.24xlarge", "use1-az1"),
                                 InstanceZone("us-east-1", "p4d.24xlarge", "use1-az2"),
                                 InstanceZone("us-east-1", "p4de.24xlarge", "use1-az4"),
                                 InstanceZone("us-east-1", "p5.48xlarge", "use1-az1")],
                   "us-west-2": [InstanceZone("us-west-2", "p4d.24xlarge", "usw2-az1")]},
        )
    )  # fmt: skip
    store.record_run(
        make_run(
            "azure",
            [
                make_quote(provider="azure", region="eastus", sku="Standard_NC24ads_A100_v4", gpu_count=1,
                           gpu_memory_gb=80.0, price=3.5, currency="EUR"),
                make_quote(provider="azure", region="eastus", sku="Standard_NC48ads_A100_v4", gpu_count=2,
                           gpu_memory_gb=80.0, price=7.346, availability=Availability.SOLD_OUT),
                make_quote(provider="azure", region="eastus", sku="Standard_ND96amsr_A100_v4", gpu_memory_gb=80.0,
                           price=183722.0, pricing=Pricing.RESERVED_1Y, unit=Unit.TERM, term_hours=8760.0),
            ],
        )
    )  # fmt: skip


@pytest.fixture
def seeded(store_seeded_by: SeededStore) -> PriceStore:
    return store_seeded_by(_seed)


@pytest.fixture
def client(seeded: PriceStore, settings: Settings):
    with serving(settings, seeded, NOW + timedelta(minutes=5)) as test_client:
        yield test_client


def test_csv_is_spreadsheet_safe_with_the_contract_columns(client: TestClient, settings: Settings, seeded) -> None:
    response = client.get("/export?format=csv")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="gpuprice-offers.csv"'
    lines = response.text.splitlines()
    assert lines[0] == ",".join(SHEET_COLUMNS)
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 9 and sum(line.startswith("provider,") for line in lines) == 1
    p4d = next(
        r for r in rows if r["sku"] == "p4d.24xlarge" and r["pricing"] == "on_demand" and r["region"] == "us-east-1"
    )
    assert p4d["price"] == "21.957642" and p4d["cny_per_gb_hour"] == f"{21.957642 * 7 / 320:.10f}".rstrip("0")
    assert p4d["observed_at"] == "2026-11-29T08:00:00Z" and p4d["fx_date"] == "2026-11-29" and p4d["stale"] == "false"
    for row in rows:
        assert not any(cell.startswith(("{", "[")) for cell in row.values())  # no JSON in cells
        assert "," not in row["price"] and float(row["price"]) > 0  # dot decimals, no thousands separators
    # The file written after each run comes from the same writer: same bytes for the same data.
    write_current_exports(seeded, settings, NOW + timedelta(minutes=5))
    assert (settings.export_path / "offers.csv").read_text() == response.text


def test_json_ndjson_and_parquet_keep_the_column_order(client: TestClient, tmp_path: Path) -> None:
    as_json = client.get("/export?format=json&provider=azure").json()
    assert [list(row) for row in as_json] == [list(SHEET_COLUMNS)] * 3
    assert as_json[0]["gpu_memory_gb"] == 80.0 and as_json[0]["fx_date"] == "2026-11-29"
    ndjson = client.get("/export?format=ndjson&provider=azure")
    assert ndjson.headers["content-type"] == "application/x-ndjson"
    assert [json.loads(line) for line in ndjson.text.splitlines()] == as_json
    parquet = client.get("/export?format=parquet")
    assert parquet.headers["content-disposition"] == 'attachment; filename="gpuprice-offers.parquet"'
    conn = duckdb.connect()
    (tmp_path / "sheet.parquet").write_bytes(parquet.content)
    conn.execute("CREATE TABLE sheet AS SELECT * FROM read_parquet(?)", [str(tmp_path / "sheet.parquet")])
    assert [c[0] for c in conn.execute("DESCRIBE sheet").fetchall()] == list(SHEET_COLUMNS)
    assert conn.execute("SELECT count(*), sum(price) FILTER (WHERE sku = 'p4d.24xlarge') FROM sheet").fetchone() == (
        9,
        pytest.approx(21.957642 + 8.1915 + 7.9992),
    )


def test_parquet_observed_at_is_a_utc_instant_like_the_csvs(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "sheet.parquet"
    path.write_bytes(client.get("/export?format=parquet&provider=aws").content)
    conn = duckdb.connect()
    conn.execute("SET TimeZone = 'Asia/Shanghai'")  # the reader's zone must not move the instant
    (logical,) = conn.execute(
        "SELECT logical_type FROM parquet_schema(?) WHERE name = 'observed_at'", [str(path)]
    ).fetchone()
    assert "isAdjustedToUTC=1" in logical.replace(" ", "")  # Parquet's TIMESTAMP(isAdjustedToUTC=true)
    stamps = conn.execute(
        "SELECT sku, pricing, region, strftime(observed_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') "
        "FROM read_parquet(?)",
        [str(path)],
    ).fetchall()
    sheet = csv.DictReader(io.StringIO(client.get("/export?format=csv&provider=aws").text))
    assert sorted(stamps) == sorted((r["sku"], r["pricing"], r["region"], r["observed_at"]) for r in sheet)


def test_validators_follow_the_data(client: TestClient, seeded: PriceStore) -> None:
    first = client.get("/export?format=csv&provider=aws")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert modified == "Sun, 29 Nov 2026 08:00:00 GMT"
    head = client.head("/export?format=csv&provider=aws")
    assert head.status_code == 200 and head.headers["etag"] == etag and head.content == b""
    again = client.get("/export?format=csv&provider=aws", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    later = NOW + timedelta(minutes=1)
    seeded.record_run(make_run("aws", [make_quote(price=20.5, observed_at=later)], finished_at=later,
                               pricings=frozenset({Pricing.ON_DEMAND})))  # fmt: skip
    changed = client.get("/export?format=csv&provider=aws", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag and "20.5" in changed.text
    assert changed.headers["last-modified"] == "Sun, 29 Nov 2026 08:01:00 GMT"


def test_a_days_snapshot(client: TestClient, seeded: PriceStore) -> None:
    later = NOW + timedelta(days=0, minutes=2)
    seeded.record_run(make_run("azure", [], status=RunStatus.FAILED, error="HTTP 500", finished_at=later))
    day = client.get("/export?format=json&date=2026-11-29&provider=azure").json()
    assert len(day) == 3 and all(row["stale"] for row in day)  # a failed run withdraws nothing
    before = client.get("/export?format=csv&date=2026-11-28")
    assert before.text == ",".join(SHEET_COLUMNS) + "\n"
    assert before.headers["content-disposition"] == 'attachment; filename="gpuprice-offers-2026-11-28.csv"'
    assert "last-modified" not in before.headers  # no run had landed by then


@pytest.mark.parametrize(
    ("url", "status", "parameter", "message"),
    [
        ("/export?format=xlsx", 422, "format", "'csv', 'json', 'ndjson' or 'parquet'"),
        ("/export?date=2026-11-31", 422, "date", "not a date"),
        ("/export?date=2027-01-01", 422, "date", "in the future"),
        ("/export?provider=nosuch", 422, "provider", "unknown provider"),
        ("/export/skypilot/nosuch/vms.csv", 404, "cloud", "unknown SkyPilot cloud 'nosuch'"),
        ("/export/skypilot/gcp/vms.csv", 404, "cloud", "separate rows"),
        ("/export/gpuhunt/nosuch.csv", 404, "provider", "unknown provider 'nosuch'"),
        ("/export/gpuhunt/aws.csv?date=tomorrow", 422, "date", "not a date"),
    ],
)
def test_export_errors_use_the_error_shape(client: TestClient, url: str, status: int, parameter: str, message: str):
    response = client.get(url)
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"status", "error", "message", "errors"} and body["status"] == status
    problem = next(p for p in body["errors"] if p["parameter"] == parameter)
    assert message in problem["message"]


def test_skypilot_vms_csv_reads_back_by_column_name(client: TestClient) -> None:
    response = client.get("/export/skypilot/aws/vms.csv")
    assert response.headers["content-disposition"] == 'attachment; filename="vms.csv"'
    reader = csv.DictReader(io.StringIO(response.text))
    assert reader.fieldnames == SKYPILOT_AWS
    rows = {(r["InstanceType"], r["Region"], r["AvailabilityZone"]): r for r in reader}
    # One row per (instance type, zone ID): on-demand and spot merged; reserved offers are not SkyPilot's.
    assert set(rows) == {("p4d.24xlarge", "us-east-1", "use1-az1"), ("p4d.24xlarge", "us-east-1", "use1-az2"),
                         ("p4de.24xlarge", "us-east-1", "use1-az4"), ("p4d.24xlarge", "us-west-2", "usw2-az1"),
                         ("p5.48xlarge", "us-east-1", "use1-az1")}  # fmt: skip
    cheapest, other = rows[("p4d.24xlarge", "us-east-1", "use1-az2")], rows[("p4d.24xlarge", "us-east-1", "use1-az1")]
    assert float(cheapest["Price"]) == float(other["Price"]) == 21.957642  # on-demand: the region's, every zone
    assert float(cheapest["SpotPrice"]) == 8.1915 and other["SpotPrice"] == ""  # spot: the zone the offer names
    p4d = cheapest
    assert (p4d["AcceleratorName"], float(p4d["AcceleratorCount"]), float(p4d["vCPUs"]), float(p4d["MemoryGiB"])) == (
        "A100", 8.0, 96.0, 1152.0
    )  # fmt: skip
    assert [p4d[c] for c in SKYPILOT_AWS[-5:]] == ["ssd", "True", "1000.0", "8.0", "4.0"]  # disks and EFA
    info = ast.literal_eval(p4d["GpuInfo"])  # how SkyPilot's list_accelerators reads it
    assert info["Gpus"][0]["MemoryInfo"]["SizeInMiB"] == 40960 and info["TotalGpuMemoryInMiB"] == 8 * 40960
    assert info["Gpus"][0]["Count"] == 8 and info["Gpus"][0]["Name"] == "A100"
    p4de = rows[("p4de.24xlarge", "us-east-1", "use1-az4")]
    assert p4de["AcceleratorName"] == "A100-80GB" and p4de["SpotPrice"] == ""  # no spot price: empty
    assert ast.literal_eval(p4de["GpuInfo"])["TotalGpuMemoryInMiB"] == 8 * 81920
    west = rows[("p4d.24xlarge", "us-west-2", "usw2-az1")]
    assert west["Price"] == "" and float(west["SpotPrice"]) == 7.9992
    p5 = rows[("p5.48xlarge", "us-east-1", "use1-az1")]
    assert p5["vCPUs"] == "" and p5["LocalDiskType"] == ""  # unknown host shape and disks: empty, not guessed
    assert "vCPUs and MemoryGiB empty" in response.headers["x-gpuprice-notes"]


def test_without_aws_zones_the_aws_catalog_is_refused_with_the_reason(store: PriceStore, settings: Settings) -> None:
    seed_fx(store)
    store.record_run(make_run("aws", [make_quote()]))  # collected without credentials: no zones
    with serving(settings, store, NOW + timedelta(minutes=5)) as client:
        response = client.get("/export/skypilot/aws/vms.csv")
    assert response.status_code == 404
    message = response.json()["errors"][0]["message"]
    assert "availability zones" in message and "DescribeInstanceTypeOfferings" in message and "credentials" in message
    folder = settings.export_path
    (folder / "skypilot" / "aws").mkdir(parents=True)
    (folder / "skypilot" / "aws" / "vms.csv").write_text("an older catalog\n")
    paths = write_current_exports(store, settings, NOW + timedelta(minutes=5))
    assert (
        folder / "skypilot" / "aws" / "vms.csv" not in paths and not (folder / "skypilot" / "aws" / "vms.csv").exists()
    )
    assert "AWS credentials" in (folder / "skypilot" / "aws" / "NOT_WRITTEN.txt").read_text()
    assert (folder / "skypilot" / "lambda" / "vms.csv").exists()  # the other clouds' catalogs are written


def test_skypilot_azure_layout_converts_non_usd_and_leaves_out_sold_out(client: TestClient) -> None:
    response = client.get("/export/skypilot/azure/vms.csv")
    reader = csv.DictReader(io.StringIO(response.text))
    assert reader.fieldnames == SKYPILOT_AZURE
    [row] = list(reader)  # the sold-out NC48 is left out by default, the reservation is not hourly
    assert row["InstanceType"] == "Standard_NC24ads_A100_v4" and row["AcceleratorName"] == "A100-80GB"
    assert float(row["Price"]) == pytest.approx(3.5)  # 3.5 EUR = ¥24.5 = 3.5 USD with the seeded rates
    assert row["AcceleratorCount"] == "1" and row["Generation"] == "V2"
    assert "converted to USD per hour via CNY" in response.headers["x-gpuprice-notes"]
    with_sold_out = client.get("/export/skypilot/azure/vms.csv?include_unavailable=true").text
    assert "Standard_NC48ads_A100_v4" in with_sold_out


def test_gpuhunt_reads_its_catalog_back_with_its_own_reader(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuhunt
    from gpuhunt._internal.storage import CATALOG_V2_FIELDS

    response = client.get("/export/gpuhunt/aws.csv")
    assert response.text.splitlines()[0] == ",".join(CATALOG_V2_FIELDS)
    assert "1 offers left out: their vCPU/RAM shape is unknown" in response.headers["x-gpuprice-notes"]
    catalog_dir = tmp_path / "gpuhunt"
    catalog_dir.mkdir()
    (catalog_dir / "aws.csv").write_bytes(response.content)
    (catalog_dir / "azure.csv").write_bytes(client.get("/export/gpuhunt/azure.csv").content)
    monkeypatch.setenv("GPUHUNT_CATALOG_DIR", str(catalog_dir))
    items = gpuhunt.Catalog(balance_resources=False, auto_reload=False).query(provider=["aws", "azure"])
    found = {(i.provider, i.instance_name, i.location, i.spot): i for i in items}
    assert set(found) == {
        ("aws", "p4d.24xlarge", "us-east-1", False), ("aws", "p4d.24xlarge", "us-east-1", True),
        ("aws", "p4de.24xlarge", "us-east-1", False), ("aws", "p4d.24xlarge", "us-west-2", True),
        ("azure", "Standard_NC24ads_A100_v4", "eastus", False),
    }  # fmt: skip
    p4d = found[("aws", "p4d.24xlarge", "us-east-1", False)]
    assert (p4d.price, p4d.gpu_count, p4d.gpu_name, p4d.gpu_memory, p4d.cpu, p4d.memory) == (
        21.957642, 8, "A100", 40.0, 96, 1152.0
    )  # fmt: skip
    assert p4d.gpu_vendor == gpuhunt.AcceleratorVendor.NVIDIA and p4d.cpu_arch.value == "x86"
    assert found[("aws", "p4d.24xlarge", "us-east-1", True)].price == 8.1915
    assert found[("aws", "p4de.24xlarge", "us-east-1", False)].gpu_memory == 80.0
    assert found[("azure", "Standard_NC24ads_A100_v4", "eastus", False)].price == pytest.approx(3.5)
    # gpuhunt's own filters work on it: at least 60 GB per GPU, on-demand only.
    big = gpuhunt.Catalog(balance_resources=False, auto_reload=False).query(
        provider="aws", min_gpu_memory=60, spot=False
    )
    assert [(i.instance_name, i.price) for i in big] == [("p4de.24xlarge", 27.44705)]


def test_after_run_files_include_the_catalogs(seeded: PriceStore, settings: Settings, monkeypatch) -> None:
    import gpuhunt

    paths = write_current_exports(seeded, settings, NOW + timedelta(minutes=5))
    folder = settings.export_path
    assert folder / "skypilot" / "aws" / "vms.csv" in paths and folder / "gpuhunt" / "azure.csv" in paths
    monkeypatch.setenv("GPUHUNT_CATALOG_DIR", str(folder / "gpuhunt"))
    items = gpuhunt.Catalog(balance_resources=False, auto_reload=False).query(provider="aws")
    assert len(items) == 4


def test_cli_export(
    seeded: PriceStore, settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str], frozen_clock: datetime
) -> None:
    seeded.close()
    db = str(settings.db)
    assert cli(["export", "--db", db, "--provider", "azure"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == ",".join(SHEET_COLUMNS)
    out = tmp_path / "sheet.parquet"
    assert cli(["export", "--db", db, "--format", "parquet", "--output", str(out)]) == 0
    assert out.read_bytes()[:4] == b"PAR1"
    capsys.readouterr()
    assert cli(["export", "--db", db, "--gpuhunt", "aws"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("instance_name,location,price,cpu,memory,") and "left out" in captured.err
    assert cli(["export", "--db", db, "--skypilot", "oracle"]) == 2
    assert "unknown SkyPilot cloud" in capsys.readouterr().err
    assert cli(["export", "--db", db, "--date", "2026-11-29", "--format", "ndjson"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 9
