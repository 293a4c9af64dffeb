"""Google Cloud: GPU machine types priced from the Cloud Billing Catalog API.

Source: `GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus` (Compute Engine),
with the API key from `GPUPRICE_GCP_API_KEY` as the `key` query parameter, `pageSize=5000`, and
`pageToken` from each page's `nextPageToken` until it is empty (collectors.gcp.catalog). Without a
key the run is skipped. The key never appears in a stored `source_url`, a note, a log line or an
error (the recorded URLs leave it out and errors are rewritten).

What is taken: SKUs pricing a part of a GPU machine, each with its usage type, service regions and
the price of the tier that applies from zero usage (`units + nanos / 1e9`, in `usageUnit` h,
GiBy.h or GiBy.mo), collectors.gcp.skus:
- GPUs: the accelerators of collectors.gcp.gpus ("Nvidia Tesla A100 GPU …" 40GB, "Nvidia Tesla
  A100 80GB GPU …", "Nvidia H100 80GB GPU …", "Nvidia L4 GPU …", "Nvidia Tesla T4 / V100 / P100 /
  P4 GPU …"; per GPU-hour). A GPU SKU naming a card the table does not know is reported in the
  run's notes with its count; one naming a known card no machine type here carries is skipped;
- host: "<A2|A3|G2> Instance Core/Ram …" and "N1 Predefined Instance Core/Ram …" (per vCPU-hour,
  per GiB-hour);
- local SSD: "SSD backed Local Storage …" (per GB-month), bundled with a2-ultragpu and a3-highgpu;
- pricings: usageType OnDemand → on_demand, Preemptible ("Spot Preemptible …", "… attached to Spot
  Preemptible VMs") → spot, Commit1Yr / Commit3Yr ("Commitment v1: …") → reserved_1y /
  reserved_3y, stored at the hourly commitment rate (unit hour, `term_hours` 8760 / 26280: the
  whole term is paid, CONTRACT §3).

A VM's price is composed (collectors.gcp.machines): a2-highgpu-1g/2g/4g/8g and a2-megagpu-16g =
1–16 × A100 40GB, a2-ultragpu-1g/2g/4g/8g = 1–8 × A100 80GB, a3-highgpu-1g…8g = 1–8 × H100 80GB,
g2-standard-4…96 = 1–8 × L4, and n1-standard-4n + n attached T4 / V100 / P100 / P4, each with its
vCPUs, GiB and local SSD from Google's machine-type tables. Every offer's notes spell the sum out,
SKU ids included.

Regions: a SKU lists the regions it prices (`serviceRegions`; "… running in Americas" covers
several). A machine type is offered in a region and pricing only where **every** one of its parts
is priced, in that same pricing; `GPUPRICE_GCP_REGIONS` narrows the regions kept.

Quirks:
- SKUs that look like machine parts but price something else are dropped by description: DWS
  (flex-start, "attached to DWS Defined Duration VMs"), calendar mode, "Reserved", sole tenancy,
  custom shapes, premium surcharges, Virtual Workstation GPUs. The DWS A100 80GB GPU SKU is cheaper than the Spot one:
  taking it for on-demand is how skypilot's catalog got on-demand < spot for A100 80GB.
- Local SSD for Spot VMs is described "attached to Spot Preemptible VMs" but may be filed with
  usageType OnDemand: the description decides.
- A relevant SKU billed in an unexpected unit is a ParseError, never a guess.
- Billing is per second after a one-minute minimum; list prices exclude tax. Sustained-use
  discounts (N1, G2) are not applied: the list price is stored.

Scope: one, `all` (on_demand, spot, reserved_1y, reserved_3y), daily: Google changes Spot prices at
most once every 30 days and list prices rarely.
"""

from collectors.gcp.collector import GcpCollector

__all__ = ["GcpCollector"]
