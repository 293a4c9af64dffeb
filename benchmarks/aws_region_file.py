"""Benchmark: parsing one AWS Price List region file (hundreds of MB) against `grep -c 'GPU instance'`.

Writes a file of >= 500 MB in the real `index.csv` layout (the preamble and header of
fixtures/aws/price_list_us-east-1.csv, then full-width rows of ~200 non-GPU instance types and every
whole-GPU type of collectors.aws.instance_types, in every OS, tenancy, capacity-status and term
variant, the GPU rows a share of the file as in the real one: ~75 of us-east-1's ~900 instance
types are GPU types, so `--gpu-share` 6% of the rows by default, p4d/p4de among them), then
measures, on a warm page cache, best of --repeat runs:

- `grep -c 'GPU instance' FILE` (the yardstick: the same rows the pre-filter keeps);
- `collectors.aws.bulk.parse_price_list` on the whole unfiltered file, in a child process, reporting
  its throughput and peak RSS (the child's own `ru_maxrss`, imports included);
- the download-path pre-filter (`collectors.http._aiter_byte_lines` + `KeepA100Lines`, as applied
  while streaming from AWS, minus the network and the disk write), likewise in a child.

Targets: parse throughput >= 1/4 of grep's, parse peak RSS < 100 MB.

    .venv/bin/python benchmarks/aws_region_file.py [--size-mb 520] [--dir /tmp] [--repeat 3] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "fixtures" / "aws" / "price_list_us-east-1.csv"
GPU_SHARE = 0.06  # GPU rows (every family) are ~5-8% of a large region's file
NEEDLE = "GPU instance"
# fmt: off
FAMILIES = ["m5", "m5a", "m6i", "m6a", "m6g", "m7i", "m7g", "c5", "c5a", "c6i", "c6a", "c6g", "c7i", "c7g",
            "r5", "r5a", "r6i", "r6a", "r6g", "r7i", "r7g", "t3", "t3a", "i4i"]
SIZES = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal"]
# fmt: on
SKU_CHARS = "ABCDEFGHJKMNPQRSTVWXYZ23456789"


# ----- the file ----------------------------------------------------------------------------------
def _templates() -> tuple[bytes, list[bytes]]:
    """(preamble + header, A100 rows) from the fixture. The A100 rows cover every variant (OS,
    tenancy, capacity status, term, upfront fee) and serve as templates for other instance types."""
    lines = TEMPLATE.read_bytes().splitlines(keepends=True)
    return b"".join(lines[:6]), [row for row in lines[6:] if b"p4d" in row]


def _sku(rng: random.Random) -> bytes:
    return "".join(rng.choice(SKU_CHARS) for _ in range(16)).encode()


def _other_row(template: bytes, itype: bytes, rng: random.Random, gpu: bool) -> bytes:
    row = template.replace(b"p4de.24xlarge", itype).replace(b"p4d.24xlarge", itype)
    if not gpu:
        row = row.replace(b'"GPU instance"', b'"General purpose"')
    old_sku = row[1:17]
    return row.replace(old_sku, _sku(rng))


def write_file(path: Path, size_mb: int, gpu_share: float = GPU_SHARE, seed: int = 7) -> tuple[int, int]:
    """Write the benchmark file; returns (rows, GPU rows)."""
    from collectors.aws.instance_types import WHOLE_GPU_TYPES

    rng = random.Random(seed)
    leading, a100 = _templates()
    types = [f"{family}.{size}".encode() for family in FAMILIES for size in SIZES]
    gpu_types = [t.encode() for t in WHOLE_GPU_TYPES]
    target = size_mb * 1_000_000
    rows = gpu_rows = 0
    with path.open("wb") as handle:
        handle.write(leading)
        written = len(leading)
        while written < target:
            batch = []
            for _ in range(5000):
                if rng.random() < gpu_share:
                    batch.append(_other_row(rng.choice(a100), rng.choice(gpu_types), rng, gpu=True))
                    gpu_rows += 1
                else:
                    batch.append(_other_row(rng.choice(a100), rng.choice(types), rng, gpu=False))
            chunk = b"".join(batch)
            handle.write(chunk)
            written += len(chunk)
            rows += len(batch)
    return rows, gpu_rows


# ----- children ----------------------------------------------------------------------------------
def child_parse(path: str) -> dict:
    from datetime import UTC, datetime

    from collectors.aws import AwsCollector
    from collectors.aws.bulk import parse_price_list, price_list_url
    from collectors.base import RawResponse

    raw = RawResponse(url=price_list_url("us-east-1"), fetched_at=datetime.now(UTC), path=Path(path))
    started = time.perf_counter()
    quotes = parse_price_list(raw, AwsCollector.quote, region="us-east-1")
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "result": len(quotes), "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def child_prefilter(path: str) -> dict:
    import httpx

    from collectors.aws.bulk import KeepGpuLines
    from collectors.http import _aiter_byte_lines

    async def body():
        with open(path, "rb") as handle:
            while block := handle.read(1 << 16):  # network-sized reads, re-chunked to 1 MiB by httpx
                yield block

    async def run() -> int:
        keep, kept = KeepGpuLines(), 0
        response = httpx.Response(200, content=body())
        async for line in _aiter_byte_lines(response):
            kept += keep(line)
        return kept

    started = time.perf_counter()
    kept = asyncio.run(run())
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "result": kept, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def run_child(mode: str, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path)], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout)


def time_grep(path: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run(["grep", "-c", NEEDLE, str(path)], capture_output=True, text=True, check=True)
    return {"seconds": time.perf_counter() - started, "result": int(done.stdout)}


def best(runs: list[dict]) -> dict:
    return min(runs, key=lambda r: r["seconds"])


# ----- main --------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=520)
    parser.add_argument("--gpu-share", type=float, default=GPU_SHARE, help="share of the rows that are GPU rows")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, path = args.child
        print(json.dumps({"parse": child_parse, "prefilter": child_prefilter}[mode](path)))
        return 0

    free = shutil.disk_usage(args.dir).free
    if free < 2 * args.size_mb * 1_000_000:
        print(f"not enough space in {args.dir}: {free / 1e9:.1f} GB free, need {2 * args.size_mb / 1000:.1f} GB")
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="gpuprice-aws-bench-", dir=args.dir))
    path = workdir / "index.csv"
    try:
        started = time.perf_counter()
        rows, gpu_rows = write_file(path, args.size_mb, args.gpu_share)
        size = path.stat().st_size
        mb = size / 1e6
        print(f"file      {path}: {mb:.1f} MB, {rows:,} rows, {gpu_rows:,} GPU rows ({gpu_rows / rows:.2%}),")
        print(f"          written in {time.perf_counter() - started:.1f} s")
        with path.open("rb") as handle:  # warm the page cache so both sides read from memory
            while handle.read(1 << 24):
                pass

        parse = best([run_child("parse", path) for _ in range(args.repeat)])
        children_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # parse children only so far
        grep = best([time_grep(path) for _ in range(args.repeat)])
        prefilter = best([run_child("prefilter", path) for _ in range(args.repeat)])

        grep_rate, parse_rate, pre_rate = mb / grep["seconds"], mb / parse["seconds"], mb / prefilter["seconds"]
        ratio = parse_rate / grep_rate
        rss_mb = parse["maxrss_kb"] / 1024
        print(f"grep      grep -c '{NEEDLE}' {grep['seconds']:7.3f} s  {grep_rate:8.0f} MB/s  ({grep['result']} lines)")
        print(
            f"parse     parse_price_list     {parse['seconds']:7.3f} s  {parse_rate:8.0f} MB/s  "
            f"({parse['result']} quotes)  peak RSS {rss_mb:.1f} MB (RUSAGE_CHILDREN: {children_rss_mb:.1f} MB)"
        )
        print(
            f"prefilter download keep_line     {prefilter['seconds']:7.3f} s  {pre_rate:8.0f} MB/s  "
            f"({prefilter['result']} lines kept)  peak RSS {prefilter['maxrss_kb'] / 1024:.1f} MB"
        )
        print(f"ratio     parse / grep throughput = {ratio:.2f}  (target >= 0.25)")
        print(
            f"verdict   throughput {'OK' if ratio >= 0.25 else 'BELOW TARGET'}, RSS {'OK' if rss_mb < 100 else 'ABOVE'}"
        )
        return 0 if ratio >= 0.25 and rss_mb < 100 else 1
    finally:
        if args.keep:
            print(f"kept {path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
