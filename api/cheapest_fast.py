"""`/cheapest` over a columnar form of the current offers: the selection `api.cheapest.select`
makes (the plain reference, kept and tested against this), computed with numpy over arrays built
once per data change.

The current offers change only when a run lands or an offer's staleness flips (`AppState.current`
reloads them then), so `OfferColumns` turns them into one array per field a question reads, once:
codes for the text fields (a filter on providers becomes a lookup table over a few codes), each
offer's memory capacity, its billing rule as an index into the few distinct rules, and per GPU model
its offers sorted by capacity, so a question for `mem` GB starts at a binary search and reads only
the offers that can hold it. A question then costs a few array operations over those rows:

- filters: the selecting rules (gpu, pricing, provider, region, sku) as masks; the flags
  (interruptible, stale, sold out) counted in `excluded`, in pricedb.offer_filter's order;
- viability: capacity ≥ mem (per GPU with `single_gpu`), or the Judge's verdict, asked once per
  distinct (gpu_count, gpu_memory_gb) of one offer of each (so its `viability` block is the same);
- billing: billed hours once per distinct rule, with api.cheapest's own functions, then
  `cny_per_hour × billed` for every row at once (the reference's IEEE product); stepped prices, rare,
  through `job_cost` row by row;
- ranking: only rows whose total is among the `limit` smallest (ties included) can be shown; those
  few are priced with `job_cost` and sorted with the reference's own key, so what is shown is
  computed exactly as the reference computes it. Rankings that need a card's figures (¥ per million
  tokens, a job timed from its amount of work) go to the reference `select` as they are.

Two common questions read forms kept per set of flags asked, built the first time: a plain `mem`
question about named GPUs (`ModelRows`: each model's priced, unpriced and excluded rows by capacity,
so the rows, the unpriced and the counts of `excluded` are binary searches), and a question by model
and workload with no selecting rule (`Unfiltered`: one verdict per configuration, judged once per job
by the judge's memo; per billing rule the rows by hourly price, so its first `limit` are found among
each rule's cheapest viable rows).

A new filter or ranking figure is a column built in `OfferColumns.build` and read in `select_fast`;
tests/api/test_cheapest_fast.py must then draw the new parameter in its random questions.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from api.byte_cache import ByteLRU
from api.cheapest import (
    CheapestQuery,
    JobCost,
    Judge,
    Selection,
    billed_hours,
    by_total,
    hourly_cost,
    job_cost,
    monthly_period,
    period_cost,
    price_segments,
    select,
    term_cost,
    whole_periods,
)
from api.cheapest_write import OfferPieces
from pricedb.models import Pricing
from pricedb.normalize import term_hours_of
from pricedb.offer_filter import SOLD_OUT, SPOT, OfferFilter
from pricedb.queries import Offer
from pricedb.settings import Settings

# A billing rule: ("billed", increment_s, minimum_s), ("period", hours), ("term", hours) or ("stepped",).
Rule = tuple[object, ...]
STEPPED: Rule = ("stepped",)


def _rule_of(offer: Offer, settings: Settings) -> Rule | None:
    """How `job_cost` bills this offer, as a value shared by every offer billed alike (None: unpriced)."""
    if offer.cny_per_hour is None or offer.fx_rate is None:
        return None
    pricing = Pricing(offer.pricing)
    if pricing is Pricing.MONTHLY:
        return ("period", monthly_period(offer, settings))
    if pricing.is_reserved:
        return ("term", term_hours_of(pricing, offer.term_hours, settings))
    if offer.price_steps:
        return STEPPED
    return ("billed", offer.billing_increment_s, offer.billing_minimum_s)


def billed_under(rule: Rule, hours: float) -> float:
    """Hours billed under `rule` for `hours` of use: the arithmetic of `job_cost`, once per rule."""
    kind = rule[0]
    if kind == "billed":
        return billed_hours(int(rule[1]), int(rule[2]), hours)  # type: ignore[call-overload]
    if kind == "period":
        period = float(rule[1])  # type: ignore[arg-type]
        return whole_periods(hours, period) * period
    if kind == "term":
        return float(rule[1])  # type: ignore[arg-type]
    return float("nan")  # stepped: priced row by row


def _tie_order(offers: list[Offer]) -> np.ndarray:
    """Each offer's place in the order of (¥/GB·h or 0, key), offers of one key in their order (as a
    stable sort leaves them): the keys sorted in Python (the store reads them in order: one pass),
    then the figures by numpy."""
    keys = [o.key for o in offers]
    by_key = np.empty(len(offers), dtype=np.int64)
    by_key[sorted(range(len(offers)), key=keys.__getitem__)] = np.arange(len(offers))
    order = np.lexsort((by_key, np.array([o.cny_per_gb_hour or 0.0 for o in offers], dtype=np.float64)))
    found = np.empty(len(offers), dtype=np.int64)
    found[order] = np.arange(len(offers))
    return found


class Coded:
    """A text column as small integer codes, with its vocabulary."""

    def __init__(self, values: Iterable[str]) -> None:
        self.vocabulary: dict[str, int] = {}
        self.codes = np.array([self.vocabulary.setdefault(v, len(self.vocabulary)) for v in values], dtype=np.int32)

    def any_of(self, rows: np.ndarray, chosen: Iterable[str]) -> np.ndarray:
        """Which of `rows` hold one of `chosen` (values the column never holds match nothing)."""
        table = np.zeros(len(self.vocabulary) + 1, dtype=bool)
        for value in chosen:
            code = self.vocabulary.get(value)
            if code is not None:
                table[code] = True
        return table[self.codes[rows]]


class Grouped:
    """Rows grouped by a tuple of their values: `index[row]` is the group, `first[group]` a row of it."""

    def __init__(self, keys: Iterable[tuple[object, ...]]) -> None:
        groups: dict[tuple[object, ...], int] = {}
        self.first: list[int] = []
        index = []
        for row, key in enumerate(keys):
            group = groups.get(key)
            if group is None:
                group = groups[key] = len(groups)
                self.first.append(row)
            index.append(group)
        self.keys: list[Any] = list(groups)
        self.index = np.array(index, dtype=np.int32)


@dataclass(frozen=True)
class OfferColumns:
    """The current offers as arrays (row i is `offers[i]`), built once per data change."""

    offers: list[Offer]
    by_gpu: dict[str, np.ndarray]  # per GPU model: its rows, by capacity (gpu_count × gpu_memory_gb)
    capacity_by_gpu: dict[str, np.ndarray]  # the same rows' capacities, ascending
    gpu_memory_gb: np.ndarray
    pricing: Coded
    provider: Coded
    region: Coded  # lower case: regions compare in any case
    sku: Coded
    spot: np.ndarray
    stale: np.ndarray
    sold_out: np.ndarray
    priced: np.ndarray  # a CNY price and its FX rate: ranked; otherwise listed as unpriced
    cny_per_hour: np.ndarray  # NaN where unpriced
    rules: list[Rule]  # the distinct billing rules
    rule: np.ndarray  # each row's, an index into `rules` (-1: unpriced)
    configurations: Grouped  # (gpu_count, gpu_memory_gb): what the Judge's viability depends on
    tie_order: np.ndarray  # each row's place in the order `by_total` gives one total: by ¥/GB·h, then by key
    stepped: SteppedPrices  # the offers priced in steps (rule STEPPED)
    pieces_max_bytes: int  # what `pieces` may hold (GPUPRICE_OFFER_PIECES_MB)
    pieces: OfferPieces = field(init=False)  # each offer's JSON entries, written when first shown
    _unfiltered: dict[tuple[bool, bool, bool], Unfiltered] = field(init=False)  # by the flags asked
    _by_model: dict[tuple[bool, bool, bool], dict[str, ModelRows]] = field(init=False)  # by the flags asked
    # `cny_per_hour` and `rule` as lists, for the few rows most questions rank (api.cheapest_fast.few_totals)
    cny_list: list[float] = field(init=False)
    rule_list: list[int] = field(init=False)
    stepped_rule: int = field(init=False)  # STEPPED's index in `rules` (-1: none)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pieces", OfferPieces(self.offers, self.pieces_max_bytes))
        object.__setattr__(self, "cny_list", self.cny_per_hour.tolist())
        object.__setattr__(self, "rule_list", self.rule.tolist())
        object.__setattr__(self, "stepped_rule", self.rules.index(STEPPED) if STEPPED in self.rules else -1)
        object.__setattr__(self, "_unfiltered", {})
        object.__setattr__(self, "_by_model", {})

    @classmethod
    def build(cls, offers: list[Offer], settings: Settings) -> OfferColumns:
        capacity = np.array([o.gpu_count * o.gpu_memory_gb for o in offers], dtype=np.float64)
        models = Coded(o.gpu_model for o in offers)
        by_gpu, capacity_by_gpu = {}, {}
        for model, code in models.vocabulary.items():
            rows = np.flatnonzero(models.codes == code)
            rows = rows[np.argsort(capacity[rows], kind="stable")]
            by_gpu[model], capacity_by_gpu[model] = rows, capacity[rows]
        rule_of = [_rule_of(o, settings) for o in offers]
        rules = list(dict.fromkeys(r for r in rule_of if r is not None))
        rule_index = {r: i for i, r in enumerate(rules)}
        return cls(
            offers=offers,
            by_gpu=by_gpu,
            capacity_by_gpu=capacity_by_gpu,
            gpu_memory_gb=np.array([o.gpu_memory_gb for o in offers], dtype=np.float64),
            pricing=Coded(o.pricing for o in offers),
            provider=Coded(o.provider for o in offers),
            region=Coded(o.region.lower() for o in offers),
            sku=Coded(o.sku for o in offers),
            spot=np.array([o.pricing == SPOT for o in offers], dtype=bool),
            stale=np.array([o.stale for o in offers], dtype=bool),
            sold_out=np.array([o.availability == SOLD_OUT for o in offers], dtype=bool),
            priced=np.array([r is not None for r in rule_of], dtype=bool),
            cny_per_hour=np.array(
                [np.nan if r is None else o.cny_per_hour for o, r in zip(offers, rule_of, strict=True)],
                dtype=np.float64,
            ),
            rules=rules,
            rule=np.array([-1 if r is None else rule_index[r] for r in rule_of], dtype=np.int32),
            configurations=Grouped((o.gpu_count, o.gpu_memory_gb) for o in offers),
            tie_order=_tie_order(offers),
            stepped=SteppedPrices(offers, [i for i, r in enumerate(rule_of) if r == STEPPED], settings),
            pieces_max_bytes=int(settings.offer_pieces_mb * 2**20),
        )

    def rows_for(self, chosen: OfferFilter, query: CheapestQuery) -> np.ndarray:
        """The rows the selecting rules keep (gpus, pricing, provider, region, sku), and, asked by
        `mem` across a machine's GPUs, only those with the capacity: a binary search in each model's rows."""
        blocks = []
        for model in chosen.gpus or self.by_gpu:  # no GPU named: every card
            block = self.by_gpu.get(model)
            if block is not None and query.mem_gb is not None and not query.single_gpu:
                block = block[np.searchsorted(self.capacity_by_gpu[model], query.mem_gb, side="left") :]
            if block is not None:
                blocks.append(block)
        rows = np.concatenate(blocks) if blocks else np.empty(0, dtype=np.int64)
        for column, any_of in (
            (self.pricing, chosen.pricings),
            (self.provider, chosen.providers),
            (self.region, chosen.lower_regions),
            (self.sku, chosen.skus),
        ):
            if any_of:
                rows = rows[column.any_of(rows, any_of)]
        return rows

    def viable(self, rows: np.ndarray, query: CheapestQuery, judge: Judge | None) -> np.ndarray:
        """Which of `rows` can hold the job. The Judge is asked once per configuration among them,
        as the reference asks it (and records it) for every offer the selecting rules keep."""
        if judge is None:
            assert query.mem_gb is not None
            if query.single_gpu:
                return self.gpu_memory_gb[rows] >= query.mem_gb
            return np.ones(len(rows), dtype=bool)  # rows_for started at the capacity
        groups = self.configurations.index[rows]
        present = np.zeros(len(self.configurations.keys), dtype=bool)
        present[groups] = True
        verdict = np.zeros(len(self.configurations.keys), dtype=bool)
        for group in np.flatnonzero(present).tolist():
            verdict[group] = judge.fits(self.offers[self.configurations.first[group]])
        return verdict[groups]

    def totals(self, rows: np.ndarray, hours: float) -> np.ndarray:
        """The job's total in CNY on each of `rows` (all priced)."""
        billed = np.array([billed_under(rule, hours) for rule in self.rules], dtype=np.float64)
        rule = self.rule[rows]
        totals = self.cny_per_hour[rows] * billed[rule]
        if STEPPED in self.rules:
            at = np.flatnonzero(rule == self.rules.index(STEPPED))
            if len(at):
                totals[at] = self.stepped.totals(rows[at], hours)
        return totals

    def few_totals(self, rows: list[int], hours: float) -> list[float]:
        """`totals` of a few rows, in Python: the same products (IEEE doubles either way) without numpy's
        fixed cost per operation, which is most of the cost over a few dozen rows."""
        billed: dict[int, float] = {}
        cny, rule_of = self.cny_list, self.rule_list
        found = []
        for row in rows:
            rule = rule_of[row]
            hours_billed = billed.get(rule)
            if hours_billed is None:
                hours_billed = billed[rule] = billed_under(self.rules[rule], hours)
            found.append(cny[row] * hours_billed)
        stepped = self.stepped_rule
        if stepped in billed:  # stepped rows among them (their "billed" total was NaN)
            at = [index for index, row in enumerate(rows) if rule_of[row] == stepped]
            priced = self.stepped.totals(np.array([rows[i] for i in at]), hours).tolist()
            for index, total in zip(at, priced, strict=True):
                found[index] = total
        return found


FEW_ROWS = 128  # at most this many rows to rank: totals in Python (OfferColumns.few_totals)
EXCLUDED = ("interruptible", "stale", "unavailable")  # the flags, in the order they leave a viable offer out


def _flags(columns: OfferColumns, chosen: OfferFilter) -> list[tuple[str, np.ndarray]]:
    """The flags a question leaves offers out by, each with its column, in the reference's order."""
    included = (chosen.include_interruptible, chosen.include_stale, chosen.include_unavailable)
    flags = (columns.spot, columns.stale, columns.sold_out)
    return [(reason, flag) for reason, flag, keep in zip(EXCLUDED, flags, included, strict=True) if not keep]


@dataclass(frozen=True)
class Unfiltered:
    """Every offer by configuration, with one question's flags applied: what a question with no
    selecting rule (the usual question by model and workload) reads. Viability there is one verdict
    per configuration, and a job's total under one billing rule grows with the offer's hourly price,
    so per rule the priced rows are kept by price: a question's candidates for its first `limit` are
    the first viable rows of each rule (and every stepped one), not every row."""

    by_rule: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]  # (rule, rows by price, their configurations, prices)
    priced: np.ndarray  # per configuration, its priced rows the flags keep
    unpriced: np.ndarray  # the unpriced rows the flags keep, in the offers' order
    unpriced_group: np.ndarray
    excluded: np.ndarray  # per configuration, the rows each flag took out (columns in EXCLUDED order)
    # The configurations of each rule's first HEAD_ROWS rows by price, one rule after another, and where
    # each rule's start (one more: the end): `Selected.of` reads every rule's head at once.
    head_groups: np.ndarray
    head_starts: list[int]
    # What questions selected before their hours count, by their verdicts and `limit` (`selected`): jobs
    # that differ only in batch or context often have the same verdicts, and a job asked again has them.
    _selected: ByteLRU = field(init=False, compare=False, default_factory=lambda: ByteLRU(SELECTED_MAX_BYTES))
    _lock: threading.Lock = field(init=False, compare=False, default_factory=threading.Lock)

    @classmethod
    def build(cls, columns: OfferColumns, chosen: OfferFilter) -> Unfiltered:
        group = columns.configurations.index
        count = len(columns.configurations.keys)
        left_out = np.zeros(len(group), dtype=bool)
        excluded = np.zeros((count, len(EXCLUDED)), dtype=np.int64)
        for reason, flag in _flags(columns, chosen):
            hit = flag & ~left_out
            excluded[:, EXCLUDED.index(reason)] = np.bincount(group[hit], minlength=count)
            left_out |= hit
        priced = np.flatnonzero(~left_out & columns.priced)
        by_rule = []
        for rule in np.unique(columns.rule[priced]).tolist():
            rows = priced[columns.rule[priced] == rule]
            rows = rows[np.lexsort((rows, columns.cny_per_hour[rows]))]
            by_rule.append((rule, rows, group[rows], columns.cny_per_hour[rows]))
        unpriced = np.flatnonzero(~left_out & ~columns.priced)
        heads = [groups[:HEAD_ROWS] for _, _, groups, _ in by_rule]
        starts = np.cumsum([0, *(len(head) for head in heads)]).tolist()
        head_groups = np.concatenate(heads) if heads else np.empty(0, dtype=np.int64)
        priced_count = np.bincount(group[priced], minlength=count)
        return cls(by_rule, priced_count, unpriced, group[unpriced], excluded, head_groups, starts)

    def selected(self, columns: OfferColumns, verdicts: list[bool], limit: int) -> Selected:
        """What a question with these verdicts (one per configuration) and `limit` selects before its
        hours count, worked out once while kept."""
        key = (bytes(verdicts), limit)
        with self._lock:
            found = self._selected.get(key)
        if found is None:
            found = Selected.of(self, columns, np.array(verdicts, dtype=bool), limit)
            with self._lock:
                self._selected.put(key, found)
        return found

    def candidates(
        self, columns: OfferColumns, viable: np.ndarray, firsts: list[np.ndarray], hours: float, limit: int
    ) -> np.ndarray:
        """Rows among which the first `limit` viable priced rows are (ranked by total first): in each
        rule, the viable rows whose total is at most that of its `limit`-th (every row of a stepped
        rule, whose total does not follow the hourly price), from each rule's first viable positions
        (`Selected.firsts`)."""
        found = []
        stepped = columns.stepped_rule
        for (rule, rows, groups, prices), at in zip(self.by_rule, firsts, strict=True):
            if rule != stepped and len(at) > limit:
                billed = billed_under(columns.rules[rule], hours)
                totals = prices[at] * billed  # as `totals` computes them: rising with the price
                cut = int(np.searchsorted(totals, totals[limit - 1], side="right"))
                if cut == len(at) and at[-1] < len(groups) - 1:  # as many ties as that: every viable row up to the tie
                    at = np.flatnonzero(viable[groups])
                    cut = int(np.searchsorted(prices[at] * billed, totals[limit - 1], side="right"))
                at = at[:cut]
            found.append(rows[at])
        return np.concatenate(found) if found else np.empty(0, dtype=np.int64)


# What an Unfiltered keeps of its questions' selections: ~2 KB each at limit 10 (seven billing rules at
# 50,000 offers), so a few hundred lists of verdicts per set of flags.
SELECTED_MAX_BYTES = 512 * 1024
SELECTED_BYTES = 512  # a kept selection beyond its arrays' data and its unpriced rows: its object, lists and headers
ARRAY_BYTES = 112  # a numpy array's header


@dataclass(frozen=True)
class Selected:
    """What a question with no selecting rule selects before its hours count, for its verdicts (one
    per configuration) and `limit`: per billing rule of `Unfiltered.by_rule`, the positions of its
    first 2 × `limit` viable rows (of a stepped rule, all of them), and the answer's counts and
    unpriced rows."""

    firsts: list[np.ndarray]
    viable_count: int
    unpriced: list[int]
    excluded: list[int]  # in EXCLUDED order

    @classmethod
    def of(cls, unfiltered: Unfiltered, columns: OfferColumns, viable: np.ndarray, limit: int) -> Selected:
        firsts = []
        wanted = 2 * limit
        starts = unfiltered.head_starts
        in_heads = np.flatnonzero(viable[unfiltered.head_groups])  # every rule's head read at once
        bounds = np.searchsorted(in_heads, starts).tolist()
        for index, (rule, _, groups, _) in enumerate(unfiltered.by_rule):
            found, start = bounds[index + 1] - bounds[index], starts[index]
            if limit <= 0:
                firsts.append(np.empty(0, dtype=np.int64))
            elif rule == columns.stepped_rule:
                firsts.append(np.flatnonzero(viable[groups]))
            elif found >= wanted or starts[index + 1] - start == len(groups):  # its head holds them, or is all
                firsts.append(in_heads[bounds[index] : bounds[index] + min(found, wanted)] - start)
            else:
                firsts.append(_first_viable(viable, groups, wanted).copy())  # not a view keeping its chunks
        return cls(
            firsts=firsts,
            viable_count=int(unfiltered.priced[viable].sum()),
            unpriced=unfiltered.unpriced[viable[unfiltered.unpriced_group]].tolist(),
            excluded=unfiltered.excluded[viable].sum(axis=0).tolist(),
        )

    @property
    def cache_size(self) -> int:
        arrays = sum(ARRAY_BYTES + found.nbytes for found in self.firsts)
        return SELECTED_BYTES + arrays + 40 * len(self.unpriced)  # an int object and its slot per unpriced row


HEAD_ROWS = 128  # per rule, the rows `Selected.of` reads first: the first 2 × `limit` viable ones are usually there


def _first_viable(viable: np.ndarray, groups: np.ndarray, wanted: int) -> np.ndarray:
    """The positions of the first `wanted` rows (or all) whose configuration is viable, reading
    `groups` from the start in growing chunks: the cheapest rows are usually found in the first few."""
    found, start, size = [], 0, max(64, 4 * wanted)
    count = 0
    while start < len(groups) and count < wanted:
        chunk = np.flatnonzero(viable[groups[start : start + size]]) + start
        found.append(chunk)
        count += len(chunk)
        start, size = start + size, size * 4
    at = np.concatenate(found) if len(found) > 1 else found[0] if found else np.empty(0, dtype=np.int64)
    return at[:wanted]


@dataclass(frozen=True)
class ModelRows:
    """One GPU model's offers with one question's flags applied, each kind by capacity (ascending):
    what a plain `mem` question about named GPUs reads with a binary search per kind."""

    priced: np.ndarray  # priced rows the flags keep
    priced_capacity: np.ndarray
    unpriced: np.ndarray
    unpriced_capacity: np.ndarray
    excluded_capacity: list[np.ndarray]  # per flag (EXCLUDED order), the capacities of the rows it took out

    @classmethod
    def build(cls, columns: OfferColumns, model: str, flags: list[tuple[str, np.ndarray]]) -> ModelRows:
        rows, capacity = columns.by_gpu[model], columns.capacity_by_gpu[model]
        left_out = np.zeros(len(rows), dtype=bool)
        excluded = {reason: capacity[:0] for reason in EXCLUDED}
        for reason, flag in flags:
            hit = flag[rows] & ~left_out
            excluded[reason] = capacity[hit]
            left_out |= hit
        priced = ~left_out & columns.priced[rows]
        unpriced = ~left_out & ~columns.priced[rows]
        return cls(rows[priced], capacity[priced], rows[unpriced], capacity[unpriced], [excluded[r] for r in EXCLUDED])


class SteppedPrices:
    """The stepped offers' price segments as arrays (one row per stepped offer, padded with segments
    that start at infinity), so their totals are `job_cost`'s own sum — the same IEEE operations in
    the same order — over every stepped row at once."""

    def __init__(self, offers: list[Offer], rows: list[int], settings: Settings) -> None:
        self.position = np.full(len(offers), -1, dtype=np.int64)
        self.position[rows] = np.arange(len(rows))
        segments = [price_segments(offers[row], settings) for row in rows]
        width = max((len(s) for s in segments), default=1)
        self.start = np.full((len(rows), width), np.inf)
        self.rate = np.zeros((len(rows), width))
        for at, found in enumerate(segments):
            self.start[at, : len(found)] = [start for start, _ in found]
            self.rate[at, : len(found)] = [rate for _, rate in found]
        rules = [(offers[row].billing_increment_s, offers[row].billing_minimum_s) for row in rows]
        self.rules = list(dict.fromkeys(rules))
        self.rule = np.array([self.rules.index(rule) for rule in rules], dtype=np.int64)

    def totals(self, rows: np.ndarray, hours: float) -> np.ndarray:
        at = self.position[rows]
        billed = np.array([billed_hours(increment, minimum, hours) for increment, minimum in self.rules])[self.rule[at]]
        start, rate = self.start[at], self.rate[at]
        total = np.zeros(len(at))
        width = start.shape[1]
        for k in range(width):
            end = start[:, k + 1] if k + 1 < width else np.inf
            used = np.maximum(0.0, np.minimum(billed, end) - start[:, k])
            total = total + np.where(used > 0, used * rate[:, k], 0.0)
        return total


@dataclass(frozen=True)
class RowSelection(Selection):
    """A `Selection` made over the columns, with the rows of what it ranked and left unpriced."""

    ranked_rows: list[int]
    unpriced_rows: list[int]


def select_fast(
    columns: OfferColumns, query: CheapestQuery, settings: Settings, judge: Judge | None = None
) -> Selection:
    """What `api.cheapest.select` selects, with `ranked` cut to the first `query.limit` (a
    `RowSelection`). A question whose ranking or hours need figures a card may lack
    (`rank_by=per_mtoken`, an amount of work: each option timed on its own card, some left
    `unranked`) is given to the reference as it is."""
    if judge is not None and judge.needs_card_figures:
        return select(columns.offers, query, settings, judge)
    assert query.hours is not None  # wall-clock hours: no amount of work without a judge that times it
    found = candidates(columns, query, judge)
    top = ranked_top(columns, found.rows, query.limit, query.hours, settings, judge)
    return RowSelection(
        ranked=[(offer, cost) for _, offer, cost in top],
        unpriced=[columns.offers[i] for i in found.unpriced],
        excluded=found.excluded,
        unranked=[],
        viable_count=found.viable_count,
        ranked_rows=[row for row, _, _ in top],
        unpriced_rows=found.unpriced,
    )


@dataclass(frozen=True)
class Candidates:
    """What a question selects before its hours count: the priced rows its first `limit` are among,
    how many priced rows are viable, the unpriced rows (in the offers' order), what its flags left out."""

    rows: np.ndarray
    viable_count: int
    unpriced: list[int]
    excluded: dict[str, int]


def candidates(columns: OfferColumns, query: CheapestQuery, judge: Judge | None) -> Candidates:
    """`select_fast`'s selection before the ranking (which by `mem` is all that the hours change)."""
    chosen = query.offer_filter
    excluded = {"stale": 0, "unavailable": 0, "interruptible": 0}
    selecting = chosen.pricings or chosen.providers or chosen.regions or chosen.skus
    if judge is not None and not (chosen.gpus or selecting):
        rows, viable_count, unpriced = _unfiltered(columns, query, judge, excluded)
    elif judge is None and chosen.gpus and not (selecting or query.single_gpu):
        rows, unpriced = _by_models(columns, query, excluded)
        viable_count = len(rows)
    else:
        rows = columns.rows_for(chosen, query)
        rows = rows[columns.viable(rows, query, judge)]
        left_out = np.zeros(len(rows), dtype=bool)
        for reason, flag in _flags(columns, chosen):
            hit = flag[rows] & ~left_out
            excluded[reason] = int(hit.sum())
            left_out |= hit
        rows = rows[~left_out]
        priced = columns.priced[rows]
        unpriced = np.sort(rows[~priced]).tolist()  # in the offers' order, as the reference
        rows = rows[priced]
        viable_count = len(rows)
    return Candidates(rows, viable_count, unpriced, excluded)


def _by_models(columns: OfferColumns, query: CheapestQuery, excluded: dict[str, int]) -> tuple[np.ndarray, list[int]]:
    """The priced and unpriced rows of a plain `mem` question about named GPUs (no other selecting
    rule, not `single_gpu`), and what its flags left out (into `excluded`): per model, a binary search
    at `mem` in each kind of its rows, kept by capacity for the question's flags."""
    chosen = query.offer_filter
    flags = (chosen.include_interruptible, chosen.include_stale, chosen.include_unavailable)
    kept = columns._by_model.get(flags)
    if kept is None:
        kept = columns._by_model[flags] = {}
    priced, unpriced = [], []
    counts = [0] * len(EXCLUDED)
    for model in chosen.gpus:
        found = kept.get(model)
        if found is None:
            if model not in columns.by_gpu:
                continue
            found = kept[model] = ModelRows.build(columns, model, _flags(columns, chosen))
        priced.append(found.priced[np.searchsorted(found.priced_capacity, query.mem_gb, side="left") :])
        unpriced.append(found.unpriced[np.searchsorted(found.unpriced_capacity, query.mem_gb, side="left") :])
        for at, capacity in enumerate(found.excluded_capacity):
            if len(capacity):
                counts[at] += len(capacity) - int(np.searchsorted(capacity, query.mem_gb, side="left"))
    for reason, count in zip(EXCLUDED, counts, strict=True):
        excluded[reason] = count
    rows = priced[0] if len(priced) == 1 else np.concatenate(priced) if priced else np.empty(0, dtype=np.int64)
    left = unpriced[0] if len(unpriced) == 1 else np.concatenate(unpriced) if unpriced else np.empty(0, dtype=np.int64)
    return rows, np.sort(left).tolist()  # unpriced in the offers' order, as the reference


def _unfiltered(
    columns: OfferColumns, query: CheapestQuery, judge: Judge, excluded: dict[str, int]
) -> tuple[np.ndarray, int, list[int]]:
    """For a question with no selecting rule: the rows its first `limit` are among, how many priced
    rows are viable, the unpriced ones, and what its flags left out (into `excluded`). Every
    configuration is judged (as the reference judges every offer); only the viable ones' rows are read."""
    chosen = query.offer_filter
    flags = (chosen.include_interruptible, chosen.include_stale, chosen.include_unavailable)
    found = columns._unfiltered.get(flags)
    if found is None:
        found = columns._unfiltered[flags] = Unfiltered.build(columns, chosen)
    verdicts = judge.fits_each(columns.configurations.keys)
    selected = found.selected(columns, verdicts, query.limit)
    for reason, count in zip(EXCLUDED, selected.excluded, strict=True):
        excluded[reason] = count
    assert query.hours is not None
    rows = np.empty(0, np.int64)
    if query.limit > 0:
        rows = found.candidates(columns, np.array(verdicts, dtype=bool), selected.firsts, query.hours, query.limit)
    return rows, selected.viable_count, list(selected.unpriced)  # the kept list stays as kept


class RuleCosts:
    """`job_cost` of priced rows for one question's hours, with the billed hours worked out once per
    billing rule (the same functions `job_cost` calls, so the same figures and words)."""

    def __init__(self, columns: OfferColumns, hours: float, settings: Settings) -> None:
        self.columns, self.hours, self.settings = columns, hours, settings
        self._billed: dict[int, float] = {}

    def of(self, row: int, offer: Offer) -> JobCost:
        index = self.columns.rule_list[row]
        rule = self.columns.rules[index]
        assert offer.cny_per_hour is not None  # priced rows only
        kind = rule[0]
        if kind == "billed":
            billed = self._billed.get(index)
            if billed is None:
                billed = self._billed[index] = billed_under(rule, self.hours)
            return hourly_cost(offer.cny_per_hour, billed)
        if kind == "period":
            return period_cost(offer.cny_per_hour, rule[1], self.hours, self.settings)  # type: ignore[arg-type]
        if kind == "term":
            return term_cost(offer.cny_per_hour, rule[1])  # type: ignore[arg-type]
        cost = job_cost(offer, self.hours, self.settings)  # stepped
        assert cost is not None
        return cost


def ranked_top(
    columns: OfferColumns, rows: np.ndarray, limit: int, hours: float, settings: Settings, judge: Judge | None
) -> list[tuple[int, Offer, JobCost]]:
    """The first `limit` of `rows` in the reference's order: rows whose first ranking figure is
    beyond the `limit`-th smallest have at least `limit` rows before them, so only the others are
    priced and sorted, with the reference's own cost and key."""
    if limit <= 0 or len(rows) == 0:
        return []
    shown = rows.tolist()
    if len(shown) > limit:  # the first element of every ranking key here is the total
        if len(shown) <= FEW_ROWS:
            totals = columns.few_totals(shown, hours)
            threshold = sorted(totals)[limit - 1]
            shown = [row for row, total in zip(shown, totals, strict=True) if total <= threshold]
        else:
            figure = columns.totals(rows, hours)
            threshold = np.partition(figure, limit - 1)[limit - 1]
            shown = rows[figure <= threshold].tolist()
    found = []
    costs = RuleCosts(columns, hours, settings)
    for row in shown:
        offer = columns.offers[row]
        found.append((row, offer, costs.of(row, offer)))
    found.sort(key=lambda one: judge.rank_key(one[1], one[2]) if judge is not None else by_total(one[1], one[2]))
    return found[:limit]
