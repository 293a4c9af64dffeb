"""Oracle Cloud Infrastructure: GPU shapes from the public Cost Estimator data (no key).

Sources (the JSON behind https://www.oracle.com/cloud/costestimator.html):
- shapes   `GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json`:
  `items[]{name, hidden, status, allowPreemptible, bundleMemoryQty, gpuQty, gpuMemoryQty,
  shapeType{value}, subType{value}, products[{partNumber, qty, type{value}}]}`;
- products `GET https://www.oracle.com/a/ocom/docs/cloudestimator2/data/products.json`:
  `items[]{partNumber, displayName, billingModel, pricetype, currencyCodeLocalizations[{currencyCode,
  prices[{model, value}]}]}`, prices in several currencies; the USD PAY_AS_YOU_GO one is taken.

What is taken: every active, listed GPU shape (`subType` gpu) whose card the card table knows —
collectors.oci.shapes reads the card from the shape name (`BM.GPU.H100.8`, `VM.GPU.A10.1`; the older
generations `GPU2`/`GPU3`/`GPU4`/`A100-v2` by Oracle's shape table) and checks the memory against the
estimator's `gpuMemoryQty` (the shape total on most shapes, per GPU on some). A GPU shape whose card or
memory the table does not have (BM.GPU.B300.8's 262.5 GB) is named in the run's notes, never priced as
another card. The price is the sum of the shape's billed parts: a GPU shape's "ocpu" part is priced
**per GPU-hour** (× `gpuQty`, as gpuhunt and skypilot read it; the OCPUs and memory are included; e.g.
B93544 "OCI - Compute - GPU - E4" for BM.GPU4.8, B95909 "Compute - GPU - A10" for the A10 shapes), a
"memory" part (none on today's GPU shapes) per GB-hour × `qty`. Stored per instance, with the
arithmetic in the notes.

Pricings: on-demand; preemptible = 50% of on-demand, as Oracle publishes ("always 50% off"), but
only for shapes the estimator marks `allowPreemptible` — Oracle's preemptible capacity does not
support bare metal, so the BM.* shapes have no preemptible price and their notes say so.

Region: OCI list prices are the same in every commercial region and the estimator does not say
which regions have the shapes, so the offer is stored once, in region `global`;
`GPUPRICE_OCI_REGIONS=us-ashburn-1,eu-frankfurt-1` stores the same price under each
listed region instead, for users who filter by region.

Quirks: fractional quantities (`qty` 81.6 on BM.DenseIO.E5.128); `gpuMemoryQty` is the shape total
for the A100 shapes (320 / 640) but per GPU on some newer ones (see collectors.oci.shapes);
display suffixes like " (NVL72)" on names;
`processorType` "arm" on the A100 shapes (AMD hosts: their OCPUs count as x86, 2 vCPUs each, as
SkyPilot's OCI catalog counts them). Host shape: the "ocpu" part's `qty` × 2 vCPUs and
`bundleMemoryQty` GB of RAM (BM.GPU4.8: 64 OCPUs = 128 vCPUs, 2048 GB). Billing is per second with a one-minute
minimum; list prices exclude tax. Scope: one, `all`, daily.
"""

from collectors.oci.collector import OciCollector

__all__ = ["OciCollector"]
