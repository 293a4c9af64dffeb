"""Reading AutoDL answers: region groups, the GPU types of a group with their idle counts (the ones
the card table knows, and the others), and machines with their per-GPU prices (or why a machine is
left out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.errors import ParseError
from collectors.market import sized_card
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.shapes import host_fields

# payg_price and the machine_sku_info prices are integers; AutoDL does not document their unit.
# Public clients and write-ups read them as 1/1000 CNY (厘): 2720 → ¥2.72 per GPU-hour, and the
# same client shows wallet balances ÷ 1000. That reading is the one constant below.
PRICE_UNIT_CNY = 0.001
# The instance sizes published per machine: an AutoDL instance is N GPUs of one machine, rented
# by the GPU; these are the sizes users pick, where the machine has that many GPUs.
INSTANCE_SIZES = (1, 2, 4, 8)
PACKAGE_TYPES = ("daily", "weekly", "monthly")  # machine_sku_info types besides "payg"
GIB = 1 << 30

SKIP_UNKNOWN = "a GPU the card table does not know"
SKIP_MEMORY = "gpu_memory not a size the card is sold in"
SKIP_NO_GPUS = "no GPU count"
SKIP_NO_PRICE = "no pay-as-you-go price"


@dataclass(frozen=True)
class RegionGroup:
    """One entry of the region list: a data center's region signs under one name."""

    signs: tuple[str, ...]
    name: str

    @property
    def label(self) -> str:
        return ",".join(self.signs)


@dataclass(frozen=True)
class Machine:
    machine_id: str
    alias: str
    region: str  # region_sign, e.g. "west-B"
    region_name: str
    gpu_name: str
    spec: GpuSpec
    gpu_number: int
    free: int  # GPUs that can be rented now: gpu_idle_num (capped by gpu_order_num when given)
    payg: float | None  # CNY per GPU-hour
    payg_list: float | None  # the undiscounted per-GPU price, when the answer gives a higher one
    packages: dict[str, float] = field(default_factory=dict)  # daily/weekly/monthly, CNY per GPU
    cpu_per_gpu: float | None = None  # vCPUs per rented GPU
    mem_per_gpu_gib: float | None = None  # RAM per rented GPU (`mem_per_gpu` is in bytes)

    def host(self, gpus: int) -> dict[str, Any]:
        """The host shape of an instance of `gpus` GPUs: AutoDL allots CPU and RAM per GPU."""
        if self.cpu_per_gpu is None or self.mem_per_gpu_gib is None:
            return {}
        return host_fields(self.cpu_per_gpu * gpus, self.mem_per_gpu_gib * gpus)


def region_groups(data: Any, where: str) -> list[RegionGroup]:
    if not isinstance(data, list):
        raise ParseError(f"{where}: the region list is not a list")
    groups = []
    for item in data:
        signs = item.get("region_sign") if isinstance(item, Mapping) else None
        if isinstance(signs, str):
            signs = [signs]
        if not isinstance(signs, list) or not all(isinstance(s, str) for s in signs):
            raise ParseError(f"{where}: a region entry has no region_sign list ({item!r})")
        if signs:
            groups.append(RegionGroup(tuple(signs), str(item.get("region_name") or "")))
    return groups


def gpu_types(data: Any, where: str) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """GPU type name → (idle, total) GPUs for the types of a region group's answer whose card the
    table knows (`[{"A100-SXM4-80GB": {"idle_gpu_num": 5, "total_gpu_num": 40}}, ...]`), and the
    names of the others with GPUs there ("RTX 4090D", "vGPU-32GB": never guessed)."""
    if not isinstance(data, list):
        raise ParseError(f"{where}: the GPU type list is not a list")
    found: dict[str, tuple[int, int]] = {}
    unknown: list[str] = []
    for entry in data:
        if not isinstance(entry, Mapping):
            raise ParseError(f"{where}: a GPU type entry is not an object ({entry!r})")
        for name, counts in entry.items():
            if not isinstance(counts, Mapping) or "idle_gpu_num" not in counts or "total_gpu_num" not in counts:
                raise ParseError(f"{where}: GPU type {name!r} has no idle_gpu_num/total_gpu_num")
            idle, total = int(counts["idle_gpu_num"]), int(counts["total_gpu_num"])
            try:
                identify(str(name))
            except UnknownGpu:
                if total > 0:
                    unknown.append(str(name))
                continue
            found[str(name)] = (idle, total)
    return found, unknown


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _packages(item: Mapping[str, Any]) -> tuple[float | None, dict[str, float]]:
    """The payg list price (origin_price, when higher than current) and the package prices."""
    skus = item.get("machine_sku_info")
    listed: float | None = None
    packages: dict[str, float] = {}
    for sku in skus if isinstance(skus, list) else []:
        if not isinstance(sku, Mapping):
            continue
        current, origin = _int(sku.get("current_price")), _int(sku.get("origin_price"))
        if sku.get("type") == "payg" and current and origin and origin > current:
            listed = origin * PRICE_UNIT_CNY
        elif sku.get("type") in PACKAGE_TYPES and current and current > 0:
            packages[str(sku["type"])] = current * PRICE_UNIT_CNY
    return listed, packages


_REQUIRED = ("machine_id", "region_sign", "gpu_name", "gpu_number", "gpu_idle_num", "payg_price")


def read_machine(item: Mapping[str, Any], region_names: Mapping[str, str], where: str) -> Machine | str:
    """The machine an item of the list stands for, or why it is left out (a SKIP_* string).
    Raises ParseError when a field the list always carries is missing: the API has changed."""
    for name in _REQUIRED:
        if name not in item:
            raise ParseError(f"{where} has no {name!r} field (has the AutoDL API changed?)")
    memory = _int(item.get("gpu_memory"))
    try:
        spec = sized_card(str(item["gpu_name"]), memory / GIB) if memory else None
    except UnknownGpu:
        return SKIP_UNKNOWN
    if spec is None:
        return SKIP_MEMORY
    gpus, idle, orderable = _int(item["gpu_number"]), _int(item["gpu_idle_num"]), _int(item.get("gpu_order_num"))
    if not gpus or gpus < 1 or idle is None:
        return SKIP_NO_GPUS
    price = _int(item["payg_price"])
    payg = price * PRICE_UNIT_CNY if item.get("payg", True) and price and price > 0 else None
    listed, packages = _packages(item)
    if payg is None and not packages:
        return SKIP_NO_PRICE
    region = str(item["region_sign"])
    return Machine(
        machine_id=str(item["machine_id"]),
        alias=str(item.get("machine_alias") or ""),
        region=region,
        region_name=str(item.get("region_name") or region_names.get(region, "")),
        gpu_name=str(item["gpu_name"]),
        spec=spec,
        gpu_number=gpus,
        free=max(0, min(idle, orderable) if orderable is not None else idle),
        payg=payg,
        payg_list=listed if payg is not None and listed and listed > payg else None,
        packages=packages,
        cpu_per_gpu=_number(item.get("cpu_per_gpu")),
        mem_per_gpu_gib=memory_per_gpu / GIB if (memory_per_gpu := _number(item.get("mem_per_gpu"))) else None,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None
