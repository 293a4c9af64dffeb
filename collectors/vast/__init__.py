"""Vast.ai: every GPU offer of the public marketplace search, one stored offer per group of hosts.

Source: `POST https://console.vast.ai/api/v0/bundles/` (the search behind `vastai search offers`;
no key needed, an optional `GPUPRICE_VAST_API_KEY`/`VAST_API_KEY` is sent as `Bearer`), one search
per pricing, with a JSON filter (the CLI's defaults, every card):

    {"verified":{"eq":true},"external":{"eq":false},"rentable":{"eq":true},"rented":{"eq":false},
     "disk_space":{"gte":100},"order":[["score","desc"]],"type":"on-demand"|"bid","limit":1000,
     "allocated_storage":100}

With `GPUPRICE_VAST_REGIONS=US,CA` the filter adds `"geolocation":{"in":["US","CA"]}`. The answer
is `{"offers": [...]}`, one object per host offer (`id`, `machine_id`, `gpu_name`, `num_gpus`,
`gpu_ram` in MB per GPU, `dph_base`, `min_bid`, `storage_cost`, `geolocation` "City, CC", and some
ninety more fields, see fixtures/README.md). Errors are `{"error": ..., "msg": ...}` (HTTP 400,
and 404 for a bad key) or `{"detail": "API requests too frequent ..."}` (HTTP 429, retried).

**The card.** `gpu_name` ("RTX 4090", "H100 SXM", "A100 PCIE", "Tesla V100", "RTX 6000Ada") is read
through the card table's names (`pricedb.card_names.identify`; "A100X", the A100 80GB PCIe with a
BlueField DPU, by an alias), and the size from `gpu_ram` (MB per GPU, usable: 81559 is an 80GB card)
within ±7% of a size that card is sold in. A name the table does not know is left out and counted
in the run's notes (`unknown GPU, not collected: RTX 3060 (1 item)`); a size the card is not sold in
(a modified 48GB RTX 4090) is left out too. Never guessed.

**A marketplace, grouped.** Every offer is one host's machine at that host's price. Offers are
grouped by card (the gpu_name with dashes: `A100-PCIE`, `RTX-4090`; "A100 SXM" is the `A100-SXM4`),
memory class, GPU count and country (the code after the last comma of
`geolocation`; missing or unreadable → region "unknown"), and each group is stored as **one**
offer per pricing: sku `A100-SXM4-80GB x8`, region `US`, the **cheapest** host's price, and in the
notes the median and the number of offers ("cheapest of 14 offers; median 1.23 USD/h") with the
cheapest offer's id and machine. The median stays in the notes: no contract field means "median",
and the price that ranks must be one a user can actually rent at.

**Price.** On-demand = `dph_base` (USD per hour for the whole offer, compute) + the standard disk:
`storage_cost` is USD per GB per **30-day month**, so the disk adds
`storage_cost × offers.STANDARD_DISK_GB / offers.HOURS_PER_STORAGE_MONTH` (100 GB, 720 h) per hour.
Spot = `min_bid` (the interruptible floor from the `bid` search) + the same disk. Internet
transfer (`inet_up_cost`/`inet_down_cost`, per GB) is usage-based and not included. Billing is per
second; prices are whatever the hosts ask, tax not stated.

Quirks, and how they are handled:
- Marketplace data is noisy: an offer whose price per GPU lies outside its card's plausible band
  (`pricedb.cards.MODEL_FACTS`, the run-time sanity band) is left out of its group and counted in
  the group's notes, so one odd host neither drags the group's offer out of the band nor stands
  for it; one dear host only moves the median.
- Fields may be null (`cpu_cores`, `geolocation`, `gpu_ram`, `storage_cost`): offers without what
  the price or the group needs are left out and counted; a field missing altogether means the API
  changed (ParseError), and an answer with no usable GPU offer at all is a ParseError too.
- `gpu_frac` below 1 (a fraction of a GPU) is left out.
- An answer of exactly `LIMIT` offers may be cut short (likely, now that every card is asked for:
  the best-scored 1000): noted on the run.
- Each group's host shape (vCPUs, RAM) is the cheapest offer's `cpu_cores_effective` (whole cores)
  and `cpu_ram` (MB → GiB), the machine the price belongs to; the notes say so.
- Spot is the floor of a bid, not a guaranteed price; a spot group dearer than its on-demand group
  (different hosts) is rejected by the shared sanity checks, with the reason recorded.

Scope: one, `all` (on_demand, spot), hourly: a live market.
"""

from collectors.vast.collector import VastCollector

__all__ = ["VastCollector"]
