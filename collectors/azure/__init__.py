"""Microsoft Azure: GPU virtual machines (the N-series) from the Azure Retail Prices API.

Source: `GET https://prices.azure.com/api/retail/prices` (public, no key), default API version,
with one OData `$filter`:

    serviceName eq 'Virtual Machines' and startswith(armSkuName, 'Standard_N')

Every GPU size is N-series (NC, ND, NG, NV; NP is FPGAs and is dropped when read), and no other
name starts so. `startswith` is the OData function public clients of this API use for a size family
(the service rejects `armSkuName in (...)` and filters of more than about 20 comparisons with HTTP 400
"Invalid OData parameters supplied", so listing every GPU size is not possible). Values are written
in their exact case: the default version compares them case-insensitively, `2023-01-01-preview` and
later case-sensitively. Which GPUs a size has is collectors.azure.sizes (the API does not say).

**One walk over all regions**, not one per region: the N-series is about fifteen thousand rows
(some 150 pages of 100, a minute or two), and every region that sells a GPU size is in the answer,
including regions added later. `$skip` paging is only consistent while the data does not
change mid-walk (which is why gpuhunt walks per region); a walk this short takes seconds, and the
duplicates such a shift could cause are resolved like any other duplicate (below). With
`GPUPRICE_AZURE_REGIONS` set, the collector walks each listed region on its own instead (the same
filter plus `armRegionName eq '<region>'`).

Paging: each page's `NextPageLink` (absolute, `https://prices.azure.com:443/...&$skip=100`) is
followed through `Http.get`, so `GPUPRICE_AZURE_BASE_URL` applies to it as to the first URL. A link
already read, or more than `query.MAX_PAGES` pages, is a pagination loop: `FetchError`. A full last page
without a link (the API has dropped `NextPageLink` before, 2023-03) is noted as a possibly
truncated walk. An error body (`{"Error": {"Code": "BadRequest", "Message": ...}}`, HTTP 400 for a
bad filter) becomes a `FetchError` carrying the API's message.

What is taken, per row (`armRegionName` is the region, `currencyCode` the currency, USD):
- `type` Consumption → `on_demand`, or `spot` when `skuName`/`meterName` ends in " Spot";
- `type` Reservation → `reserved_1y` / `reserved_3y` by `reservationTerm`.

Quirks:
- **Reservation prices are for the whole term** although `unitOfMeasure` says "1 Hour": stored as
  published with `unit=term` and `term_hours` 8760 or 26280. "5 Years" reservations are skipped
  (the contract has no `reserved_5y`) and mentioned in the 3-year quote's notes.
- Windows and Linux rows share `armSkuName`; only `productName` tells them apart ("... Windows", or
  "... Srs Win" in short product names): Windows rows (licence included) are dropped, as are "Cloud
  Services" products.
- "Low Priority" meters (Batch, being retired) and `DevTestConsumption` rows (Dev/Test
  subscriptions only; they carry the Linux price on the Windows product) are dropped.
- Zero prices occur and are dropped; so are rows whose `effectiveEndDate` has passed.
- The same offer can appear twice (several meters, legacy and current product names): the row
  with the latest `effectiveStartDate` is kept and the quote notes the others.
- The API does not say how many GPUs a VM has: `sizes.SIZES` is the table of the sizes taken (card,
  GPUs, vCPUs, RAM; memory, form factor and interconnect from the card table). Sizes that get a share
  of one GPU (NVadsA10 v5 below 36 vCPUs: 1/6, 1/3, 1/2 of an A10; NVv4 below 32: 1/8–1/2 of an
  MI25) are stored as one slice (`gpu_fraction`, `gpu_partition`), never as whole cards; sizes the
  table lacks (NGads V620, NC A10 v4 whose share of the A10 is unverified, new series) are not
  stored, and are counted per size for the run's notes ("unknown GPU, not collected: …").
  `_Promo` sizes are dropped.
- NC A100 v4 rows use new-style names (`skuName` "Standard_NC24ads_A100_v4", `meterName`
  "NC24ads_A100_v4", product "NCads A100 v4 Series Linux"); the others use the classic style
  ("ND96amsr A100 v4 Spot"). Nothing here depends on either.
- Billing is per second (Linux VMs); list prices exclude tax.

Scope: one, `all` (on_demand, spot, reserved_1y, reserved_3y), daily. Spot has no scope of its own:
the Retail Prices API publishes spot as list prices that Azure revises from time to time (recorded
spot meters carry `effectiveStartDate`s on the first of a month), not a live market, so reading them
every few hours would mostly re-read the same numbers. `GPUPRICE_AZURE_INTERVAL_MINUTES` changes
the cadence.
"""

from collectors.azure.collector import AzureCollector

__all__ = ["AzureCollector"]
