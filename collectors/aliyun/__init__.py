"""Alibaba Cloud (aliyun.com, mainland China): every ECS instance type with a GPU (gn5 P100, gn6i T4,
gn6v/gn6e V100, gn7 A100 40GB, gn7e A100 80GB, gn7i A10, gn7s, gn8is, ebmgn*, …; the card as the API
states it), from the ECS OpenAPI (version 2014-05-26, RPC style) at
https://ecs.{region}.aliyuncs.com/ — signed with the user's AccessKey pair (signature V3,
ACS3-HMAC-SHA256, computed by Alibaba Cloud's `alibabacloud_openapi_util`), sent through `Http`, so
`GPUPRICE_ALIYUN_BASE_URL` can point every call at a mirror or a local stand-in.

Calls (API reference: DescribePrice https://help.aliyun.com/document_detail/107829.html, and its siblings
DescribeInstanceTypes, DescribeAvailableResource in the same ECS API reference):
- `DescribeInstanceTypes` (`MinimumGPUAmount=1`, `NextToken` paging): which GPU types exist, with GPU
  count (`GPUAmount`), model (`GPUSpec`) and memory per GPU (`GPUMemorySize`, GiB) — the card is read
  from the answer through the card table, never from the type's name (collectors.aliyun.instance_types
  adds only what the answer does not say: vGPU slice families, the A100 boards' form factor). vGPU
  slices (ecs.vgn*/ecs.sgn*) and cards the table does not know are named in the run's notes and not
  priced;
- `DescribeAvailableResource` (`DestinationResource=InstanceType`, per region and charge type:
  `InstanceChargeType` PostPaid / PrePaid, and PostPaid + `SpotStrategy=SpotAsPriceGo` for spot):
  which types each zone sells and its stock (`StatusCategory` WithStock / ClosedWithStock = available;
  WithoutStock / ClosedWithoutStock, or `Status` SoldOut = sold out). A type that some zone lists
  but none has in stock is still priced and stored with `availability=sold_out`; a type no zone lists
  is not sold in that region;
- `DescribePrice` (`ResourceType=instance`, `InstanceType`): `PriceUnit=Hour` → `on_demand`;
  `PriceUnit=Month`, `Period=1` → `monthly` (a 1-month subscription, 包年包月; the API has no
  `InstanceChargeType` parameter, `PriceUnit` selects subscription pricing); `SpotStrategy=SpotAsPriceGo`
  with `ZoneId` → `spot` (spot prices differ by zone: each zone with stock is priced and the cheapest
  kept; a type no zone has in stock is priced in one listed zone and kept as sold out). No `ImageId`
  is sent, so prices are for Linux images (the API's default; a Windows licence costs extra).

What is taken from DescribePrice: the `InstanceType` entry of `PriceInfo.Price.DetailInfos` — its
`TradePrice` (after discounts) as the price, its `OriginalPrice` as `list_price` — so the price is the
instance alone, like other clouds' (the order's total adds the default system disk; the notes give
it). `PriceInfo.Rules` (discount rules) go into the notes. Prices are CNY on the China site
(aliyun.com) and mainland list prices include VAT, so `tax_included=True`; an
international-site account answers in USD, stored as such with tax unknown.

Billing: pay-as-you-go and spot are billed per second and settled hourly (按秒计费, 按小时出账), no
minimum (a SpotAsPriceGo instance keeps the default one-hour protection period, not a minimum charge).
Monthly subscriptions are paid upfront for the month.

Scopes: `list` (on_demand + monthly, daily: list prices change rarely) and `spot` (hourly: the spot
market moves). Regions: `GPUPRICE_ALIYUN_REGIONS` (default cn-beijing, cn-hangzhou, cn-shanghai; see
collectors.aliyun.collector). Keys: `ALIBABA_CLOUD_ACCESS_KEY_ID` / `ALIBABA_CLOUD_ACCESS_KEY_SECRET`
(or `GPUPRICE_ALIYUN_ACCESS_KEY_ID` / `_SECRET`); without them the run is skipped, naming them.

Quirks:
- API errors are `{"RequestId", "HostId", "Code", "Message", "Recommend"}` with HTTP 4xx; they fail
  the run with Code and Message. `InvalidAction` / `Forbidden.*` on DescribePrice usually mean price
  inquiry (询价) is not enabled for the account (older accounts needed a ticket) or the RAM user lacks
  ecs:DescribePrice — the error says so.
- GPU supply is restricted: types are often listed only for subscription, or without stock.
- DescribePrice is one call per type, pricing and region (and per zone for spot): see
  collectors.aliyun.collector for the count and its bound.
- Monthly ≠ 730 × hourly: subscriptions are far cheaper per hour; both are kept.
"""

from collectors.aliyun.collector import AliyunCollector

__all__ = ["AliyunCollector"]
