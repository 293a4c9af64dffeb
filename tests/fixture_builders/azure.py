"""Writes the Retail Prices pages of fixtures/azure (run: .venv/bin/python tests/fixture_builders/azure.py).

Pages 1–3 keep their items as written on 2026-11-29 (the A100 sizes and their traps, described in
fixtures/README.md); only their `NextPageLink`s are rewritten for the collector's current `$filter`.
Page 4 is generated from `OTHER_GPUS` below: every other GPU series, in the API's item layout.
fixtures/README.md (## azure) says where each value comes from; values marked TRAP exist only to be
filtered out.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "fixtures" / "azure"
sys.path.insert(0, str(ROOT))  # the first page's URL is the collector's own

from collectors.azure.query import first_page_url, odata_filter  # noqa: E402

KEPT_PAGES = 3  # pages whose items are kept as they are
PAGE_SIZE = 100  # the default API version's page size with a filter: NextPageLink adds $skip by 100
LOCATIONS = {
    "eastus": "US East",
    "eastus2": "US East 2",
    "southcentralus": "US South Central",
    "westus2": "US West 2",
    "westus3": "US West 3",
}
SERVICE_ID = "DZH313Z7MMC8"  # Virtual Machines (real)
METER_NAMESPACE = uuid.UUID("6c1f7a52-3d7e-4c55-9b58-2f1d0c9a4e71")  # placeholder meter ids: UUIDv5 under this

# (armSkuName, region, product, skuName / meterName, type, price, effectiveStartDate); see fixtures/README.md.
OTHER_GPUS = [
    # Recorded eastus rows (SheetalTewatia/...@12c2efb3 tests/fixtures/azure_retail_prices_gpu_eastus.json).
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series", "NC4as T4 v3", "Consumption", 0.526,
     "2021-11-01"),
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series", "NC4as T4 v3 Spot", "Consumption",
     0.149174, "2026-09-01"),
    # TRAP (recorded): Low Priority, and the Windows product's on-demand, spot and low-priority meters.
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series", "NC4as T4 v3 Low Priority",
     "Consumption", 0.105, "2021-11-01"),
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series Windows", "NC4as T4 v3", "Consumption",
     0.71, "2021-11-01"),
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series Windows", "NC4as T4 v3 Spot",
     "Consumption", 0.201356, "2026-09-01"),
    ("Standard_NC4as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series Windows", "NC4as T4 v3 Low Priority",
     "Consumption", 0.284, "2021-11-01"),
    # On-demand Linux prices from skypilot-catalog catalogs/v6/azure/vms.csv @ 098741e7 (names constructed).
    ("Standard_ND96isr_H100_v5", "eastus", "Virtual Machines NDisr H100 v5 Series", "ND96isr H100 v5", "Consumption",
     98.32, "2023-08-01"),
    ("Standard_NC40ads_H100_v5", "eastus2", "Virtual Machines NCadsH100v5 Series", "NC40ads H100 v5", "Consumption",
     6.98, "2023-11-01"),
    ("Standard_NC40ads_H100_v5", "southcentralus", "Virtual Machines NCadsH100v5 Series", "NC40ads H100 v5",
     "Consumption", 8.38, "2023-11-01"),
    ("Standard_NC80adis_H100_v5", "eastus", "Virtual Machines NCadsH100v5 Series", "NC80adis H100 v5", "Consumption",
     13.96, "2023-11-01"),
    ("Standard_NCC40ads_H100_v5", "eastus2", "Virtual Machines NCCadsH100v5 Series", "NCC40ads H100 v5",
     "Consumption", 6.98, "2023-11-01"),
    # TRAP: a Windows product named the short way ("… Srs Win", as SkyPilot's fetcher meets it; placeholder price).
    ("Standard_NCC40ads_H100_v5", "eastus2", "Virtual Machines NCCadsv5 Srs Win", "NCC40ads H100 v5", "Consumption",
     7.42, "2023-11-01"),
    ("Standard_NC64as_T4_v3", "eastus", "Virtual Machines NCasT4 v3 Series", "NC64as T4 v3", "Consumption", 4.352,
     "2021-11-01"),
    ("Standard_NC6s_v3", "eastus", "Virtual Machines NCSv3 Series", "NC6s v3", "Consumption", 3.06, "2018-01-01"),
    ("Standard_NC24s_v3", "eastus", "Virtual Machines NCSv3 Series", "NC24s v3", "Consumption", 12.24, "2018-01-01"),
    ("Standard_NC24rs_v3", "eastus", "Virtual Machines NCSv3 Series", "NC24rs v3", "Consumption", 13.46,
     "2018-01-01"),
    ("Standard_ND40rs_v2", "eastus", "Virtual Machines NDSv2 Series", "ND40rs v2", "Consumption", 22.032,
     "2019-06-01"),
    ("Standard_NV12s_v3", "eastus", "Virtual Machines NVSv3 Series", "NV12s v3", "Consumption", 1.14, "2019-01-01"),
    ("Standard_NV48s_v3", "eastus", "Virtual Machines NVSv3 Series", "NV48s v3", "Consumption", 4.56, "2019-01-01"),
    ("Standard_NV32as_v4", "eastus", "Virtual Machines NVasv4 Series", "NV32as v4", "Consumption", 1.864,
     "2020-06-01"),
    ("Standard_NV36ads_A10_v5", "eastus", "Virtual Machines NVadsA10v5 Series", "NV36ads A10 v5", "Consumption", 3.2,
     "2022-06-01"),
    ("Standard_NV36adms_A10_v5", "eastus", "Virtual Machines NVadsA10v5 Series", "NV36adms A10 v5", "Consumption",
     4.52, "2022-06-01"),
    ("Standard_NV72ads_A10_v5", "eastus", "Virtual Machines NVadsA10v5 Series", "NV72ads A10 v5", "Consumption",
     6.52, "2022-06-01"),
    ("Standard_NC6", "westus2", "Virtual Machines NC Series", "NC6", "Consumption", 0.9, "2016-10-01"),
    # TRAP (real prices, same catalogue): 1/8 of an MI25 (fractional), an AMD V620 the card table does not
    # know, an FPGA size (NP), an A10 v4 size whose share of the A10 is unverified, a _Promo size.
    ("Standard_NV4as_v4", "eastus", "Virtual Machines NVasv4 Series", "NV4as v4", "Consumption", 0.233, "2020-06-01"),
    ("Standard_NG8ads_V620_v1", "eastus2", "Virtual Machines NGadsV620v1 Series", "NG8ads V620 v1", "Consumption",
     0.908, "2023-06-01"),
    ("Standard_NP10s", "eastus", "Virtual Machines NP Series", "NP10s", "Consumption", 1.65, "2021-06-01"),
    ("Standard_NC8ads_A10_v4", "westus3", "Virtual Machines NCadsA10v4 Series", "NC8ads A10 v4", "Consumption", 1.1,
     "2022-11-01"),
    ("Standard_NC6_Promo", "westus2", "Virtual Machines NC Promo Series", "NC6 Promo", "Consumption", 0.18,
     "2017-06-01"),
]  # fmt: skip


def item(arm: str, region: str, product: str, meter: str, kind: str, price: float, start: str) -> dict:
    product_id = "DZH318Z0" + arm.removeprefix("Standard_").replace("_", "")[:4].upper().ljust(4, "0")
    return {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": region,
        "location": LOCATIONS[region],
        "effectiveStartDate": f"{start}T00:00:00Z",
        "meterId": str(uuid.uuid5(METER_NAMESPACE, f"{arm}/{region}/{meter}")),
        "meterName": meter,
        "productId": product_id,
        "skuId": f"{product_id}/{'0002' if ' Spot' in meter or ' Low' in meter else '0001'}",
        "productName": product,
        "skuName": meter,
        "serviceName": "Virtual Machines",
        "serviceId": SERVICE_ID,
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": kind,
        "isPrimaryMeterRegion": True,
        "armSkuName": arm,
    }


def page_url(number: int) -> str:
    """The page's URL as the API links it: absolute, `:443`, the filter as first sent, `$skip` appended."""
    first = first_page_url(odata_filter())
    if number == 1:
        return first
    return first.replace("prices.azure.com/", "prices.azure.com:443/") + f"&$skip={PAGE_SIZE * (number - 1)}"


def main() -> None:
    items = [json.loads((HERE / f"retail_prices_page{n}.json").read_text())["Items"] for n in range(1, KEPT_PAGES + 1)]
    items.append([item(*row) for row in OTHER_GPUS])
    routes = []
    for number, page_items in enumerate(items, 1):
        last = number == len(items)
        body = {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": page_items,
            "NextPageLink": None if last else page_url(number + 1),
            "Count": len(page_items),
        }
        name = f"retail_prices_page{number}.json"
        (HERE / name).write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        routes.append(
            {"method": "GET", "url": page_url(number), "file": name, "content_type": "application/json; charset=utf-8"}
        )
    (HERE / "replay.json").write_text(json.dumps({"routes": routes}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
