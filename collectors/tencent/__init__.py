"""Tencent Cloud: GPU prices and stock of CVM instance types from the CVM API (version 2017-03-12).

Source: `DescribeZoneInstanceConfigInfos` at https://cvm.tencentcloudapi.com/ (POST, JSON body, signed
with TC3-HMAC-SHA256 from the user's SecretId/SecretKey), one call per region and charge type,
filtered to the GPU instance families (collectors.tencent.instance_types). Its answer lists, per
zone, each instance type with its GPU count, sell status and price block (API reference: https://cloud.tencent.com/document/product/213/17378,
English https://www.tencentcloud.com/document/api/213/33254; field meanings as in the SDK's
`tencentcloud/cvm/v20170312/models.py`, `InstanceTypeQuotaItem` and `ItemPrice`). Rate limit: 40 calls/s.

- `tc3`: the signature, over the request as sent (base-URL rewriting included);
- `api`: the request, credentials (`TENCENTCLOUD_SECRET_ID`/`TENCENTCLOUD_SECRET_KEY`, or
  `GPUPRICE_TENCENT_SECRET_ID`/`GPUPRICE_TENCENT_SECRET_KEY`; none → the run is skipped) and API errors
  (HTTP 200 with `Response.Error`; `AuthFailure.*` → a message about the keys);
- `instance_types`: family → card (the items name no GPU model), from Tencent's GPU instance pages;
- `items`: the card and count of each item (a vGPU slice marked as one), prices and stock → quotes;
  families whose card or memory is not published (HCCPNV4h) counted in the run's notes, never guessed;
- `collector`: `TencentCollector`, scopes `list` (every 6 h: on-demand, monthly, 1- and 3-year
  subscriptions) and `spot` (hourly), regions from `GPUPRICE_TENCENT_REGIONS` (default ap-beijing,
  ap-shanghai, ap-guangzhou: where GT4 is sold), every URL rewritable with `GPUPRICE_TENCENT_BASE_URL`.

What is taken: `POSTPAID_BY_HOUR` → `on_demand`, `SPOTPAID` → `spot` (CNY per hour, discounted price
as `price`, list price as `list_price`, stepped prices after 96 h / 360 h as `price_steps`); `PREPAID`
→ `monthly` (CNY per month), and its one- and three-year subscription prices → `reserved_1y` /
`reserved_3y` (whole-term prices). `Status` SOLD_OUT → `availability` sold_out (kept, not dropped).

Traps: dedicated-host billing (`CDHPAID`) is never asked for (an item of another charge type than
asked is a ParseError); vGPU sizes (GN7.LARGE20 = 1/4 T4) are slices (`gpu_fraction`), not whole cards.

Quirks: the region is only in the `X-TC-Region` header; errors come back with HTTP 200; price fields
are 0 or null when not applicable and sometimes numeric strings; one item per zone (folded into one
offer per region); billing is per second, settled hourly. Prices are read as CNY: the API answers in
the account's billing currency, which is CNY for China-site (cloud.tencent.com) accounts; an
international-site account (endpoint cvm.intl.tencentcloudapi.com, billed in USD) is not supported.
Offline (`--offline`), placeholder keys sign the requests answered from fixtures/tencent.
"""

from collectors.tencent.collector import TencentCollector

__all__ = ["TencentCollector"]
