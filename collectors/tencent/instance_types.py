"""Tencent Cloud GPU instance families → the card each carries.

`DescribeZoneInstanceConfigInfos` items give the family (`InstanceFamily`), the GPU count (`Gpu`) and
the physical cards it maps to (`GpuCount`, below 1 for a vGPU slice), but no GPU model or memory (the
SDK's `InstanceTypeQuotaItem`; its `Externals` holds only ReleaseAddress, UnsupportNetworks and
StorageBlockAttr). So the family decides the card, from Tencent's own pages:

- "GPU 计算型实例 / NVIDIA 系列" (https://cloud.tencent.com/document/product/560/19700): GT4 = Tesla A100
  NVLink 40G; GN10X / GN10Xp = Tesla V100 NVLink 32G; GN7 = Tesla T4 (its LARGE20 and 2XLARGE40 sizes
  are 1/4 and 1/2 vGPU slices); GN7vw (rendering) = T4; GI3X = T4; GN8 = Tesla P40 24 GB; GN6 / GN6S =
  Tesla P4 8 GB;
- the international "GPU Computing instances" page (https://www.tencentcloud.com/document/product/560/19700):
  PNV4 = NVIDIA A10;
- the CVM SDK's reserved-instance types (`ReservedInstanceSpec.Type`: `a10*gnv4`, `a10*gnv4v`, `a10*pnv4`):
  GNV4 and GNV4v = A10 (vGPU families: their `GpuCount` says the slice).

`UNSTATED` are GPU families Tencent sells whose card or memory no public page states: they are asked
for so that their items are counted in the run's notes, never priced as a guessed card.
"""

from __future__ import annotations

from pricedb.card_names import GpuSpec, identify

FAMILY_CARDS: dict[str, GpuSpec] = {
    "GT4": identify("A100 SXM4 40GB"),
    "GN10X": identify("V100 SXM2 32GB"),
    "GN10Xp": identify("V100 SXM2 32GB"),
    "GN7": identify("T4"),
    "GN7vw": identify("T4"),
    "GI3X": identify("T4"),
    "GN8": identify("P40"),
    "GN6": identify("P4"),
    "GN6S": identify("P4"),
    "PNV4": identify("A10"),
    "GNV4": identify("A10"),
    "GNV4v": identify("A10"),
}

# HCCPNV4h: "HCCPNV4h 实例搭载了 A100 GPU" (Tencent's nvidia-fabricmanager guide), memory never stated.
UNSTATED: dict[str, str] = {"HCCPNV4h": "an A100 family whose GPU memory Tencent does not publish"}

FAMILIES: tuple[str, ...] = (*FAMILY_CARDS, *UNSTATED)


def family_of(item_family: object, instance_type: str) -> str:
    """The item's `InstanceFamily`, else the part of its type before the dot (`GN7.LARGE20` → GN7)."""
    return item_family if isinstance(item_family, str) and item_family else instance_type.split(".", 1)[0]
