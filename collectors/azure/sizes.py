"""Which GPUs an Azure VM size has: the Retail Prices API does not say (only the authenticated
Resource SKUs API does), and its names do not always name the card (`Standard_ND96asr_v4` is
8 × A100 40GB, `Standard_NC40ads_H100_v5` an H100 NVL 94GB, not an 80GB H100).

One `Size` per priced VM size of the N-series: the card as Microsoft's size pages name it (read by
`pricedb.card_names.identify`, so the card table supplies memory, form factor and interconnect), the
GPUs per VM, and the host's vCPUs and RAM. Sizes that get a share of one GPU (NVadsA10 v5 below 36
vCPUs, NVv4 below 32) carry that share instead and are stored as one slice of the card
(`gpu_fraction`, `gpu_partition` "1/6 GPU", the slice's memory the same share of the card's: 4 GB
for 1/6 of an A10, as the size page lists), never as whole cards.

Bases (see /work/research/cards/instance_rules.md):
- Microsoft's size pages, https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/<series>
  (MicrosoftDocs/azure-docs: the NVadsA10 v5 and NVv4 accelerator tabs with their GPU shares, NCads
  H100 v5 "NVIDIA PCIe H100 GPU (94GB)", ND MI300X v5, NCasT4_v3);
- the GPU counts, vCPUs and RAM the Resource SKUs API gives, as published in SkyPilot's catalog
  (skypilot-org/skypilot-catalog `catalogs/v6/azure/vms.csv` @ 098741e7) and microsoft/aspire's
  generated AKS size list (ND H100 v5: 8 GPUs, which SkyPilot's catalog misstates as 12; ND H200 v5);
- for the retired K80 / P100 / P40 / M60 sizes, gpuhunt's `retired_vm_series` and SkyPilot's families.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from pricedb.card_names import GpuSpec, identify

SIZE_PAGE = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/{}"


@dataclass(frozen=True, slots=True)
class Size:
    card: str  # the card as Microsoft names it, read by identify()
    gpus: int  # GPUs per VM (1 slice for a fractional size)
    vcpus: int
    memory_gib: float
    source: str
    share: Fraction | None = None  # a fractional size: its share of one GPU
    spec: GpuSpec = field(init=False)

    def __post_init__(self) -> None:
        card = identify(self.card)
        if self.share is not None:
            card = card.slice(float(self.share), f"{self.share} GPU", card.memory_gb * float(self.share))
        object.__setattr__(self, "spec", card)


def _series(card: str, page: str, sizes: dict[str, tuple[int | Fraction, int, float]]) -> dict[str, Size]:
    source = SIZE_PAGE.format(page)
    out = {}
    for name, (gpus, vcpus, memory) in sizes.items():
        share = gpus if isinstance(gpus, Fraction) else None
        out[name] = Size(card, 1 if share else int(gpus), vcpus, memory, source, share)
    return out


H100_SXM, H100_NVL = "NVIDIA H100 80GB SXM", "NVIDIA H100 NVL 94GB"
SIZES: dict[str, Size] = {
    **_series(H100_SXM, "nd-h100-v5-series", {"Standard_ND96isr_H100_v5": (8, 96, 1900)}),
    **_series("NVIDIA H200 141GB SXM", "nd-h200-v5-series", {"Standard_ND96isr_H200_v5": (8, 96, 1850)}),
    **_series("AMD Instinct MI300X", "nd-mi300x-v5-series", {"Standard_ND96isr_MI300X_v5": (8, 96, 1850)}),
    **_series("NVIDIA A100 80GB SXM4", "ndm-a100-v4-series", {"Standard_ND96amsr_A100_v4": (8, 96, 1800)}),
    **_series("NVIDIA A100 40GB SXM4", "nda100-v4-series", {"Standard_ND96asr_v4": (8, 96, 900)}),
    **_series("NVIDIA A100 80GB PCIe", "nc-a100-v4-series", {
        "Standard_NC24ads_A100_v4": (1, 24, 220), "Standard_NC48ads_A100_v4": (2, 48, 440),
        "Standard_NC96ads_A100_v4": (4, 96, 880)}),
    **_series(H100_NVL, "ncads-h100-v5", {"Standard_NC40ads_H100_v5": (1, 40, 320),
                                          "Standard_NC80adis_H100_v5": (2, 80, 640)}),
    **_series(H100_NVL, "nccadsh100v5-series", {"Standard_NCC40ads_H100_v5": (1, 40, 320)}),
    **_series("NVIDIA T4", "ncast4v3-series", {
        "Standard_NC4as_T4_v3": (1, 4, 28), "Standard_NC8as_T4_v3": (1, 8, 56), "Standard_NC16as_T4_v3": (1, 16, 110),
        "Standard_NC64as_T4_v3": (4, 64, 440)}),
    **_series("NVIDIA V100 PCIe 16GB", "ncv3-series", {
        "Standard_NC6s_v3": (1, 6, 112), "Standard_NC12s_v3": (2, 12, 224), "Standard_NC24s_v3": (4, 24, 448),
        "Standard_NC24rs_v3": (4, 24, 448)}),
    **_series("NVIDIA V100 SXM2 32GB", "ndv2-series", {"Standard_ND40rs_v2": (8, 40, 672)}),
    **_series("NVIDIA Tesla M60", "nvv3-series", {
        "Standard_NV12s_v3": (1, 12, 112), "Standard_NV24s_v3": (2, 24, 224), "Standard_NV48s_v3": (4, 48, 448)}),
    **_series("AMD Radeon Instinct MI25", "nvv4-series", {
        "Standard_NV4as_v4": (Fraction(1, 8), 4, 14), "Standard_NV8as_v4": (Fraction(1, 4), 8, 28),
        "Standard_NV16as_v4": (Fraction(1, 2), 16, 56), "Standard_NV32as_v4": (1, 32, 112)}),
    **_series("NVIDIA A10", "nvadsa10v5-series", {
        "Standard_NV6ads_A10_v5": (Fraction(1, 6), 6, 55), "Standard_NV12ads_A10_v5": (Fraction(1, 3), 12, 110),
        "Standard_NV18ads_A10_v5": (Fraction(1, 2), 18, 220), "Standard_NV36ads_A10_v5": (1, 36, 440),
        "Standard_NV36adms_A10_v5": (1, 36, 880), "Standard_NV72ads_A10_v5": (2, 72, 880)}),
    # Retired series, still priced in some regions.
    **_series("NVIDIA K80", "nc-series-retirement", {
        "Standard_NC6": (1, 6, 56), "Standard_NC12": (2, 12, 112), "Standard_NC24": (4, 24, 224),
        "Standard_NC24r": (4, 24, 224)}),
    **_series("NVIDIA Tesla P100 PCIe 16GB", "ncv2-series", {
        "Standard_NC6s_v2": (1, 6, 112), "Standard_NC12s_v2": (2, 12, 224), "Standard_NC24s_v2": (4, 24, 448),
        "Standard_NC24rs_v2": (4, 24, 448)}),
    **_series("NVIDIA Tesla P40", "nd-series", {
        "Standard_ND6s": (1, 6, 112), "Standard_ND12s": (2, 12, 224), "Standard_ND24s": (4, 24, 448),
        "Standard_ND24rs": (4, 24, 448)}),
    **_series("NVIDIA Tesla M60", "nv-series-retirement", {
        "Standard_NV6": (1, 6, 56), "Standard_NV12": (2, 12, 112), "Standard_NV24": (4, 24, 224)}),
}  # fmt: skip
_CANONICAL = {name.lower(): name for name in SIZES}

# N-series sizes that are not GPUs at all, by name prefix: the NP series has Xilinx FPGAs.
NOT_GPUS = ("standard_np",)


def size_named(arm_sku_name: str) -> str | None:
    """The table's spelling of an `armSkuName` given in any case, else None."""
    return _CANONICAL.get(arm_sku_name.strip().lower())
