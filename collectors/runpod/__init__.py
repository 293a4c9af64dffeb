"""RunPod: GPU pods of every type from the RunPod GraphQL API.

Source: `POST https://api.runpod.io/graphql` (JSON `{"query": ...}`), two kinds of request:

1. `query GpuTypeList { gpuTypes { id displayName memoryInGb maxGpuCount maxGpuCountSecureCloud
   maxGpuCountCommunityCloud secureCloud communityCloud } }` — which GPU types exist, each read
   by id and `memoryInGb` with `pricedb.card_names.identify` ("NVIDIA A100 80GB PCIe", "NVIDIA H100
   80GB HBM3" = H100 SXM5, "NVIDIA GeForce RTX 4090", "AMD Instinct MI300X OAM"); a type the card
   table does not know is never priced, and the run's notes count it (`unknown GPU, not collected:
   NVIDIA GeForce RTX 3080 Ti (12 GB) (1 item)`);
2. per known type, `gpuTypes(input: {id: "..."})` with its prices (`securePrice`, `communityPrice`,
   `secureSpotPrice`, `communitySpotPrice`, `oneMonthPrice`, `threeMonthPrice`, `sixMonthPrice`) and,
   per cloud and GPU count up to the type's maximum for that cloud, one aliased
   `secureN: lowestPrice(input: {gpuCount: N, secureCloud: true}) { stockStatus minimumBidPrice minVcpu
   minMemory }`
   (`communityN` likewise with `secureCloud: false`).

The price fields and `lowestPrice` are those gpuhunt (`providers/runpod.py`) and SkyPilot
(`fetch_runpod.py`) read. The API key is optional (gpuhunt queries without one): with
`GPUPRICE_RUNPOD_API_KEY` or RunPod's own `RUNPOD_API_KEY` it is sent as `Authorization: Bearer`
(runpod-python dropped the `?api_key=` query parameter in 2025), so it never appears in a URL.

What is taken, and quirks:
- **Prices are per GPU**: an N-GPU offer is stored per instance, N × the price (CONTRACT §2).
- **Secure and Community Cloud are different offers** (RunPod's data centers vs. hosts renting out
  their machines; different prices and guarantees), told apart in the SKU:
  `NVIDIA A100 80GB PCIe x2 (secure)`. A price of 0 or null gives no offer. The region is
  `global`: these prices and the stock signal are RunPod-wide, not per data center.
- `stockStatus` High/Medium/Low → `available` (the level is in the notes); null → RunPod does not
  offer that count in that cloud now: no offer, and the run's notes say which were skipped.
- Spot (interruptible, bid) → `spot`, from `secureSpotPrice` / `communitySpotPrice`, else from the
  count's `minimumBidPrice` (the lowest bid per GPU accepted now, `runpodctl start pod --bid` is
  per GPU); neither → no spot offer.
- Savings plans (`oneMonthPrice`…) are per GPU-hour rates for a period paid up front, not a monthly
  subscription price, and a public price catalog found them equal to on-demand for every GPU it
  checked; they are not stored as `monthly` offers, only noted on Secure offers when they differ.
- GraphQL errors arrive with HTTP 200 in `{"errors": [{"message": ...}]}`; they fail the run with
  RunPod's message, as do HTTP errors (401 for a bad key).
- Host shape: the count's `lowestPrice.minVcpu` and `minMemory` (GB), the smallest pod RunPod
  offers at that GPU count and cloud (gpuhunt reads them the same way); null when not offered.
- Billing is per second (docs.runpod.io, "Billing overview").
"""

from collectors.runpod.collector import RunpodCollector

__all__ = ["RunpodCollector"]
