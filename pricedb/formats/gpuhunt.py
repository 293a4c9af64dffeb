"""gpuhunt catalog CSV per provider, so gpuhunt (and dstack on top of it) reads gpuprice's prices.

Format (dstackai/gpuhunt `src/gpuhunt/_internal/storage.py` `CATALOG_V2_FIELDS`, read by
`storage.load`): one row per offer, `price` in USD per hour, `spot` as `True`/`False`, `gpu_memory`
in GB per GPU, `cpu`/`memory` required — rows whose host shape is unknown (neither the offer's source
nor pricedb.shapes' table knows it) are left out rather than guessed. `instance_name` is gpuprice's
sku, which is the provider's own instance type for the clouds (AWS, Azure, GCP, OCI, Lambda, Verda)
but gpuprice's group name for RunPod and the marketplaces (`NVIDIA A100 80GB PCIe x2 (secure)`,
`A100-SXM4-80GB x8`), where gpuhunt writes a GPU id or a host offer id; `provider_data` carries the
pricing, observation time and source.

`gpu_name` is the card table's `gpuhunt_name` (pricedb.cards: `A100` for 40 and 80GB alike, with
the size in `gpu_memory`, `H100NVL`, `RTX4090`, `A6000`, … as gpuhunt's providers spell them), the
model name for a card gpuhunt has no name for; `gpu_vendor` the card's vendor in lower case.

Locations are gpuprice's regions, which are gpuhunt's for aws, azure, lambdalabs and verda (region
codes such as `us-east-1`, `eastus`, `FIN-01`). Where gpuhunt's own catalog is finer, gpuprice's
source is not: gcp (gpuhunt lists zones, gpuprice's SKU prices are per region), runpod (gpuhunt lists
Secure Cloud data centres such as `EU-RO-1` and Community Cloud countries; RunPod's price API as
gpuprice reads it is RunPod-wide, `global`) and oci (gpuhunt repeats Oracle's price per region;
gpuprice stores it once, `global`).

Provider names. gpuhunt names some providers differently (`gpuhunt.providers.*.NAME`): Lambda is
`lambdalabs`, Vast.ai `vastai`; `datacrunch` is Verda's name before gpuhunt renamed it (0.1.34 only
knows `verda`) and is still served, as a legacy alias. A catalog is always written as the file
gpuhunt looks for (`lambdalabs.csv`), because `GPUHUNT_CATALOG_DIR` reads `<gpuhunt name>.csv`.
Which of these gpuhunt reads from files, and how to make it do so offline, is in README.md
("Feeding other tools"): in short, only its offline providers (aws, azure, gcp, lambdalabs, oci,
runpod, verda among gpuprice's), with `Catalog(balance_resources=False, auto_reload=False)` and the
provider named in each query; `vastai` is an online provider there, so its file is read only with
`gpuhunt._internal.storage.load`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable

from pricedb.cards import card
from pricedb.clock import iso_utc
from pricedb.formats.foreign import HOURLY, ForeignSheet, UsdPricer
from pricedb.fx import FxTable
from pricedb.queries import Offer
from pricedb.shapes import host_shape

GPUHUNT_COLUMNS = ["instance_name", "location", "price", "cpu", "memory", "gpu_count", "gpu_name", "gpu_memory",
                   "spot", "disk_size", "gpu_vendor", "flags", "cpu_arch", "provider_data"]  # fmt: skip

# gpuprice slug → gpuhunt's provider name, where they differ.
GPUHUNT_NAMES = {"lambda": "lambdalabs", "vast": "vastai"}
# gpuhunt's names (current and former) → gpuprice slug.
GPUHUNT_ALIASES = {"lambdalabs": "lambda", "vastai": "vast", "datacrunch": "verda"}


def gpuhunt_name(provider: str) -> str:
    """The file name stem gpuhunt looks for: `lambda` → `lambdalabs`; others keep their slug."""
    return GPUHUNT_NAMES.get(provider, provider)


def resolve(name: str, known: Iterable[str]) -> tuple[str, str] | None:
    """(gpuprice provider, file stem) for a name in either vocabulary, or None when neither knows it.
    A gpuhunt name keeps its own spelling as the file stem (`datacrunch` → `datacrunch.csv`)."""
    if name in set(known):
        return name, gpuhunt_name(name)
    if name in GPUHUNT_ALIASES:
        return GPUHUNT_ALIASES[name], name
    return None


def gpuhunt_gpu_name(offer: Offer) -> str:
    """gpuhunt's name for the card (the card table's `gpuhunt_name`), else gpuprice's model name."""
    known = card(offer.gpu_model, offer.gpu_memory_gb, offer.form_factor)
    return known.gpuhunt_name if known is not None and known.gpuhunt_name else offer.gpu_model


def gpuhunt_vendor(offer: Offer) -> str:
    """gpuhunt's `AcceleratorVendor` value: nvidia, amd, intel (lower case)."""
    known = card(offer.gpu_model, offer.gpu_memory_gb, offer.form_factor)
    return (known.vendor if known is not None else "NVIDIA").lower()


def gpuhunt_csv(offers: Iterable[Offer], provider: str, fx: FxTable) -> ForeignSheet:
    usd = UsdPricer(fx)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=GPUHUNT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    rows = no_shape = 0
    for offer in sorted((o for o in offers if o.provider == provider and o.pricing in HOURLY), key=lambda o: o.key):
        shape = host_shape(offer)
        if shape is None:
            no_shape += 1
            continue
        price = usd(offer)
        if price is None:
            continue
        data = {"pricing": offer.pricing, "observed_at": iso_utc(offer.observed_at), "source_url": offer.source_url}
        writer.writerow(
            {
                "instance_name": offer.sku,
                "location": offer.region,
                "price": repr(float(price)),
                "cpu": str(shape.vcpus),
                "memory": repr(float(shape.memory_gib)),
                "gpu_count": str(offer.gpu_count),
                "gpu_name": gpuhunt_gpu_name(offer),
                "gpu_memory": repr(float(offer.gpu_memory_gb)),
                "spot": str(offer.pricing == "spot"),
                "disk_size": "",
                "gpu_vendor": gpuhunt_vendor(offer),
                "flags": "",
                "cpu_arch": "arm" if shape.arch in ("arm64", "aarch64") else "x86",
                "provider_data": json.dumps(data, sort_keys=True),
            }
        )
        rows += 1
    notes = usd.notes()
    if no_shape:
        notes.append(f"{no_shape} offers left out: their vCPU/RAM shape is unknown and gpuhunt requires it")
    return ForeignSheet(buffer.getvalue(), rows, notes)
