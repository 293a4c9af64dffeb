"""Writes the E2E Networks plan-API fixture (`fixtures/e2e/plans_delhi.json`) and its replay route.

Run from the repository root: `python tests/fixture_builders/e2e.py`. The envelope and every field name
are those of E2E's own CLI (e2enetworks-oss/e2ectl `src/node/types.ts`, `NodeCatalogPlan`) and of the
example answer in the research notes; values are fixture values except where fixtures/README.md (## e2e)
says otherwise. The pricing page (`pricing.html`) is hand-written and not touched here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from collectors.e2e.collector import PRICING_URL  # noqa: E402
from collectors.e2e.plans_api import plans_url  # noqa: E402

HERE = ROOT / "fixtures" / "e2e"
PLANS_FILE = "plans_delhi.json"


def committed(days: int, sku_id: int, price: float, upto: str) -> dict:
    return {
        "committed_days": days, "committed_sku_id": sku_id,
        "committed_sku_name": f"{days} Days Committed , INR {price:.0f}", "committed_sku_price": price,
        "committed_upto_date": upto, "committed_node_message": "",
    }  # fmt: skip


def plan(name: str, series: str, family: str, cpu: int, ram: str, disk: int, hourly: float, monthly: float,
         terms: list[dict], available: bool | None = True, image: str = "Ubuntu-22.04-GPU", spec_id: str = "1400",
         plan_id: str | None = None) -> dict:  # fmt: skip
    item: dict = {
        "name": name,
        "plan": plan_id or f"{family}-{cpu}vCPU-{ram.split('.')[0]}RAM-{disk}DISK-{name}-{image}-Delhi",
        "image": image,
        "location": "Delhi",
        "currency": "INR",
        "available_inventory_status": available,
        "cpu_type": "vCPU",
        "node_description": "",
        "is_blockstorage_attachable": True,
        "bitninja_discount_percentage": 0,
        "os": {"name": image.split("-")[0], "version": "22.04", "image": image, "category": "Gpu"},
        "specs": {
            "id": spec_id, "sku_name": name, "series": series, "family": family, "cpu": cpu, "ram": ram,
            "disk_space": disk, "price_per_hour": hourly, "price_per_month": monthly, "minimum_billing_amount": 0,
            "committed_sku": terms,
        },
    }  # fmt: skip
    if available is None:
        del item["available_inventory_status"]
    return item


PLANS = [
    # The example answer's two plans (₹226/h for 1×A100 80GB is E2E's published figure).
    plan("GDC3.A10080-16.115GB", "GDC3", "GPU", 16, "115.00", 1500, 226, 164980,
         [committed(30, 3101, 140000, "2027-01-01"), committed(90, 3102, 400000, "2027-03-01"),
          committed(365, 3103, 1500000, "2027-12-01")]),
    plan("GDC-A.A100-1.120GB", "GDC", "GPU", 32, "120.00", 900, 220, 160600, [], available=False, spec_id="1401",
         plan_id="GDC-1xA100-Ubuntu-Delhi"),
    # The same A100 80GB plan again, for another OS image: one offer, the first kept.
    plan("GDC3.A10080-16.115GB", "GDC3", "GPU", 16, "115.00", 1500, 226, 164980, [], image="Ubuntu-24.04-GPU"),
    plan("GDC3.8xA10080-128.920GB", "GDC3", "GPU", 128, "920.00", 12000, 1808, 1319840,
         [committed(30, 3111, 1120000, "2027-01-01"), committed(365, 3113, 12000000, "2027-12-01")], spec_id="1408"),
    plan("GDC-A.H100-1.120GB", "GDC", "GPU", 32, "120.00", 900, 334, 243820,
         [committed(90, 3122, 620000, "2027-03-01")], spec_id="1410"),
    plan("GDC.L40S-25.220GB", "GDC", "GPU", 25, "220.00", 250, 102, 74460,
         [committed(30, 3131, 65000, "2027-01-01")], available=None, spec_id="1420"),
    # The same L40S plan on a Windows image: the OS licence is in its price, so it is left out.
    plan("GDC.L40S-25.220GB", "GDC", "GPU", 25, "220.00", 250, 118, 86140, [], image="Windows-2022-GPU"),
    plan("GDC.2xA30-32.180GB", "GDC", "GPU", 32, "180.00", 1280, 130, 94900, [], spec_id="1430"),
    # A 1095-day term (reserved 3y), and a plan sold only on commitment (no hourly price: 0 is no price).
    plan("GDC4.H200-30.375GB", "GDC4", "GPU", 30, "375.00", 2000, 300, 219000,
         [committed(30, 3141, 195000, "2027-01-01"), committed(1095, 3144, 5900000, "2029-12-01")], spec_id="1450"),
    plan("GDC.T4-8.30GB", "GDC", "GPU", 8, "30.00", 250, 0, 0, [committed(30, 3151, 19500, "2027-01-01")],
         spec_id="1460"),
    plan("GDC.RTX3080-8.30GB", "GDC", "GPU", 8, "30.00", 250, 20, 14600, [], spec_id="1440"),
    # A CPU plan in a GPU answer: not an offer of a GPU.
    plan("C3.8GB", "C3", "General Purpose", 4, "8", 80, 8.5, 6100, [], image="Ubuntu-22.04", spec_id="200"),
]  # fmt: skip


def main() -> None:
    body = {"code": 200, "data": PLANS, "errors": {}, "message": "Success"}
    (HERE / PLANS_FILE).write_text(json.dumps(body, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    routes = [
        {"method": "GET", "url": PRICING_URL, "file": "pricing.html", "content_type": "text/html; charset=utf-8"},
        {
            "method": "GET",
            "url": plans_url("Delhi"),
            "ignore_params": ["apikey", "project_id"],
            "file": PLANS_FILE,
            "content_type": "application/json",
        },
    ]
    (HERE / "replay.json").write_text(json.dumps({"routes": routes}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
