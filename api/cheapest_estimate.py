"""`/cheapest` with the estimator's inputs instead of `mem` (CONTRACT §4; docs/estimator.md).

Every candidate configuration is judged with its own GPU count: the job is re-estimated for
`gpu_count` GPUs (`per_gpu_plan`: ZeRO sharding for training, tensor parallelism or a layer split
for inference), and the option is viable when the per-GPU band's high end fits `headroom` (setting
`GPUPRICE_GPU_MEMORY_HEADROOM`, default 0.90) of each of its cards. A job that cannot be sharded
(explicit `zero=0`) needs the whole of it on every GPU, which the plan already says. With
`single_gpu` the job runs on one GPU of any machine; with `gpus` only machines with that many GPUs
are considered.

The estimate is made once per request (when the parameters are validated); plans once per distinct
GPU count, throughput once per distinct card. For inference each option also gets an estimated
decoding speed at its card's own bandwidth (card table) and ¥ per million generated tokens,
`cny_per_hour / (tokens_per_s × 3600) × 10^6`, and `rank_by=per_mtoken` ranks by it; a card with no
bandwidth figure gets none and, under that ranking, is listed as unranked with the reason. With an
amount of work (`tokens=`), api/cheapest_job.py gives each option its own hours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from api.cheapest import JobCost, JobWork, bandwidth_of, no_card_figure, pcie_note, split_over_pcie
from api.cheapest_job import JobTimer
from api.cheapest_write import Cut, Raw, members, value_json, write_object
from api.estimator import (
    Estimate,
    EstimateQuery,
    GpuPlan,
    Throughput,
    cny_per_million_tokens,
    decode_throughput,
    per_gpu_plan,
    per_gpu_plans,
)
from api.estimator.memo import kept_in_memo
from api.state import dumps
from api.viability_json import Configuration, PlanPieces, block_layout, gb, needs_text, usable_text
from pricedb.queries import Offer

VIABILITY_RULE = (
    "viable when per_gpu_need_gb (the high end of the per-GPU band, re-estimated for the option's own GPU count) "
    "≤ usable_gb = gpu_memory_gb × headroom on each of its GPUs"
)
PRICED = ("cny_per_mtoken",)  # an option's members that its price changes (without an amount of work)
THROUGHPUT_RULE = "tokens_per_s = batch / step time; cny_per_mtoken = cny_per_hour / (tokens_per_s × 3600) × 10^6"


# A memo entry (api.estimator.memo): a Throughput with its notes and the query it is for (~2.1-2.2 KB measured).
THROUGHPUT_MEMO_BYTES = 2560


@kept_in_memo(THROUGHPUT_MEMO_BYTES)
def _throughput(
    query: EstimateQuery,
    gpu_count: int,
    gpu_memory_gb: float,
    form_factor: str | None,
    interconnect: str | None,
    gpu_model: str = "A100",
    bandwidth_gb_s: float | None = None,
) -> Throughput:
    return decode_throughput(
        query,
        gpu_memory_gb=gpu_memory_gb,
        gpu_count=gpu_count,
        form_factor=form_factor,
        interconnect=interconnect,
        gpu_model=gpu_model,
        bandwidth_gb_s=bandwidth_gb_s,
    )


MEMO_ENTRY_BYTES = 300  # a memo entry beyond what it holds: its dict slot, its key's tuple (104 bytes), a wrapper
PLAN_BYTES = 400  # a GpuPlan (its slots, floats, strategy and reason: 185-302 bytes, more with a reason)
THROUGHPUT_BYTES = 1400  # a Throughput (its fields and notes: 0.95-1.25 KB), held here even once the memo let it go
LISTED_BYTES = 16  # a configuration listed in a kept list of verdicts and in its key
NOTE_BYTES = 80  # a kept note beyond its text: the string's header and its slot in the list
PLAN_PIECES_BYTES = 256  # a PlanPieces beyond its texts: its slots and its four bytes' headers


@dataclass
class JudgeMemo:
    """What a judge works out from its job alone (the estimate and the judge's own inputs, never the
    hours, filters or prices asked), kept for every question about the same job, in the forms answers
    read: plans per GPU count, throughput per card, verdicts on a whole list of configurations, and
    the JSON an answer written from pieces (api.cheapest_write) holds — the estimate, each plan's
    pieces of the viability block (api.viability_json), an option's estimator members by kind of
    offer. Nothing else: what a JSON was written from is made again when another one is needed.
    Read-only once made; a question's own part (which configurations it asked about) stays in its judge."""

    plans: dict[int, GpuPlan] = field(default_factory=dict)
    throughputs: dict[tuple[Any, ...], Throughput | None] = field(default_factory=dict)
    # Verdicts on a whole list of configurations (`EstimateJudge.fits_each`), by that list, with the
    # configurations the question asking it recorded (the list itself when it recorded them all).
    verdicts: dict[tuple[Configuration, ...], tuple[list[bool], tuple[Configuration, ...]]] = field(
        default_factory=dict
    )
    estimate_json: Raw | None = None
    plan_pieces: dict[int, PlanPieces] = field(default_factory=dict)  # the viability block's, by GPU count
    option_members: dict[tuple[Any, ...], Cut] = field(default_factory=dict)  # by kind of card (PRICED: its slots)
    shared_notes: list[str] | None = None  # the throughput notes every inference answer says once
    # Bytes held, as a byte-bounded cache charges them (api.query_fast): MEMO_ENTRY_BYTES per entry, and
    # each JSON's length, PLAN_BYTES per plan, PLAN_PIECES_BYTES and their texts per plan's pieces,
    # THROUGHPUT_BYTES per throughput, LISTED_BYTES per configuration in each list of verdicts.
    # tests/api/test_query_fast.py holds it against what the memo allocates.
    cache_size: int = 0

    def keep(self, held: int = 0, listed: int = 0) -> None:
        """Charge an entry just kept: `held` bytes of its own, `listed` configurations."""
        self.cache_size += MEMO_ENTRY_BYTES + held + LISTED_BYTES * listed


@dataclass
class EstimateJudge:
    """Viability, per-option figures and ranking for one estimate (implements api.cheapest.Judge).
    `memo` may be shared by judges of the same job with the same inputs (api.answers)."""

    estimate: Estimate
    headroom: float
    single_gpu: bool = False
    gpus: int | None = None  # the job's own GPU count, when given: only machines with that many
    rank_by: str = "total"
    work: JobWork | None = None  # an amount of work instead of wall-clock hours
    mfu: float = 0.4  # Settings.training_mfu
    memo: JudgeMemo = field(default_factory=JudgeMemo)
    # The answer is written from pieces (api.cheapest_write): `summary` gives the estimate and the viability
    # block as their JSON, written once while the memo lasts.
    written: bool = False
    _asked: dict[Configuration, bool] = field(default_factory=dict)  # this question's configurations, viable?
    _timer: JobTimer | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.work is not None:
            self._timer = JobTimer(self.estimate, self.work, self.mfu, self.gpus_used, self.throughput)

    @property
    def inference(self) -> bool:
        return not self.estimate.workload.training

    def gpus_used(self, offer: Offer) -> int:
        return self._used(offer.gpu_count)

    def _used(self, gpu_count: int) -> int:
        return 1 if self.single_gpu else gpu_count

    def plan(self, gpu_count: int) -> GpuPlan:
        plan = self.memo.plans.get(gpu_count)
        if plan is None:
            plan = self.memo.plans[gpu_count] = per_gpu_plan(self.estimate, gpu_count)
            self.memo.keep(PLAN_BYTES)
        return plan

    def _plan_each(self, gpu_counts: set[int]) -> None:
        """Plans for each of `gpu_counts` not planned yet, worked out together."""
        missing = [count for count in gpu_counts if count not in self.memo.plans]
        if missing:
            self.memo.plans.update(per_gpu_plans(self.estimate, missing))
            for _ in missing:
                self.memo.keep(PLAN_BYTES)

    def throughput(self, offer: Offer) -> Throughput | None:
        """Decoding speed on this offer's cards at their own bandwidth, once per distinct card and GPU
        count (ranking asks per offer); None for a card the table has no bandwidth for."""
        card = (self.gpus_used(offer), offer.gpu_memory_gb, offer.form_factor, offer.interconnect, offer.gpu_model)
        key = (*card, offer.gpu_fraction is not None)  # a slice of a GPU has no bandwidth of its own (card_of)
        throughputs = self.memo.throughputs
        if key not in throughputs:
            bandwidth = bandwidth_of(offer)
            throughputs[key] = (
                None if bandwidth is None else _throughput(self.estimate.query, *card, bandwidth_gb_s=bandwidth)
            )
            self.memo.keep(0 if bandwidth is None else THROUGHPUT_BYTES)
        return throughputs[key]

    def usable_gb(self, offer: Offer) -> float:
        return offer.gpu_memory_gb * self.headroom

    # --- Judge ----------------------------------------------------------------------------------
    @property
    def needs_card_figures(self) -> bool:
        return self.rank_by == "per_mtoken" or self._timer is not None

    def unranked(self, offer: Offer) -> str | None:
        if self.rank_by == "per_mtoken" and self.throughput(offer) is None:
            return f"{no_card_figure(offer, 'memory bandwidth')}: no tokens_per_s, so no cny_per_mtoken to rank by"
        return self._timer.unranked(offer) if self._timer is not None else None

    def hours(self, offer: Offer, wall_clock: float | None) -> float:
        if self._timer is not None:
            return self._timer.hours(offer)
        assert wall_clock is not None
        return wall_clock

    def fits(self, offer: Offer) -> bool:
        return self._fits((offer.gpu_count, offer.gpu_memory_gb))

    def _fits(self, configuration: Configuration) -> bool:
        gpu_count, gpu_memory_gb = configuration
        if self.gpus is not None and gpu_count != self.gpus:
            return False
        viable = self._asked.get(configuration)
        if viable is None:
            plan = self.plan(self._used(gpu_count))
            viable = self._asked[configuration] = plan.fits(gpu_memory_gb, self.headroom)
        return viable

    def fits_each(self, configurations: list[Configuration]) -> list[bool]:
        """`fits` for an offer of each of `configurations` ((gpu_count, gpu_memory_gb), all a verdict
        depends on), recorded as `fits` records them; the whole list judged once while the memo lasts."""
        key = tuple(configurations)
        found = self.memo.verdicts.get(key)
        if found is None:
            found = self.memo.verdicts[key] = self._judged(key)
            verdicts, recorded = found
            self.memo.keep(listed=len(key) + len(recorded) * (recorded is not key))
        verdicts, recorded = found
        if len(recorded) == len(key):  # all of them (the memo's key: an equal tuple, not this one)
            self._asked.update(zip(key, verdicts, strict=True))
        else:
            by_configuration = dict(zip(key, verdicts, strict=True))
            self._asked.update((c, by_configuration[c]) for c in recorded)
        return verdicts

    def _judged(self, key: tuple[Configuration, ...]) -> tuple[list[bool], tuple[Configuration, ...]]:
        """`fits_each`'s verdicts on `key` and the configurations among them `fits` records (`key`
        itself when it records them all): one plan per GPU count, then a comparison per configuration."""
        counts = {c[0] for c in key}
        judged = [count for count in counts if self.gpus in (None, count)]
        self._plan_each({self._used(count) for count in judged})
        plans = {count: self.plan(self._used(count)) for count in judged}
        headroom = self.headroom
        needs = {count: plan.need_gb for count, plan in plans.items() if plan.feasible}  # GpuPlan.fits, inlined
        verdicts = [count in needs and needs[count] <= memory * headroom for count, memory in key]
        if len(plans) == len(counts):
            return verdicts, key
        return verdicts, tuple(c for c in key if c[0] in plans)

    def _verdict(self, configuration: Configuration) -> dict[str, Any]:
        """How a configuration asked about was judged, as the viability block lists it."""
        gpu_count, gpu_memory_gb = configuration
        used = self._used(gpu_count)
        plan = self.plan(used)
        viable = plan.fits(gpu_memory_gb, self.headroom)
        return {
            "gpu_count": gpu_count,
            "gpu_memory_gb": gpu_memory_gb,
            "gpus_used": used,
            "per_gpu_need_gb": gb(plan.need_gb),
            "usable_gb": round(gpu_memory_gb * self.headroom, 2),
            "strategy": plan.strategy,
            "viable": viable,
            "reason": plan.reason or (None if viable else self._too_small(plan, gpu_memory_gb)),
        }

    def _too_small(self, plan: GpuPlan, gpu_memory_gb: float) -> str:
        return needs_text(plan) + usable_text(gpu_memory_gb, self.headroom)

    def option_fields(self, offer: Offer) -> dict[str, Any]:
        return self._option_fields(offer)

    def option_members(self, offer: Offer) -> Raw:
        """`option_fields` written as members (api.cheapest_write.members). Without an amount of work
        they are the same for every offer of one kind of card (cards, count) but for the price's own
        figure (PRICED, inference only), so they are written once per kind while the memo lasts, cut
        around that figure."""
        if self._timer is not None:
            return Raw(members(self._option_fields(offer)))
        kind = (
            offer.gpu_count,
            offer.gpu_memory_gb,
            offer.form_factor,
            offer.interconnect,
            offer.gpu_model,
            offer.gpu_fraction,
            offer.gpu_partition,
        )
        found = self.memo.option_members.get(kind)
        if found is None:
            found = self.memo.option_members[kind] = Cut(self._option_fields(offer), PRICED)
            self.memo.keep(len(found.template))
        priced = (value_json(self._per_mtoken(offer, self.throughput(offer))),) if self.inference else ()
        return Raw(found.write_members(priced))

    def _option_fields(self, offer: Offer) -> dict[str, Any]:
        used = self.gpus_used(offer)
        plan = self.plan(used)
        notes = []
        if split_over_pcie(offer, used):
            notes.append(pcie_note(plan.strategy))
        fields: dict[str, Any] = {
            "gpus_used": used,
            "per_gpu_need_gb": gb(plan.need_gb),
            "per_gpu_point_gb": gb(plan.point_gb),
            "usable_gb": round(self.usable_gb(offer), 2),
            "strategy": plan.strategy,
            "zero": plan.zero,
        }
        if self.inference:
            fields.update(self._throughput_fields(offer))
            single = self.plan(1)
            if used > 1 and single.fits(offer.gpu_memory_gb, self.headroom):
                notes.append(
                    f"One GPU holds this job ({single.need_gb:.1f} ≤ {self.usable_gb(offer):.1f} GiB): {used} "
                    f"independent copies would decode about {used}× the tokens; tokens_per_s and cny_per_mtoken "
                    f"here are for one copy on {used} GPUs."
                )
        fields["job_notes"] = notes
        if self._timer is not None:
            fields["job"] = self._timer.option_fields(offer)
        return fields

    def _throughput_fields(self, offer: Offer) -> dict[str, Any]:
        tp = self.throughput(offer)
        if tp is None:
            return {
                "tokens_per_s": None,
                "cny_per_mtoken": None,
                "throughput": {"notes": [f"{no_card_figure(offer, 'memory bandwidth')}: throughput not estimated"]},
            }
        per_mtoken = self._per_mtoken(offer, tp)
        inputs = tp.as_dict()
        inputs.pop("tokens_per_s")
        shared = self._shared_notes()
        inputs["notes"] = [n for n in tp.notes if n not in shared]  # the shared ones are said once, in the answer
        return {"tokens_per_s": round(tp.tokens_per_s, 2), "cny_per_mtoken": per_mtoken, "throughput": inputs}

    @staticmethod
    def _per_mtoken(offer: Offer, tp: Throughput | None) -> float | None:
        """An inference option's cny_per_mtoken as answers give it (the one figure its price changes)."""
        if tp is None or offer.cny_per_hour is None:
            return None
        return _round4(cny_per_million_tokens(offer.cny_per_hour, tp.tokens_per_s))

    def rank_key(self, offer: Offer, cost: JobCost) -> tuple[Any, ...]:
        by_total = (cost.total_cny, offer.cny_per_gb_hour or 0.0, offer.key)
        if self.rank_by != "per_mtoken":
            return by_total
        tp = self.throughput(offer)
        assert offer.cny_per_hour is not None and tp is not None  # only priced, timed options are ranked
        return (cny_per_million_tokens(offer.cny_per_hour, tp.tokens_per_s), *by_total)

    def summary(self) -> dict[str, Any]:
        """The estimate, the viability block and what the options' figures share; with `written`, the
        first two as their JSON, kept in the memo."""
        body: dict[str, Any] = (
            {"estimate": self._estimate_json(), "viability": self._viability_json()}
            if self.written
            else {"estimate": self.estimate.model_dump(mode="json"), "viability": self._viability()}
        )
        if self.inference:
            body["throughput"] = {"estimate": True, "rule": THROUGHPUT_RULE, "notes": self._shared_notes()}
        if self._timer is not None:
            body["job"] = self._timer.summary()
        return body

    def _estimate_json(self) -> Raw:
        found = self.memo.estimate_json
        if found is None:
            found = self.memo.estimate_json = Raw(dumps(self.estimate.model_dump(mode="json")))
            self.memo.keep(len(found))
        return found

    def _viability_json(self) -> Raw:
        """`_viability` written from pieces (api.viability_json): the lines' layout for the configurations
        asked, shared by every job, and the job's plan pieces per GPU count, kept in the memo."""
        layout = block_layout(tuple(self._asked), self.single_gpu, self.headroom)
        plans = {used: self._plan_pieces(used) for used in {line[1] for line in layout.lines}}
        lines = Raw(b"[" + layout.write(plans, list(self._asked.values())) + b"]")
        return Raw(write_object({**self._viability_head(), "configurations": lines}))

    def _plan_pieces(self, gpu_count: int) -> PlanPieces:
        found = self.memo.plan_pieces.get(gpu_count)
        if found is None:
            found = self.memo.plan_pieces[gpu_count] = PlanPieces.of(self.plan(gpu_count))
            self.memo.keep(PLAN_PIECES_BYTES + found.cache_size)
        return found

    def _viability(self) -> dict[str, Any]:
        return {**self._viability_head(), "configurations": [self._verdict(c) for c in self._in_block_order()]}

    def _in_block_order(self) -> list[Configuration]:
        return sorted(self._asked, key=lambda c: (c[1], c[0]))

    def _viability_head(self) -> dict[str, Any]:
        return {
            "rule": VIABILITY_RULE,
            "headroom": self.headroom,
            "estimate_gpus": self.estimate.gpus,
            "note": f"The estimate above is for gpus={self.estimate.gpus} (as given; default 1); every "
            "configuration is re-estimated for its own GPU count"
            + (" (single_gpu: one GPU of each machine)." if self.single_gpu else "."),
        }

    def _shared_notes(self) -> list[str]:
        """Throughput notes that depend on the query alone (a one-GPU reference), said once in the answer;
        notes about a particular machine (PCIe, …) stay with its option."""
        found = self.memo.shared_notes
        if found is None:
            found = self.memo.shared_notes = list(_throughput(self.estimate.query, 1, 80.0, None, None, "A100").notes)
            self.memo.keep(sum(NOTE_BYTES + len(note.encode()) for note in found))
        return list(found)


def _round4(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
