"""AutoDL (autodl.com): the machines of every GPU type of its market, through the web console's API.

AutoDL publishes no public price API; its console's JSON API answers with the **user's login
token** (`GPUPRICE_AUTODL_TOKEN`: the `Authorization` header value of a logged-in autodl.com
session, sent bare, without "Bearer"). Without it the run is skipped. Requests, in order:

1. `GET https://fe-config-backend.autodl.com/api/v1/autodl/region/tag` — the region groups
   (`[{"region_sign": ["west-B", "west-C"], "region_name": "西北B区", ...}]`);
   `GPUPRICE_AUTODL_REGIONS` (region signs) narrows them.
2. per group, `POST https://api.autodl.com/api/v1/machine/region/gpu_type` with
   `{"region_sign_list": [...]}` — GPU types with idle and total GPU counts
   (`[{"A100-SXM4-80GB": {"idle_gpu_num": 5, "total_gpu_num": 40}}, ...]`); each type name is read
   through the card table's names ("RTX 4090", "A800-80GB", "A40"); a type it does not know
   ("RTX 4090D", AutoDL's "vGPU-32GB" of no stated card) is never asked for and is counted in the
   run's notes (`unknown GPU, not collected: RTX 4090D (1 item)`: the region groups listing it);
3. per group with known types, `POST https://api.autodl.com/api/v1/user/machine/list` with the
   console's market-list filter (`charge_type` "payg", `gpu_type_name` the group's known types,
   `region_sign_list`, `gpu_idle_num` 0 so sold-out machines still show prices, `page_index`,
   `page_size` 10, …), paged by `page_index` up to `data.max_page` (past it the API repeats the
   last page, so the walk stops there; more than `api.MAX_PAGES` pages is an error).
  A machine's card is its `gpu_name` in the size its `gpu_memory` (bytes) is within 7% of
  (`collectors.market.sized_card`); a size the card is not sold in leaves the machine out.

Every answer is `{"code": "Success", "msg": "", "data": ...}`; another code is a FetchError with
AutoDL's code and message, and `AuthorizeFailed` ("认证失败; 登录超时") says the token has expired.
A public write-up reports the market page itself calls `api/v1/machine/search` with the same
body; this collector uses `user/machine/list`, which every public client found uses.

What is taken, per machine (`machine_id`, `region_sign`, `gpu_name`, `gpu_memory` in bytes,
`gpu_number`, `gpu_idle_num`, `gpu_order_num`, `payg`, `payg_price`, `machine_sku_info`):
- `payg_price`: the pay-as-you-go price **per GPU-hour**, an integer whose unit AutoDL does not
  document. Public clients and write-ups read it (and the `machine_sku_info` prices) as 1/1000 CNY
  (厘): 5980 → ¥5.98. That reading is `machines.PRICE_UNIT_CNY`, the one place it lives.
- `machine_sku_info` entries of type `monthly` (包月, per GPU) → `monthly`, unit `month`
  (normalized with the contract's hours per month; the package's exact length is not in the
  answer). `daily`/`weekly` (包日/包周) packages have no pricing in the contract: mentioned in the
  on-demand quote's notes, not collected. A payg `origin_price` above the current price becomes
  the quote's `list_price`.
- **Per GPU → per instance.** An AutoDL instance is N GPUs of one machine. Each machine yields
  instances of 1, 2, 4 and 8 GPUs (`machines.INSTANCE_SIZES`) up to its `gpu_number`, priced
  per-GPU price × N; sku `A100-SXM4-80GB x2` / `RTX 4090 x4` (AutoDL's type name), region the
  machine's `region_sign`.
- **Grouped like a marketplace** (collectors.market): one offer per (sku, region, pricing), the
  cheapest machine that can rent N GPUs now (`gpu_idle_num`, capped by `gpu_order_num`, ≥ N);
  the notes carry the median and the number of such machines. When none can, the offer is the
  cheapest machine of that size, marked `sold_out`; a region group whose `gpu_type` answer
  reports 0 idle GPUs of the type makes all its offers `sold_out`.
- Host shape: the chosen machine's `cpu_per_gpu` (vCPUs) and `mem_per_gpu` (bytes → GiB), × the
  instance's GPUs — AutoDL allots both per rented GPU; other machines of the group may differ.
- Billing is per second (AutoDL's billing page, as cited in public projects); tax not stated.

Quirks: integer prices of undocumented unit (above); machines without the fields the list always
carries mean the API changed (ParseError), machines of unknown GPUs or without a price are left
out (counted in the parse error when nothing is left); the same machine on two pages (the list
shifting mid-walk) is counted once. The token is a session credential: the console's terms apply,
and it expires (then: FetchError, log in again).

Scope: one, `all` (on_demand, monthly), hourly: idle counts change by the minute.
"""

from collectors.autodl.collector import AutodlCollector

__all__ = ["AutodlCollector"]
