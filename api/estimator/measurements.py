"""Published GPU-memory measurements the estimator is checked against (tests/estimator/test_measurements.py
and the accuracy table in docs/estimator.md). `python -m api.estimator.measurements [group]` prints the table.

Every figure is checked at ±15% (the Baichuan2 weights at ±5%), each with the set-up it was measured
in (ZeRO stage, attention, logits) and compared with what it counts (`scope`). Groups:
- `required`: ESTIMATOR.md §4.
- `weights`: ESTIMATOR.md §1.5 (Baichuan2 README), weights only.
- `extra`: other rows of the same public tables.
- `speed`: decoding tokens/s (QwenLM/Qwen README); the throughput constants are fitted to these rows,
  so they show the fit, not an independent check.
One row contradicts its own table and is shown but not checked (`outlier` says why; a test holds the
arithmetic).
"""

from __future__ import annotations

from dataclasses import dataclass, field

QWEN_FT = (
    "QwenLM/Qwen README.md 'Profiling of Memory and Speed': A100-SXM4-80G, flash-attn 2, batch 1, "
    "gradient checkpointing, LoRA r=64 on all linear layers, peak GB"
)
QWEN_INFER = (
    "QwenLM/Qwen README.md 'Inference Performance': A100-SXM4-80G, flash-attn 2, generating 2048 tokens "
    "from a one-token prompt; Qwen's profile.py prints torch.cuda.max_memory_allocated()"
)
QWEN_KV = (
    "QwenLM/Qwen README.md 'KV cache quantization' table, rows without it: A100-SXM4-80G, BF16, PyTorch 2.0.1 "
    "(the inference profile's set-up; taken as its max_memory_allocated figure too)"
)
BAICHUAN = "baichuan-inc/Baichuan2 README_EN.md @ed1cf0f (via ESTIMATOR.md §1.5): model memory, GiB"
DEEPSEEK = (
    "deepseek-ai/DeepSeek-LLM README.md 'GPU Memory Usage': A100-PCIE-40GB, peak inference memory, "
    "transformers of November 2023 (eager attention, logits of every prompt position in fp32); tensors only: "
    "at batch 1 × 256 tokens it is 0.42 GiB above the 12.87 GiB of weights, no room for a CUDA context"
)

# Qwen's KV-cache table at batch 4: 16.3 → 24.1 GiB for 3 more sequences of 1,024 tokens is 2.6 GiB per
# sequence, while the same table's batch 16 → 32 gives 1.06 and its sequence lengths 512 → 8192 give
# 1.07 per 1,024 tokens — and a token's KV cache costs the same wherever it sits. No model in which
# memory grows with the tokens held can meet all three, so this row is shown but not checked.
QWEN_KV_BATCH_4 = "contradicts its own table: 2.6 GiB per added sequence of 1,024 tokens against 1.06–1.07 elsewhere"

SEQ = (256, 512, 1024, 2048, 4096, 8192)
_FT = {"gradient_checkpointing": True, "batch": 1}


# What a memory figure counts. "process": the whole process as nvidia-smi shows it, which is what a card
# must hold and what the estimate answers (total_gb). "allocated": PyTorch's
# `torch.cuda.max_memory_allocated()` — tensors only, without the CUDA context and the caching allocator's
# reserve, which the estimate's fixed overhead (`overhead_gb`: CUDA context, cuBLAS workspace,
# allocator) stands for; such a figure is compared with total_gb − overhead_gb.
PROCESS, ALLOCATED = "process", "allocated"


@dataclass(frozen=True)
class Measurement:
    label: str
    group: str  # required | weights | extra | speed
    query: dict
    measured: float  # GiB (speed: tokens/s)
    source: str
    compare: str = "total_gb"  # Estimate field (or breakdown field) compared; "tokens_per_s" for speed
    gpu_count: int = 1  # speed rows: GPUs of the measured machine
    note: str = ""
    tolerance: float = field(default=0.15)
    scope: str = PROCESS  # what the figure counts (above)
    outlier: str = ""  # why the row is shown but not checked (it contradicts its own table)


def _finetune_rows(group: str, rows: tuple) -> list[Measurement]:
    """Rows of Qwen's fine-tuning profile (QWEN_FT), each (label, query, GiB per SEQ length[, note]):
    one Measurement per sequence length, at batch 1 with gradient checkpointing (_FT)."""
    return [
        Measurement(
            f"{label} s={s}",
            group,
            query | {"context": s} | _FT,
            v,
            QWEN_FT,
            note=note[0] if note else "",
        )
        for label, query, values, *note in rows
        for s, v in zip(SEQ, values, strict=False)
    ]


MEASUREMENTS: list[Measurement] = [
    # --- ESTIMATOR.md §4 ---
    *_finetune_rows(
        "required",
        (
            ("Qwen-7B LoRA", {"model": "qwen-7b", "workload": "lora"}, (20.1, 20.4, 21.5, 23.8, 29.7, 36.6)),
            (
                "Qwen-7B Q-LoRA",
                {"model": "qwen-7b", "workload": "qlora", "precision": "fp16", "zero": 2},
                (11.5, 11.5, 12.3, 13.9, 16.9, 23.5),
                "GPTQ-Int4 base, estimated as NF4 (4.127 bits); finetune_qlora_single_gpu.sh runs DeepSpeed "
                "ZeRO-2 on its one GPU: zero=2",
            ),
            ("Qwen-14B LoRA", {"model": "qwen-14b", "workload": "lora"}, (34.6, 35.1, 35.3, 37.4, 42.5, 55.2)),
            (
                "Qwen-1.8B full, 1 GPU",
                {"model": "qwen-1.8b", "workload": "full_finetune", "zero": 3},
                (43.5, 43.5, 43.5, 43.5, 47.1, 48.3),
                "Qwen's finetune_ds.sh runs DeepSpeed ZeRO-3 even on one GPU: zero=3, gpus=1",
            ),
        ),
    ),
    *[
        Measurement(
            f"{m} inference {p}",
            "required",
            {"model": m, "precision": p, "context": 2048},
            v,
            QWEN_INFER,
            scope=ALLOCATED,
        )
        for m, vals in (("qwen-7b", (16.99, 11.20, 8.21)), ("qwen-14b", (30.15, 18.81, 13.01)))
        for p, v in zip(("bf16", "int8", "int4"), vals, strict=True)
    ],
    # --- ESTIMATOR.md §1.5: weights only ---
    *[
        Measurement(
            f"{m} weights {p}",
            "weights",
            {"model": m, "precision": p, "context": 1},
            v,
            BAICHUAN,
            compare="breakdown.weights_gb",
            tolerance=0.05,
        )
        for m, vals in (("baichuan2-13b", (25.9, 14.2, 8.6)), ("baichuan2-7b", (14.0, 8.0, 5.1)))
        for p, v in zip(("bf16", "int8", "int4"), vals, strict=True)
    ],
    # --- other rows of the same public tables ---
    *_finetune_rows(
        "extra",
        (
            ("Qwen-1.8B LoRA", {"model": "qwen-1.8b", "workload": "lora"}, (6.7, 7.4, 8.4, 11.0, 16.2, 21.8)),
            (
                "Qwen-1.8B Q-LoRA",
                {"model": "qwen-1.8b", "workload": "qlora", "precision": "fp16", "zero": 2},
                (5.8, 6.0, 6.6, 7.8, 10.2, 15.8),
            ),
            (
                "Qwen-14B Q-LoRA",
                {"model": "qwen-14b", "workload": "qlora", "precision": "fp16", "zero": 2},
                (18.7, 18.4, 18.9, 19.9, 23.0, 27.9),
            ),
            (
                "Qwen-72B Q-LoRA",
                {"model": "qwen-72b", "workload": "qlora", "precision": "fp16", "zero": 2},
                (61.4, 61.4, 62.9, 64.1, 68.0, 75.6),
            ),
            (
                "Qwen-72B LoRA, ZeRO-3, 4 GPUs (sum)",
                {"model": "qwen-72b", "workload": "lora", "zero": 3, "gpus": 4},
                (215.4, 217.7, 222.6, 228.8, 249.0, 289.2),
            ),
            (
                "Qwen-7B LoRA, ZeRO-2, 2×2 GPUs (sum)",
                {"model": "qwen-7b", "workload": "lora", "zero": 2, "gpus": 4},
                (74.7, 77.6, 84.9, 95.1, 121.1, 155.5),
                "finetune_lora_ds.sh default ZeRO-2",
            ),
            (
                "Qwen-7B full, ZeRO-3, 2 GPUs (sum)",
                {"model": "qwen-7b", "workload": "full_finetune", "zero": 3, "gpus": 2},
                (139.2, 148.0, 162.0),
            ),
        ),
    ),
    *[
        Measurement(
            f"qwen-1.8b inference {p}",
            "extra",
            {"model": "qwen-1.8b", "precision": p, "context": 2048},
            v,
            QWEN_INFER,
            scope=ALLOCATED,
        )
        for p, v in zip(("bf16", "int8", "int4"), (4.23, 3.48, 2.91), strict=True)
    ],
    *[
        Measurement(
            f"qwen-72b inference {p}" + (", 2 GPUs (sum)" if n > 1 else ""),
            "extra",
            {"model": "qwen-72b", "precision": p, "context": 2048, "gpus": n},
            v,
            QWEN_INFER,
            scope=ALLOCATED,
        )
        for p, v, n in (("bf16", 144.69, 2), ("int8", 81.27, 2), ("int4", 48.86, 1))
    ],
    *[
        Measurement(
            f"qwen-7b inference bf16 context={s}",
            "extra",
            {"model": "qwen-7b", "context": s},
            v,
            QWEN_KV,
            scope=ALLOCATED,
        )
        for s, v in zip((512, 1024, 2048, 4096, 8192), (15.2, 16.3, 17.6, 19.5, 23.2), strict=True)
    ],
    *[
        Measurement(
            f"qwen-7b inference bf16 batch={b} context=1024",
            "extra",
            {"model": "qwen-7b", "context": 1024, "batch": b},
            v,
            QWEN_KV,
            scope=ALLOCATED,
            outlier=QWEN_KV_BATCH_4 if b == 4 else "",
        )
        for b, v in zip((4, 16, 32), (24.1, 31.7, 48.7), strict=True)
    ],
    *[
        Measurement(
            f"deepseek-llm-7b inference batch={b} context={s}",
            "extra",
            {"model": "deepseek-llm-7b", "context": s, "batch": b, "attention": "eager", "logits": "all"},
            v,
            DEEPSEEK,
            scope=ALLOCATED,
        )
        for b, vals in {
            1: (13.29, 13.63, 14.47, 16.37, 21.25),
            2: (13.63, 14.39, 15.98, 19.82, 29.59),
            4: (14.47, 15.82, 19.04, 26.65),
            8: (15.99, 18.71, 25.14, 35.19),
            16: (19.06, 24.52, 37.28),
        }.items()
        for s, v in zip((256, 512, 1024, 2048, 4096), vals, strict=False)
    ],
    # --- decoding speed (tokens/s), batch 1 ---
    *[
        Measurement(
            f"{m} {p} tokens/s" + (", 2 GPUs" if n > 1 else ""),
            "speed",
            {"model": m, "precision": p, "context": 2048, "gpus": n},
            v,
            QWEN_INFER,
            compare="tokens_per_s",
            gpu_count=n,
        )
        for m, p, v, n in (
            ("qwen-1.8b", "bf16", 54.09, 1),
            ("qwen-1.8b", "int8", 55.56, 1),
            ("qwen-1.8b", "int4", 71.07, 1),
            ("qwen-7b", "bf16", 40.93, 1),
            ("qwen-7b", "int8", 37.47, 1),
            ("qwen-7b", "int4", 50.09, 1),
            ("qwen-14b", "bf16", 32.22, 1),
            ("qwen-14b", "int8", 29.28, 1),
            ("qwen-14b", "int4", 38.72, 1),
            ("qwen-72b", "bf16", 8.48, 2),
            ("qwen-72b", "int8", 9.05, 2),
            ("qwen-72b", "int4", 11.32, 1),
        )
    ],
    Measurement(
        "qwen-72b bf16 vLLM tokens/s, 2 GPUs",
        "speed",
        {"model": "qwen-72b", "precision": "bf16", "context": 2048, "gpus": 2, "engine": "vllm"},
        17.60,
        QWEN_INFER,
        compare="tokens_per_s",
        gpu_count=2,
    ),
]


@dataclass(frozen=True)
class Comparison:
    measurement: Measurement
    estimated: float
    low: float | None
    high: float | None

    @property
    def error(self) -> float:
        return (self.estimated - self.measurement.measured) / self.measurement.measured

    @property
    def in_band(self) -> bool | None:
        if self.low is None or self.high is None:
            return None
        return self.low <= self.measurement.measured <= self.high


def compare(m: Measurement) -> Comparison:
    from .estimate import estimate
    from .models import EstimateQuery
    from .throughput import decode_throughput

    query = EstimateQuery(**m.query)
    if m.compare == "tokens_per_s":
        t = decode_throughput(query, gpu_memory_gb=80, form_factor="SXM4", gpu_count=m.gpu_count)
        return Comparison(m, t.tokens_per_s, None, None)
    est = estimate(query)
    if m.compare.startswith("breakdown."):
        return Comparison(m, getattr(est.breakdown, m.compare.split(".", 1)[1]), None, None)
    if m.scope == ALLOCATED:  # tensors only: without the fixed overhead the figure does not count
        outside = est.breakdown.overhead_gb * est.gpus
        return Comparison(m, est.total_gb - outside, est.low_gb - outside, est.high_gb - outside)
    return Comparison(m, getattr(est, m.compare), est.low_gb, est.high_gb)


def table(group: str | None = None) -> str:
    """The accuracy table in Markdown (one group, or all with a group column)."""
    head = ["measurement", "measured", "estimate", "error", "band", "in band"]
    if group is None:
        head.insert(0, "group")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in MEASUREMENTS:
        if group and m.group != group:
            continue
        c = compare(m)
        band = f"{c.low:.1f}–{c.high:.1f}" if c.low is not None else "—"
        inside = {True: "yes", False: "**no**", None: "—"}[c.in_band]
        label = f"{m.label} †" if m.outlier else m.label  # † shown, not checked: see `outlier`
        cells = [label, f"{m.measured:g}", f"{c.estimated:.2f}", f"{c.error:+.1%}", band, inside]
        if group is None:
            cells.insert(0, m.group)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(table(sys.argv[1] if len(sys.argv) > 1 else None))
