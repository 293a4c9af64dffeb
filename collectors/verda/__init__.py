"""Verda (formerly DataCrunch): every GPU instance type from the Verda Cloud API.

Sources, all under `https://api.verda.com/v1` (the base URL of Verda's own Python SDK; the old
`https://api.datacrunch.io/v1` host, still SkyPilot's default, is not used; `GPUPRICE_VERDA_BASE_URL`
replaces the host):

- `POST /oauth2/token` with JSON `{"grant_type": "client_credentials", "client_id", "client_secret"}`
  (`GPUPRICE_VERDA_CLIENT_ID` / `GPUPRICE_VERDA_CLIENT_SECRET`, or Verda's own `VERDA_CLIENT_ID` /
  `VERDA_CLIENT_SECRET`; without them the run is skipped) → `{"access_token", "refresh_token",
  "scope", "token_type", "expires_in"}`. The token is sent as `Authorization: Bearer` on the calls
  below and kept in memory only: the token answer is never stored, logged or put in an error.
- `GET /instance-types?currency=usd` → a list of `{instance_type ("1A100.22V"), price_per_hour and
  spot_price as **strings** ("1.16"), currency ("usd"), gpu {description "1x A100 SXM4 80GB",
  number_of_gpus}, gpu_memory {size_in_gigabytes, the instance's total}, cpu, memory, …}`.
  Prices are per **instance**-hour. The card comes from `gpu.description` ("2x H200 SXM5 141GB",
  "1x RTX6000 Ada 48GB", "1x Tesla V100 16GB") through the card table's names
  (`pricedb.card_names.identify`), its count checked against `number_of_gpus` and its memory against
  `gpu_memory` (the instance's total); CPU types are skipped, and a card the table does not know
  (Verda's "B300 SXM6 262GB": the table sells the B300 with 288 GB) is left out, never guessed, and so is a
  type priced at 0: each counted in the run's notes. The host
  shape is `cpu.number_of_cores` (vCPUs) and `memory.size_in_gigabytes` (RAM, stored as GiB, as
  SkyPilot's Verda catalog and gpuhunt take it).
- `GET /instance-availability?isSpot=false` and `?isSpot=true` (the SDK's parameter name) →
  `[{location_code ("FIN-01"), availabilities: ["1A100.22V", …]}]`: what can be deployed where now.
- `GET /long-term/periods/instances` → `[{code ("12_MONTHS"), name, is_enabled, unit_name ("month"),
  unit_value, discount_percentage}]`: contracts paid up front, a discount off the on-demand rate.

Offers: per GPU type and location — every location the availability answers name, or only
`GPUPRICE_VERDA_REGIONS` when set — one `on_demand` and, where the type has a spot price, one
`spot` offer (the price is the same in every location). A type missing from a location's list is
`sold_out` there, with a note that the list cannot tell "sold out" from "not offered there".
Long-term periods of 1 month → `monthly`, 12 months → `reserved_1y`, 36 → `reserved_3y`, priced
per hour at the discounted rate (`list_price` keeps the on-demand rate; reserved terms carry their
length, and the whole term is what a job pays); other lengths (3, 6, 24 months) have no pricing
model in the contract and are listed in the on-demand offers' notes. If the periods call fails or
its answer cannot be read, those pricings are reported as not collected and the rest stands.

Errors are `{"code", "message"}` (`unauthorized_request`, `invalid_request`, …) and end the run
with Verda's words. Billing granularity is not stated in Verda's public docs: quotes keep the
default per-second rule, so very short jobs may be under-costed.
"""

from collectors.verda.collector import VerdaCollector

__all__ = ["VerdaCollector"]
