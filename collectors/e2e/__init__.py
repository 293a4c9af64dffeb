"""E2E Networks (India): every GPU node plan, from E2E's MyAccount plan API when its credentials are
set, else from the public pricing page. The run's notes say which source was read.

Sources (both rewritable with `GPUPRICE_E2E_BASE_URL`):
- the MyAccount plan API, `GET https://api.e2enetworks.com/myaccount/api/v1/images/` — the one
  E2E's own open-source CLI (e2enetworks-oss/e2ectl) reads; it needs an API key *and* a bearer token
  and a project id (`GPUPRICE_E2E_API_KEY`, `GPUPRICE_E2E_AUTH_TOKEN`, `GPUPRICE_E2E_PROJECT_ID`),
  and answers per location (`GPUPRICE_E2E_REGIONS`, default `Delhi`). collectors.e2e.plans_api;
- https://www.e2enetworks.com/pricing (public HTML, no key), server-rendered: the prices are in the
  HTML. collectors.e2e.page finds the GPU price table(s) by their column headings and reads every
  plan row.

The card is read from the plan (collectors.e2e.plan_names for API plan names such as
`GDC3.A10080-16.115GB` = 1 × A100 80 GB; the page's GPU cell "1 x A100 80 GB"); a card the table
lacks, or a name that leaves the memory of a card sold in several sizes open, is reported in the
run's notes and not collected.

What is taken, per plan (sku = the plan name; collectors.e2e.plans):
- the hourly price → `on_demand`, per instance-hour, billed per minute (`billing_increment_s=60`);
- the 30-day committed plan → `monthly`, stored as published: the price of the whole 30-day term
  (`unit=term`, `term_hours=720`), paid upfront;
- the 365-day committed plan → `reserved_1y` (`unit=term`, `term_hours=8760`), the 1095-day one →
  `reserved_3y` (`term_hours=26280`), paid upfront;
- the 90-day committed plan is *not* collected: the contract has no 90-day pricing, and calling it
  `monthly` or `reserved_1y` would misstate the commitment. Its price is kept in the notes of the
  plan's 30-day quote (else its 365-day or hourly one), so nothing published is lost;
- the API's `price_per_month` (the on-demand node run for a month, not a commitment) is kept in the
  hourly quote's notes, not stored as an offer of its own.
A committed page cell that says "/hr" or "/mo" is stored per hour or per month instead.

Quirks:
- Prices are INR **excluding 18% GST**, which E2E charges on top: stored as published with
  `tax_included=False`, and every quote's notes say so. (Visitors outside India may be shown USD;
  the currency is read from each cell's symbol or the plan's `currency`, never assumed.)
- Committed plans are charged in full at launch and not refunded on early deletion
  (https://docs.e2enetworks.com/docs/tir/Nodes/instance-billing/), so /cheapest prices them as the
  whole term (`monthly`: whole 30-day periods; `reserved_*`: the term).
- The page does not price Delhi NCR and Mumbai separately: its region is `india`. The API answers
  per location: the region is the location in lower case (`delhi`, `mumbai`).
- Availability: the API's `available_inventory_status` (true → `available`, false → `sold_out`);
  the page publishes none (`unknown`).
- The API lists a plan once per OS image: the first is kept; Windows images (a licence in the price)
  are left out and said so; CPU plans in the answer are not GPU offers.
- A page without a GPU price table, or without a priced GPU row, or an API answer without a priced
  GPU plan, is a ParseError naming what was looked for: a redesign never reads as "GPUs withdrawn".
  401/403 (or E2E's failure envelope in a 200 answer) fail the run with E2E's words, the key and
  token masked by pricedb.redact.
"""

from collectors.e2e.collector import E2eCollector

__all__ = ["E2eCollector"]
