"""E2E Networks (India): A100 40GB / 80GB GPU nodes from the public pricing page.

Source: https://www.e2enetworks.com/pricing (public HTML, no key; rewritable with
`GPUPRICE_E2E_BASE_URL`). E2E's MyAccount API also lists plans, but it needs an API key *and* a
bearer token, so the public page is what is read. The page is server-rendered: the prices are in
the HTML, no script has to run. collectors.e2e.page finds the GPU price table(s) by their column
headings and reads every plan row; rows whose GPU is not an A100 (H100, L40S, …) are left out.

What is taken, per A100 plan (1/2/4/8 GPUs; sku = the plan name, e.g. `GDC3.A10080-16.115GB`):
- the hourly price → `on_demand`, per instance-hour, billed per minute (`billing_increment_s=60`);
- the 30-day committed plan → `monthly`, stored as published: the price of the whole 30-day term
  (`unit=term`, `term_hours=720`), paid upfront;
- the 365-day committed plan → `reserved_1y` (`unit=term`, `term_hours=8760`), paid upfront;
- the 90-day committed plan is *not* collected: the contract has no 90-day pricing, and calling it
  `monthly` or `reserved_1y` would misstate the commitment. Its price is kept in the notes of the
  plan's 30-day quote, so nothing published is lost.
A committed cell that says "/hr" or "/mo" is stored per hour or per month instead.

Quirks:
- Prices are INR **excluding 18% GST**, which E2E charges on top: stored as published with
  `tax_included=False`, and every quote's notes say so. (Visitors outside India may be shown USD;
  the currency is read from each cell's symbol, never assumed.)
- Committed plans are charged in full at launch and not refunded on early deletion
  (https://docs.e2enetworks.com/docs/tir/Nodes/instance-billing/), so /cheapest prices them as the
  whole term (`monthly`: whole 30-day periods; `reserved_1y`: the year).
- The page does not price Delhi NCR and Mumbai separately: the region is `india`.
- Availability is not published on the page: every quote is `unknown`.
- A page without a GPU price table, or whose GPU table has no A100 row, is a ParseError naming
  what was looked for: a redesign never reads as "A100 withdrawn".
"""

from collectors.e2e.collector import E2eCollector

__all__ = ["E2eCollector"]
