"""The card table: the only place gpuprice states what a GPU card is.

One `Card` per model, memory variant and form factor, with the figures its data sheet gives:
memory as sold (GB), peak memory bandwidth (GB/s), form factor and interconnect, dense BF16 and FP16
tensor TFLOPS (vendors print the sparse figure with an asterisk; dense is half of it), FP32 TFLOPS,
how many MIG instances it splits into, and a plausible rental band in USD per GPU-hour for the sanity
checks. A figure no document confirms is None (unknown is not zero, and never guessed): where a
figure would only be another card's figure assumed (H800 = H100, GH200 compute = H100, T4G = T4,
A800 bandwidth = A100), it is None. Every layer reads these: the collectors' sanity checks and size
rounding (`MODEL_FACTS`, `nearest_known_size`), the exports' names (`skypilot_name`,
`gpuhunt_name`), the estimator's sizes, bandwidths and TFLOPS. Which provider names mean which card
is in `pricedb/card_names.py`.

Where the figures come from: each card names its document in `datasheet` (the vendor's data sheet,
whitepaper or product page; a press or provider page where the vendor published none) and says in
`verification` how the figures were checked when the table was filled (2026-12):

- `stored_copy`: the main figures were read in a copy of that vendor document;
- `partial`: some read there, the rest recalled from the vendor document;
- `recalled`: from the vendor document, not re-read;
- `unconfirmed`: no vendor data sheet exists (China-market H800, H20, L20; A10G, T4G) or only third
  parties state the figures.

Anything not `stored_copy` should be re-checked against `datasheet` before it decides a ranking.
Conventions: dense means dense (NVIDIA Ampere+/AMD CDNA3 sparse figures halved); GeForce BF16/FP16 is
the whitepaper's "with FP32 accumulate" rate (what training uses); Volta, Turing and Pascal have no
BF16 (None) and their FP16 figure is the FP16 rate (tensor where they have tensor cores); K80 and M60
are per GPU chip, A16 per GPU (four per board), MI250/MI250X per OAM module — as the clouds count them.
`mig_instances` is the "Max Number of Instances" of NVIDIA's MIG User Guide, Supported GPUs
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html): a `1g` profile is one
of that many compute slices; None where the guide does not list the card.

Price bands are a judgement, not sourced: per model, from the research notes' per-card bands
(marketplace floor to hyperscaler on-demand list price, 2026) widened to a third of the lowest and
twice the highest, so a real price is never refused for being unusual, only for being impossible
(a monthly price read as hourly, a per-GPU price read per instance). Every variant of a model
carries its model's band.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verification = Literal["stored_copy", "partial", "recalled", "unconfirmed"]

# The documents the figures come from (each card names its own).
A100_DATASHEET = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
H100_WHITEPAPER = "https://nvdam.widen.net/s/95bdhpsgrs/nvidia_h100_tensor_core_gpu_architecture_whitepaper_v1.03"
H100_NVL_BRIEF = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/h100/PB-11773-001_v01.pdf"
H200_PAGE = "https://www.nvidia.com/en-us/data-center/h200/"
HGX_PAGE = "https://www.nvidia.com/en-us/data-center/hgx/"
GH200_DATASHEET = "https://resources.nvidia.com/en-us-grace-cpu/grace-hopper-superchip"
AMPERE_WHITEPAPER = (  # Table 1 also gives V100 SXM2 and P100 SXM2
    "https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"
)
CHINA_PRESS_A800 = (  # NVIDIA's A800 listing as reported: A100 figures, NVLink cut to 400 GB/s
    "https://tweakers.net/nieuws/203182/nvidia-introduceert-a800-gpu-voor-china-die-niet-onder-exportrestricties-vs-valt.html"
)
CHINA_PRESS_H20_L20 = (  # a retail listing's H20/L20 figures, via Tom's Hardware (no NVIDIA sheet)
    "https://www.tomshardware.com/pc-components/gpus/"
    "new-nvidia-ai-gpus-designed-to-get-around-us-export-bans-come-to-china-h20-l20-and-l2-to-fill-void-left-by-restricted-models"
)
L40S_L40_DATASHEET = "https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"
ADA_WHITEPAPER = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
RUNPOD_GPU_TYPES = "https://docs.runpod.io/references/gpu-types"  # memory only, for cards without a sheet read
V100_DATASHEET = (
    "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
)
P100_PCIE_DATASHEET = "https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf"
TENCENT_GPU_DOC = "https://cloud.tencent.com/document/product/560/19700"  # P40, P4 (NVIDIA sheets not read)
AWS_BATCH_GPU_TABLE = "https://docs.aws.amazon.com/batch/latest/userguide/gpu-jobs.html"
AMD_MI200 = "https://www.amd.com/en/products/accelerators/instinct/mi200.html"
NO_DATASHEET = "none published (China-market card)"


@dataclass(frozen=True, slots=True)
class Card:
    """One card model in one memory variant and form factor, as its data sheet describes it."""

    model: str  # "A100": the name offers carry (`Quote.gpu_model`)
    memory_gb: float  # as sold (40, 80, 141), not as reported in MiB or GiB
    form_factor: str  # "SXM4", "SXM5", "PCIe", "OAM", "Superchip" — `Quote.form_factor`'s words
    interconnect: str  # "NVLink", "PCIe", "NVLink-C2C", "Infinity Fabric", "RoCE" — `Quote.interconnect`'s
    bandwidth_gb_s: float | None  # peak memory bandwidth, 10^9 bytes/s
    bf16_dense_tflops: float | None  # tensor, dense
    fp16_dense_tflops: float | None  # tensor, dense (the FP16 rate on cards without tensor cores)
    usd_per_gpu_hour: tuple[float, float]  # plausible rental band for the sanity checks (a judgement)
    datasheet: str  # where the figures come from
    fp32_tflops: float | None = None  # non-tensor FP32 peak
    vendor: str = "NVIDIA"
    variant: str | None = None  # "NVL": a variant a name must say (H100 NVL, H200 NVL)
    mig_instances: int | None = None  # MIG compute slices (7 for A100/H100, 4 for A30); None: no MIG
    skypilot_name: str | None = None  # SkyPilot's AcceleratorName (skypilot-catalog v8); None: it has none
    gpuhunt_name: str | None = None  # gpuhunt's gpu_name; None: it has none
    verification: Verification = "stored_copy"

    @property
    def form_factor_class(self) -> str:
        return _form_factor_class(self.form_factor)


def _form_factor_class(form_factor: str) -> str:
    """PCIe (an add-in card) or SXM (a module on the board: SXM of any generation, OAM, a superchip):
    what a name that says only "SXM" or "PCIe" is matched against."""
    return "PCIe" if form_factor.upper().startswith("PCI") else "SXM"


# Per model: (research's lowest per-card low ÷ 3, its highest per-card high × 2), see the docstring.
_BANDS: dict[str, tuple[float, float]] = {
    "B200": (0.66, 30.0), "GB200": (1.0, 32.0), "B300": (1.0, 36.0),
    "H200": (0.4, 28.0), "H100": (0.26, 26.0), "H800": (0.23, 20.0), "H20": (0.13, 12.0), "GH200": (0.33, 18.0),
    "A100": (0.1, 12.0), "A800": (0.13, 10.0), "A40": (0.066, 5.0), "A30": (0.066, 5.0), "A10": (0.05, 7.0),
    "A10G": (0.1, 5.0), "A16": (0.033, 2.0),
    "L40S": (0.1, 8.0), "L40": (0.1, 7.0), "L20": (0.066, 6.0), "L4": (0.033, 3.0),
    "A6000": (0.066, 3.0), "A5000": (0.033, 2.0), "A4500": (0.033, 1.8), "A4000": (0.026, 1.6),
    "RTX6000Ada": (0.1, 4.0), "RTX5000Ada": (0.066, 2.4), "RTX4000Ada": (0.033, 1.6), "RTX2000Ada": (0.016, 1.2),
    "RTXPRO6000": (0.16, 8.0), "RTX5090": (0.066, 3.0), "RTX4090": (0.05, 2.4), "RTX4080": (0.033, 1.6),
    "RTX3090": (0.026, 1.6), "RTX6000": (0.033, 2.0), "RTX8000": (0.033, 2.0),
    "V100": (0.016, 8.0), "T4": (0.016, 2.4), "T4G": (0.033, 2.0), "P100": (0.016, 4.0), "P40": (0.016, 3.0),
    "P4": (0.016, 2.0), "K80": (0.016, 2.0), "M60": (0.033, 3.0),
    "MI300X": (0.33, 18.0), "MI325X": (0.5, 18.0), "MI355X": (0.66, 24.0), "MI250X": (0.16, 8.0),
    "MI250": (0.16, 7.0), "MI210": (0.1, 6.0), "MI25": (0.016, 4.0), "V520": (0.033, 3.0),
    "Gaudi3": (0.33, 16.0), "Gaudi2": (0.16, 10.0), "Gaudi": (0.16, 6.0),
}  # fmt: skip


def _card(
    model: str,
    memory_gb: float,
    form_factor: str,
    interconnect: str,
    bandwidth_gb_s: float | None,
    bf16: float | None,
    fp16: float | None,
    fp32: float | None,
    datasheet: str,
    verification: Verification,
    *,
    skypilot: str | None,
    gpuhunt: str | None,
    mig: int | None = None,
    vendor: str = "NVIDIA",
    variant: str | None = None,
) -> Card:
    figures = [None if f is None else float(f) for f in (bandwidth_gb_s, bf16, fp16, fp32)]
    bandwidth, bf16, fp16, fp32 = figures
    return Card(
        model, float(memory_gb), form_factor, interconnect, bandwidth, bf16, fp16, _BANDS[model], datasheet,
        fp32, vendor, variant, mig, skypilot, gpuhunt, verification,
    )  # fmt: skip


# Ordered as the answers list the models: NVIDIA data centre (newest generation first), then
# workstation and GeForce, then AMD and Intel. Columns: model, GB, form factor, interconnect,
# bandwidth GB/s, BF16, FP16 and FP32 TFLOPS, document, verification.
CARDS: tuple[Card, ...] = (
    # HGX page, per-GPU rows: 180 GB, 7.7 TB/s, FP16/BF16 4.5 PF (sparse) → 2,250 dense, FP32 75.
    # NVIDIA's DGX sheet implies 8 TB/s and third parties say 192 GB; clouds sell 180 GB.
    _card("B200", 180, "SXM6", "NVLink", 7700, 2250, 2250, 75, HGX_PAGE, "stored_copy",
          skypilot="B200", gpuhunt="B200", mig=7),
    # HGX page, GB200 NVL72 per-GPU row (OCI's shape table says 192 GB per GPU).
    _card("GB200", 186, "Superchip", "NVLink", 8000, 2500, 2500, 80, HGX_PAGE, "stored_copy",
          skypilot="GB200", gpuhunt=None, mig=7),
    # Memory as RunPod sells it; Verda and OCI say 262 GB. Bandwidth and compute not confirmed.
    _card("B300", 288, "SXM6", "NVLink", None, None, None, None, RUNPOD_GPU_TYPES, "partial",
          skypilot="B300", gpuhunt="B300"),
    # H200 product page: 141 GB, 4.8 TB/s; SXM 1,979* and NVL 1,671* TFLOPS (sparse).
    _card("H200", 141, "SXM5", "NVLink", 4800, 989.5, 989.5, 67, H200_PAGE, "stored_copy",
          skypilot="H200", gpuhunt="H200", mig=7),
    _card("H200", 141, "PCIe", "NVLink", 4800, 835.5, 835.5, 60, H200_PAGE, "stored_copy",
          skypilot="H200", gpuhunt="H200", mig=7, variant="NVL"),
    # H100 whitepaper Table 1: dense BF16/FP16 989.4 SXM5, 756 PCIe; SXM5 3,350 GB/s; PCIe brief
    # PB-11133-001 2,000 GB/s (recalled); NVL brief PB-11773-001: 94 GB, 3,938 GB/s, 1,671* TFLOPS.
    _card("H100", 80, "SXM5", "NVLink", 3350, 989.4, 989.4, 67, H100_WHITEPAPER, "stored_copy",
          skypilot="H100", gpuhunt="H100", mig=7),
    _card("H100", 80, "PCIe", "PCIe", 2000, 756, 756, 51, H100_WHITEPAPER, "partial",
          skypilot="H100", gpuhunt="H100", mig=7),
    _card("H100", 94, "PCIe", "NVLink", 3938, 835.5, 835.5, 60, H100_NVL_BRIEF, "stored_copy",
          skypilot="H100-NVL", gpuhunt="H100NVL", mig=7, variant="NVL"),
    # No NVIDIA sheet; press: the H100 die with NVLink cut to 400 GB/s. Nothing else is stated.
    _card("H800", 80, "SXM5", "NVLink", None, None, None, None, NO_DATASHEET, "unconfirmed",
          skypilot=None, gpuhunt=None),
    _card("H800", 80, "PCIe", "PCIe", None, None, None, None, NO_DATASHEET, "unconfirmed",
          skypilot=None, gpuhunt=None),
    # Retail listing via Tom's Hardware: 96 GB HBM3, 4.0 TB/s, BF16 148; FP32 44 from one summary.
    _card("H20", 96, "SXM5", "NVLink", 4000, 148, 148, 44, CHINA_PRESS_H20_L20, "unconfirmed",
          skypilot=None, gpuhunt=None, mig=7),
    # GH200 sheet not read: 96 GB HBM3 / 4 TB/s via third parties, 144 GB HBM3e / 4.9 TB/s recalled
    # from the HBM3e announcement; compute is only "= H100 SXM" anywhere, so None.
    _card("GH200", 96, "Superchip", "NVLink-C2C", 4000, None, None, None, GH200_DATASHEET, "partial",
          skypilot="GH200", gpuhunt="GH200", mig=7),
    _card("GH200", 144, "Superchip", "NVLink-C2C", 4900, None, None, None, GH200_DATASHEET, "unconfirmed",
          skypilot="GH200", gpuhunt="GH200"),
    # A100 data sheet r4: 40GB 1,555 GB/s, 80GB PCIe 1,935, 80GB SXM4 2,039; BF16/FP16 312 | 624*.
    _card("A100", 40, "SXM4", "NVLink", 1555, 312, 312, 19.5, A100_DATASHEET, "stored_copy",
          skypilot="A100", gpuhunt="A100", mig=7),
    _card("A100", 40, "PCIe", "PCIe", 1555, 312, 312, 19.5, A100_DATASHEET, "stored_copy",
          skypilot="A100", gpuhunt="A100", mig=7),
    _card("A100", 80, "SXM4", "NVLink", 2039, 312, 312, 19.5, A100_DATASHEET, "stored_copy",
          skypilot="A100-80GB", gpuhunt="A100", mig=7),
    _card("A100", 80, "PCIe", "PCIe", 1935, 312, 312, 19.5, A100_DATASHEET, "stored_copy",
          skypilot="A100-80GB", gpuhunt="A100", mig=7),
    # NVIDIA's A800 listing as the press reported it: A100 compute, NVLink 400 GB/s. Bandwidth is
    # not stated for the A800 itself (None).
    _card("A800", 40, "PCIe", "PCIe", None, 312, 312, 19.5, CHINA_PRESS_A800, "partial",
          skypilot="A800", gpuhunt=None),
    _card("A800", 80, "SXM4", "NVLink", None, 312, 312, 19.5, CHINA_PRESS_A800, "partial",
          skypilot="A800", gpuhunt=None),
    _card("A800", 80, "PCIe", "PCIe", None, 312, 312, 19.5, CHINA_PRESS_A800, "partial",
          skypilot="A800", gpuhunt=None),
    # A40 data sheet (149.7 | 299.4*).
    _card("A40", 48, "PCIe", "PCIe", 696, 149.7, 149.7, 37.4,
          "https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf", "stored_copy",
          skypilot="A40", gpuhunt="A40"),
    # A30 data sheet: 165 | 330* (read); memory and bandwidth recalled.
    _card("A30", 24, "PCIe", "PCIe", 933, 165, 165, 10.3,
          "https://www.nvidia.com/en-us/data-center/products/a30-gpu/", "partial",
          skypilot="A30", gpuhunt=None, mig=4),
    # A10 data sheet: 125 | 250*, 600 GB/s (recalled; 31.2 FP32, not Tencent's 62.5).
    _card("A10", 24, "PCIe", "PCIe", 600, 125, 125, 31.2,
          "https://www.nvidia.com/en-us/data-center/products/a10-gpu/", "partial",
          skypilot="A10", gpuhunt="A10"),
    # AWS's A10G has no NVIDIA sheet: 24 GB and 600 GB/s from third parties; compute unpublished.
    _card("A10G", 24, "PCIe", "PCIe", 600, None, None, None,
          "https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/", "unconfirmed",
          skypilot="A10G", gpuhunt="A10G"),
    # A16 product brief PB-10518: per GPU (4 per board), 4x 17.9 | 35.9* (recalled).
    _card("A16", 16, "PCIe", "PCIe", 200, 17.9, 17.9, 4.5,
          "https://www.nvidia.com/en-us/data-center/products/a16-gpu/", "partial",
          skypilot=None, gpuhunt="A16"),
    # L40S / L40 data sheet: 864 GB/s; 362.05 | 733* and 181.05 | 362.1*.
    _card("L40S", 48, "PCIe", "PCIe", 864, 362.05, 362.05, 91.6, L40S_L40_DATASHEET, "stored_copy",
          skypilot="L40S", gpuhunt="L40S"),
    _card("L40", 48, "PCIe", "PCIe", 864, 181.05, 181.05, 90.5, L40S_L40_DATASHEET, "stored_copy",
          skypilot="L40", gpuhunt="L40"),
    # Retail listing via Tom's Hardware: 48 GB GDDR6, 864 GB/s, BF16 119.5; FP32 not found.
    _card("L20", 48, "PCIe", "PCIe", 864, 119.5, 119.5, None, CHINA_PRESS_H20_L20, "unconfirmed",
          skypilot=None, gpuhunt=None),
    # L4 data sheet: 242* → 121 dense, 300 GB/s (seen in summaries of the sheet).
    _card("L4", 24, "PCIe", "PCIe", 300, 121, 121, 30.3, "https://www.nvidia.com/en-us/data-center/l4/", "partial",
          skypilot="L4", gpuhunt="L4"),
    # RTX A-series data sheets: A6000 309.7* → 154.85; A5000 222.2* → 111.1 (recalled); A4000 153.4* → 76.7.
    _card("A6000", 48, "PCIe", "PCIe", 768, 154.85, 154.85, 38.7,
          "https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/"
          "proviz-print-nvidia-rtx-a6000-datasheet-us-nvidia-1454980-r9-web%20(1).pdf", "partial",
          skypilot="A6000", gpuhunt="A6000"),
    _card("A5000", 24, "PCIe", "PCIe", 768, 111.1, 111.1, 27.8,
          "https://www.nvidia.com/en-us/design-visualization/rtx-a5000/", "recalled",
          skypilot="RTXA5000", gpuhunt="A5000"),
    _card("A4500", 20, "PCIe", "PCIe", 640, None, None, None, RUNPOD_GPU_TYPES, "partial",
          skypilot="RTXA4500", gpuhunt="A4500"),
    _card("A4000", 16, "PCIe", "PCIe", 448, 76.7, 76.7, 19.2,
          "https://www.nvidia.com/en-us/design-visualization/rtx-a4000/", "stored_copy",
          skypilot="RTXA4000", gpuhunt="A4000"),
    # RTX 6000 Ada data sheet prints 1,457 TFLOPS (FP8, sparse): ÷2 sparsity ÷2 FP8→FP16 = 364.2 dense.
    _card("RTX6000Ada", 48, "PCIe", "PCIe", 960, 364.2, 364.2, 91.1,
          "https://www.nvidia.com/en-us/design-visualization/rtx-6000/", "recalled",
          skypilot="RTX6000-Ada", gpuhunt="RTX6000Ada"),
    # Memory as RunPod lists it; bandwidth recalled from NVIDIA's pages; compute not researched.
    _card("RTX5000Ada", 32, "PCIe", "PCIe", 576, None, None, None, RUNPOD_GPU_TYPES, "partial",
          skypilot="RTX5000-Ada", gpuhunt=None),
    _card("RTX4000Ada", 20, "PCIe", "PCIe", 360, None, None, None, RUNPOD_GPU_TYPES, "partial",
          skypilot="RTX4000-Ada", gpuhunt="RTX4000Ada"),
    _card("RTX2000Ada", 16, "PCIe", "PCIe", 224, None, None, None, RUNPOD_GPU_TYPES, "partial",
          skypilot="RTX2000-Ada", gpuhunt="RTX2000Ada"),
    # RTX PRO 6000 Blackwell: 96 GB GDDR7; 1,792 GB/s Workstation, 1,597 GB/s Server Edition (the one
    # clouds rack): the lower is stated, so an estimate never promises the faster card. Compute not researched.
    _card("RTXPRO6000", 96, "PCIe", "PCIe", 1597, None, None, None,
          "https://www.nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000/", "partial",
          skypilot="RTXPRO6000", gpuhunt="RTXPRO6000", mig=4),
    # GeForce whitepapers, "FP16/BF16 tensor with FP32 accumulate", dense: 5090 209.5 (whitepaper
    # not read; matches torchtitan's table), 4090 165.2 (Ada Appendix A), 4080 97.5 (recalled),
    # 3090 71 (GA102 whitepaper).
    _card("RTX5090", 32, "PCIe", "PCIe", 1792, 209.5, 209.5, 104.8,
          "https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf",
          "partial", skypilot="RTX5090", gpuhunt=None),
    _card("RTX4090", 24, "PCIe", "PCIe", 1008, 165.2, 165.2, 82.6, ADA_WHITEPAPER, "stored_copy",
          skypilot="RTX4090", gpuhunt="RTX4090"),
    _card("RTX4080", 16, "PCIe", "PCIe", 716.8, 97.5, 97.5, 48.7, ADA_WHITEPAPER, "recalled",
          skypilot="RTX4080", gpuhunt=None),
    _card("RTX3090", 24, "PCIe", "PCIe", 936, 71, 71, 35.6,
          "https://images.nvidia.com/aem-dam/en-zz/Solutions/geforce/ampere/pdf/"
          "NVIDIA-ampere-GA102-GPU-Architecture-Whitepaper-V1.pdf", "stored_copy",
          skypilot="RTX3090", gpuhunt="RTX3090"),
    # Quadro RTX 6000 (Turing, 24 GB) — not the RTX 6000 Ada. Turing whitepaper: FP16 tensor 130.5.
    _card("RTX6000", 24, "PCIe", "PCIe", 672, None, 130.5, 16.3,
          "https://images.nvidia.com/aem-dam/en-zz/Solutions/design-visualization/technologies/"
          "turing-architecture/NVIDIA-Turing-Architecture-Whitepaper.pdf", "stored_copy",
          skypilot="RTX6000", gpuhunt="RTX6000"),
    # Quadro RTX 8000: the RTX 6000's TU102 with 48 GB (same bandwidth and tensor rates), per NVIDIA's
    # Quadro RTX 8000 data sheet (recalled, not re-read); sold by E2E Networks.
    _card("RTX8000", 48, "PCIe", "PCIe", 672, None, 130.5, 16.3,
          "https://www.nvidia.com/content/dam/en-zz/Solutions/design-visualization/quadro-product-literature/"
          "quadro-rtx-8000-us-nvidia-946977-r1-web.pdf", "recalled",
          skypilot="RTX8000", gpuhunt=None),
    # V100: SXM2 from the Ampere whitepaper's Table 1 (FP16 tensor 125), PCIe from the V100 sheet (112, recalled).
    _card("V100", 16, "SXM2", "NVLink", 900, None, 125, 15.7, AMPERE_WHITEPAPER, "stored_copy",
          skypilot="V100", gpuhunt="V100"),
    _card("V100", 32, "SXM2", "NVLink", 900, None, 125, 15.7, AMPERE_WHITEPAPER, "stored_copy",
          skypilot="V100-32GB", gpuhunt="V100"),
    _card("V100", 16, "PCIe", "PCIe", 900, None, 112, 14.0, V100_DATASHEET, "recalled",
          skypilot="V100", gpuhunt="V100"),
    _card("V100", 32, "PCIe", "PCIe", 900, None, 112, 14.0, V100_DATASHEET, "recalled",
          skypilot="V100-32GB", gpuhunt="V100"),
    # T4 data sheet (not read; 65 FP16 tensor, 320 GB/s via summaries). T4G (AWS g5g): 16 GB per the
    # AWS table; NVIDIA publishes no T4G sheet, so nothing else is stated.
    _card("T4", 16, "PCIe", "PCIe", 320, None, 65, 8.1,
          "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
          "partial", skypilot="T4", gpuhunt="T4"),
    _card("T4G", 16, "PCIe", "PCIe", None, None, None, None, AWS_BATCH_GPU_TABLE, "unconfirmed",
          skypilot="T4g", gpuhunt=None),
    # P100: no tensor cores, FP16 = 2x FP32. PCIe sheet (recalled); SXM2 from the Ampere whitepaper.
    _card("P100", 16, "PCIe", "PCIe", 732, None, 18.7, 9.3, P100_PCIE_DATASHEET, "recalled",
          skypilot="P100", gpuhunt="P100"),
    _card("P100", 12, "PCIe", "PCIe", 549, None, 18.7, 9.3, P100_PCIE_DATASHEET, "recalled",
          skypilot="P100", gpuhunt="P100"),
    _card("P100", 16, "SXM2", "NVLink", 732, None, 21.2, 10.6, AMPERE_WHITEPAPER, "stored_copy",
          skypilot="P100", gpuhunt="P100"),
    # No fast FP16. P40/P4 FP32 from Tencent's hardware table, bandwidth recalled; K80 and M60 per chip.
    _card("P40", 24, "PCIe", "PCIe", 346, None, None, 12, TENCENT_GPU_DOC, "partial", skypilot="P40", gpuhunt=None),
    _card("P4", 8, "PCIe", "PCIe", 192, None, None, 5.5, TENCENT_GPU_DOC, "partial", skypilot="P4", gpuhunt="P4"),
    _card("K80", 12, "PCIe", "PCIe", 240, None, None, 4.37, AWS_BATCH_GPU_TABLE, "partial",
          skypilot="K80", gpuhunt="K80"),
    _card("M60", 8, "PCIe", "PCIe", 160, None, None, 4.8, AWS_BATCH_GPU_TABLE, "partial",
          skypilot="M60", gpuhunt="M60"),
    # AMD product pages (not read directly; figures agree across torchtitan's table and several
    # secondary pages): MI300X 2,614.9 sparse → 1,307.4; MI325X the same compute, 256 GB as shipped
    # (gpuhunt's 288 is the pre-launch figure); MI355X 2,500 dense.
    _card("MI300X", 192, "OAM", "Infinity Fabric", 5300, 1307.4, 1307.4, 163.4,
          "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html", "partial",
          skypilot="MI300X", gpuhunt="MI300X", vendor="AMD"),
    _card("MI325X", 256, "OAM", "Infinity Fabric", 6000, 1307.4, 1307.4, 163.4,
          "https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html", "partial",
          skypilot=None, gpuhunt="MI325X", vendor="AMD"),
    _card("MI355X", 288, "OAM", "Infinity Fabric", 8000, 2500, 2500, None,
          "https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html", "partial",
          skypilot="MI355X", gpuhunt=None, vendor="AMD"),
    # AMD MI200 launch table (CDNA2 has no sparsity): per OAM module of two GCDs.
    _card("MI250X", 128, "OAM", "Infinity Fabric", 3277, 383, 383, 47.9, AMD_MI200, "stored_copy",
          skypilot=None, gpuhunt="MI250X", vendor="AMD"),
    _card("MI250", 128, "OAM", "Infinity Fabric", 3277, 362.1, 362.1, 45.3, AMD_MI200, "stored_copy",
          skypilot=None, gpuhunt="MI250", vendor="AMD"),
    _card("MI210", 64, "PCIe", "PCIe", 1638, 181.0, 181.0, 22.6,
          "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html", "partial",
          skypilot=None, gpuhunt="MI210", vendor="AMD"),
    # Radeon Instinct MI25 (Azure NVv4, packed FP16, no matrix cores) and Radeon Pro V520 (AWS g4ad): recalled.
    _card("MI25", 16, "PCIe", "PCIe", 484, None, 24.6, 12.3,
          "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nvv4-series", "partial",
          skypilot="Radeon MI25", gpuhunt="MI25", vendor="AMD"),
    _card("V520", 8, "PCIe", "PCIe", 512, None, None, 7.37,
          "https://docs.aws.amazon.com/AWSEC2/latest/WindowsGuide/accelerated-computing-instances.html", "recalled",
          skypilot="Radeon Pro V520", gpuhunt=None, vendor="AMD"),
    # Intel Gaudi: figures recalled or from gpuhunt; no gpuprice provider rents them today.
    _card("Gaudi3", 128, "OAM", "RoCE", 3700, 1835, 1835, None,
          "https://www.intel.com/content/www/us/en/content-details/817486/intel-gaudi-3-ai-accelerator-white-paper.html",
          "recalled", skypilot=None, gpuhunt="Gaudi3", vendor="Intel"),
    _card("Gaudi2", 96, "OAM", "RoCE", 2460, None, None, None,
          "https://www.intel.com/content/www/us/en/products/details/processors/ai-accelerators/gaudi.html",
          "unconfirmed", skypilot=None, gpuhunt="Gaudi2", vendor="Intel"),
    _card("Gaudi", 32, "OAM", "RoCE", 1000, None, None, None, "https://aws.amazon.com/ec2/instance-types/dl1/",
          "partial", skypilot="Gaudi HL-205", gpuhunt="Gaudi", vendor="Intel"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class GpuModelFacts:
    """What the cards of one model share: the memory sizes it is sold in and its plausible price band."""

    memory_sizes_gb: frozenset[float]
    usd_per_gpu_hour: tuple[float, float]


def _model_facts() -> dict[str, GpuModelFacts]:
    by_model: dict[str, list[Card]] = {}
    for card in CARDS:
        by_model.setdefault(card.model, []).append(card)
    return {
        model: GpuModelFacts(
            frozenset(card.memory_gb for card in cards),
            (min(c.usd_per_gpu_hour[0] for c in cards), max(c.usd_per_gpu_hour[1] for c in cards)),
        )
        for model, cards in by_model.items()
    }


MODEL_FACTS: dict[str, GpuModelFacts] = _model_facts()
_MODEL_BY_LOWER = {model.lower(): model for model in MODEL_FACTS}


def model_named(name: str) -> str | None:
    """The table's spelling of a model name given in any case (`rtx4090` → `RTX4090`), else None."""
    return _MODEL_BY_LOWER.get(name.strip().lower())


def memory_sizes(model: str) -> tuple[float, ...]:
    """The sizes `model` is sold in, smallest first (empty for a model the table does not know)."""
    facts = MODEL_FACTS.get(model)
    return tuple(sorted(facts.memory_sizes_gb)) if facts else ()


def cards_of(model: str) -> tuple[Card, ...]:
    """Every variant of `model` (empty for a model the table does not know)."""
    return tuple(c for c in CARDS if c.model == model)


def card(model: str, memory_gb: float, form_factor: str | None = None) -> Card | None:
    """The card of `model` sold with `memory_gb`; `form_factor` ("SXM4", "SXM", "PCIe") picks among its
    variants. Without one, or with one the model is not sold in, the PCIe variant: the slower, so an
    estimate never promises the faster card. None for a model or size the table does not know."""
    variants = [c for c in CARDS if c.model == model and c.memory_gb == memory_gb]
    if form_factor:
        wanted = _form_factor_class(form_factor)
        variants = [c for c in variants if c.form_factor_class == wanted] or variants
    pcie = [c for c in variants if c.form_factor_class == "PCIe"]
    return next(iter(pcie or variants), None)


def nearest_known_size(model: str, reported_gb: float, tolerance: float = 0.07) -> float | None:
    """Marketing size (40, 80, …) for a reported size in GB or GiB within `tolerance`, else None.
    Providers report 40960 MiB, 39.4 GiB usable or 42.5 GB for the same 40GB card."""
    for size in memory_sizes(model):
        if abs(reported_gb - size) <= size * tolerance:
            return size
    return None
