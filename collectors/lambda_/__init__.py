"""Lambda (Lambda Labs, lambda.ai): every GPU instance type from the Lambda Cloud API.

The provider's slug is `lambda` (settings `GPUPRICE_LAMBDA_*`, `/offers?provider=lambda`); the package is
`collectors.lambda_` only because `lambda` is a Python keyword (PEP 8: a trailing underscore).

Source: `GET https://cloud.lambda.ai/api/v1/instance-types` with `Authorization: Bearer <key>`
(`GPUPRICE_LAMBDA_API_KEY`; without it the run is skipped). Lambda's OpenAPI document lists
`https://cloud.lambda.ai/` as the production server and `https://cloud.lambdalabs.com/` as a
deprecated secondary one, so the current host is used; `GPUPRICE_LAMBDA_BASE_URL` replaces it.
One answer, no paging: `{"data": {"<name>": {"instance_type": {...}, "regions_with_capacity_available":
[{"name", "description"}]}}}`. Errors come as `{"error": {"code", "message", "suggestion"}}` (401
`global/invalid-api-key`, 403 `global/account-inactive`) and end the run with Lambda's own words.

What is taken, per GPU instance type (A100, H100 PCIe and SXM5, B200, GH200, A10, A6000, V100, …):
`price_cents_per_hour` (US cents per instance-hour, stored as USD: 1592 → 15.92), the card from
`gpu_description` ("H100 (80 GB SXM5)", "GH200 (96 GB)", "Tesla V100 (16 GB)") through the card
table's names (`pricedb.card_names.identify`: model, memory, and the form factor where the
description says it — a V100's is left unknown), the GPU count from `specs.gpus` (checked against
the "8x" of `description`), the host shape from `specs.vcpus` and `specs.memory_gib`. A type with
`specs.gpus` 0 (Lambda's CPU instances) is no GPU offer; a description the card table does not know
is left out, never guessed, and so is a type priced at 0 cents: each is counted in the run's notes
(`unknown GPU, not collected: RTX 4090D (24 GB) (1 item)`). On-demand only: reserved capacity and
1-Click Clusters are sold outside this API.

Regions and availability. The price is the same in every region, and the API names only the
regions that have capacity *now*; a region without capacity is simply absent. Each GPU type is
therefore reported in the regions watched: `GPUPRICE_LAMBDA_REGIONS` when set (and only those),
else every region the answer lists for *any* instance type (the regions Lambda is serving at this
moment). A watched region listed for the type is `available`; the others are `sold_out`, with a
note that the API cannot tell "no capacity now" from "never offered here". Keeping the sold-out
offers (rather than dropping them) keeps an offer's history when capacity comes and goes, and
`/cheapest` leaves sold-out offers out unless asked.

Billing (docs.lambda.ai, "Billing"): on-demand instances are billed in one-minute increments;
prices exclude sales tax, which is added by billing address.
"""

from collectors.lambda_.collector import LambdaCollector

__all__ = ["LambdaCollector"]
