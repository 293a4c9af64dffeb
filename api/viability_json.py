"""The viability block of `/cheapest` by model (api.cheapest_estimate) written as JSON from pieces.

The block lists how each configuration (gpu_count, gpu_memory_gb) a question asked about was judged:
~120 lines and ~21 KB at 50,000 offers, for every new job. A line is made of what its configuration
alone gives (the counts, the usable memory, the end of a "too small" reason) and what the job's plan
for its GPU count gives (the need, the strategy, the start of that reason, or the plan's own reason).
So what the configurations give is written once per list of configurations asked, in the block's
order, and shared by every job (`BlockLayout`, kept within LAYOUTS_MAX_BYTES); a job writes one
`PlanPieces` per GPU count; a block's lines are then one %-format: byte for byte what
`api.state.dumps` writes for them as dicts (tests/api/test_viability_json.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from json.encoder import encode_basestring  # type: ignore[attr-defined]

from api.byte_cache import ByteLRU
from api.cheapest_write import value_json
from api.estimator import GpuPlan

Configuration = tuple[int, float]  # (gpu_count, gpu_memory_gb): what viability depends on


def gb(value: float) -> float | None:
    """A need in GiB as answers give it: two decimals, None for a plan that cannot run (inf)."""
    return round(value, 2) if value != float("inf") else None


def needs_text(plan: GpuPlan) -> str:
    """The start of the reason a card is too small for `plan`'s job (`usable_text` ends it)."""
    return f"needs {plan.need_gb:.1f} GiB per GPU, more than the "


def usable_text(gpu_memory_gb: float, headroom: float) -> str:
    """The end of the reason a card of `gpu_memory_gb` is too small: what of it is usable."""
    return f"{gpu_memory_gb * headroom:.1f} GiB usable ({headroom:.0%} of {gpu_memory_gb:g} GiB)"


VIABLE = b',"viable":true,"reason":null'
NOT_VIABLE = b',"viable":false,"reason":'


@dataclass(frozen=True, slots=True)
class PlanPieces:
    """What a job's plan for one GPU count gives each line of the block, written."""

    need: bytes  # per_gpu_need_gb's value
    strategy: bytes  # strategy's value
    # A plan with a reason of its own cannot run (GpuPlan.feasible is False): its verdict and reason.
    refused: bytes | None
    too_small: bytes  # a verdict of too small, up to `needs_text` (a configuration's `too_small` ends it)

    @classmethod
    def of(cls, plan: GpuPlan) -> PlanPieces:
        return cls(
            need=value_json(gb(plan.need_gb)),
            strategy=value_json(plan.strategy),
            refused=NOT_VIABLE + value_json(plan.reason) if plan.reason else None,
            too_small=NOT_VIABLE + encode_basestring(needs_text(plan))[:-1].encode(),
        )

    @property
    def cache_size(self) -> int:
        """Bytes held, beyond an instance's own: its texts."""
        return len(self.need) + len(self.strategy) + len(self.refused or b"") + len(self.too_small)


@dataclass(frozen=True)
class BlockLayout:
    """A block's lines for one list of configurations asked (for one headroom and reading of GPUs
    used), in the block's order: what each configuration gives its line, written in `template`
    around three values per line (the plan's need and strategy, the verdict and reason), and what
    the line needs to fill them in (its configuration's place in the list asked, its GPUs used, the
    end of a "too small" reason)."""

    template: bytes
    lines: list[tuple[int, int, bytes]]
    cache_share = 2  # a layout may hold half the bound (api.byte_cache): every block with many configurations reads one

    @classmethod
    def of(cls, asked: tuple[Configuration, ...], single_gpu: bool, headroom: float) -> BlockLayout:
        templates, lines = [], []
        for at in sorted(range(len(asked)), key=lambda at: (asked[at][1], asked[at][0])):
            gpu_count, gpu_memory_gb = asked[at]
            used = 1 if single_gpu else gpu_count
            head = b'{"gpu_count":%b,"gpu_memory_gb":%b,"gpus_used":%b,"per_gpu_need_gb":' % (
                value_json(gpu_count),
                value_json(gpu_memory_gb),
                value_json(used),
            )
            usable = b',"usable_gb":%b,"strategy":' % value_json(round(gpu_memory_gb * headroom, 2))
            templates.append(head.replace(b"%", b"%%") + b"%b" + usable.replace(b"%", b"%%") + b"%b%b}")
            lines.append((at, used, encode_basestring(usable_text(gpu_memory_gb, headroom))[1:].encode()))
        return cls(b",".join(templates), lines)

    @property
    def cache_size(self) -> int:
        return len(self.template) + LINE_BYTES * len(self.lines) + sum(len(line[2]) for line in self.lines)

    def write(self, plans: dict[int, PlanPieces], verdicts: list[bool]) -> bytes:
        """The lines, joined by commas, for a job's plan pieces by GPU count and its verdicts (in the
        order of the configurations asked)."""
        values: list[bytes] = []
        for at, used, too_small in self.lines:
            plan = plans[used]
            if plan.refused is not None:
                verdict = plan.refused
            elif verdicts[at]:
                verdict = VIABLE
            else:
                verdict = plan.too_small + too_small
            values += (plan.need, plan.strategy, verdict)
        return self.template % tuple(values)


LINE_BYTES = 200  # a line of a layout beyond its texts: its tuple, its place, the bytes' header (~170 measured)

# The layouts: one per list of configurations asked (by every question about all offers: one for all
# of them, ~40 KB charged at 50,000 offers; filtered questions ask about fewer), least recently used first out.
LAYOUTS_MAX_BYTES = 2 * 2**20
_layouts = ByteLRU(LAYOUTS_MAX_BYTES)
_lock = threading.Lock()


def block_layout(asked: tuple[Configuration, ...], single_gpu: bool, headroom: float) -> BlockLayout:
    """The layout of a block listing `asked`, made once while it is used."""
    key = (asked, single_gpu, headroom)
    with _lock:
        found = _layouts.get(key)
    if found is None:
        found = BlockLayout.of(asked, single_gpu, headroom)
        with _lock:
            _layouts.put(key, found)
    return found
