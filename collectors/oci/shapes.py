"""OCI GPU shape names → the card they carry, and the memory per GPU the estimator's figure implies.

Shape grammar (Oracle's compute shapes table, https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm):
`BM|VM` `.GPU<generation>` [`.<card>`] `.<GPU count>` — `BM.GPU.H100.8`, `VM.GPU.A10.1`, `BM.GPU4.8`.
A shape whose name carries a card token (`H100`, `L40S`, `MI300X`) is read through `identify()`;
the older generations name no card, so they are rules here, each from that table:

- `GPU2` (`BM.GPU2.2`, `VM.GPU2.1`): NVIDIA Tesla P100 16 GB;
- `GPU3` (`BM.GPU3.8`, `VM.GPU3.1/2/4`): NVIDIA Tesla V100 16 GB;
- `GPU4` (`BM.GPU4.8`): NVIDIA A100 40 GB SXM4 (HGX, NVLink);
- `A100-v2` (`BM.GPU.A100-v2.8`): NVIDIA A100 80 GB SXM4 (HGX, NVLink);
- `H100` (`BM.GPU.H100.8`): NVIDIA H100 80 GB SXM5 (HGX, NVLink) — the token alone leaves the form open.

The estimator's `gpuMemoryQty` is the shape's total on most shapes and the per-GPU figure on some
(BM.GPU.MI355X.8, BM.GPU.GB300.4, as SkyPilot's `fetch_oci.py` records). Either reading that lands on a
size the card table sells the named model in is taken (and a disagreement with the rule is noted); a
figure that is neither (BM.GPU.B300.8: 2100 GB = 262.5 GB per GPU, a B300 size the table does not
have) makes the shape an unknown GPU, reported, never priced as another size.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.cards import nearest_known_size

_SHAPE = re.compile(r"^(?:BM|VM)\.(GPU\d?)(?:\.([A-Za-z0-9-]+))?\.(\d+)$")


# Shape token → card, for tokens that do not say it (or leave its form factor open).
TOKEN_RULES: dict[str, GpuSpec] = {
    "GPU2": identify("P100 16GB"),
    "GPU3": identify("V100 16GB"),
    "GPU4": identify("A100 SXM4 40GB"),
    "A100-v2": identify("A100 SXM4 80GB"),
    "H100": identify("H100 SXM5 80GB"),
}


@dataclass(frozen=True)
class ShapeGpu:
    spec: GpuSpec
    notes: tuple[str, ...] = ()


def shape_gpu(name: str, shape: Mapping[str, Any], gpus: int) -> ShapeGpu:
    """The card of one GPU shape, its memory checked against the estimator's `gpuMemoryQty`: a rule
    (Oracle's shape table) wins and a disagreement is noted; a card the name only names takes the size
    the estimator's figure lands on, and neither fitting is an UnknownGpu."""
    match = _SHAPE.match(name)
    if match is None:
        raise UnknownGpu(f"{name!r} is not a GPU shape name")
    rule = TOKEN_RULES.get(match.group(2) or match.group(1))
    spec = rule or identify(name)
    reported = shape.get("gpuMemoryQty")
    if isinstance(reported, bool) or not isinstance(reported, int | float) or reported <= 0:
        return ShapeGpu(spec)
    sizes = {nearest_known_size(spec.model, reported / gpus), nearest_known_size(spec.model, reported)} - {None}
    if spec.memory_gb in sizes:
        return ShapeGpu(spec)
    if rule is not None:
        kept = f"the estimator lists {reported:g} GB of GPU memory; {spec.memory_gb:g} GB per GPU kept"
        return ShapeGpu(spec, (kept,))
    if len(sizes) == 1:
        memory = float(sizes.pop() or 0)
        note = f"the estimator lists {reported:g} GB of GPU memory: {memory:g} GB per GPU"
        return ShapeGpu(identify(name, memory), (note,))
    raise UnknownGpu(
        f"{name}: the estimator lists {reported:g} GB of GPU memory for {gpus} GPUs "
        f"({reported / gpus:g} GB each), a size the card table has no {spec.model} in"
    )
