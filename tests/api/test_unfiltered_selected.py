"""What a question by model with no selecting rule selects before its hours count is kept per list of
verdicts and `limit` (api.cheapest_fast.Unfiltered.selected): the same as working it out, charged at
least what it holds, and kept within its bound however many lists of verdicts are asked."""

from __future__ import annotations

import gc
import random
import tracemalloc

import numpy as np

from api.cheapest_fast import SELECTED_MAX_BYTES, OfferColumns, Selected, Unfiltered
from pricedb.offer_filter import OfferFilter
from tests.api.test_cheapest_fast import SETTINGS, random_offer


def _unfiltered(seed: int, count: int) -> tuple[OfferColumns, Unfiltered]:
    rng = random.Random(seed)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(count))}.values(), key=lambda o: o.key)
    columns = OfferColumns.build(offers, SETTINGS)
    return columns, Unfiltered.build(columns, OfferFilter(include_interruptible=True))


def _random_verdicts(rng: random.Random, columns: OfferColumns) -> list[bool]:
    return [rng.random() < 0.5 for _ in columns.configurations.keys]


def test_a_kept_selection_is_the_one_worked_out() -> None:
    columns, unfiltered = _unfiltered(1, 600)
    rng = random.Random(2)
    for _ in range(40):
        verdicts, limit = _random_verdicts(rng, columns), rng.choice((1, 3, 10, 50))
        fresh = Selected.of(unfiltered, columns, np.array(verdicts, dtype=bool), limit)
        for _ in range(2):  # made, then kept
            kept = unfiltered.selected(columns, verdicts, limit)
            assert (kept.viable_count, kept.unpriced, kept.excluded) == (
                fresh.viable_count,
                fresh.unpriced,
                fresh.excluded,
            )
            assert [a.tolist() for a in kept.firsts] == [a.tolist() for a in fresh.firsts]
    assert unfiltered.selected(columns, verdicts, limit) is unfiltered.selected(columns, verdicts, limit)


def test_a_selection_reads_the_first_viable_rows_of_each_rule() -> None:
    """Selected.of reads every rule's first rows at once, and further only where they hold too few
    viable ones: its positions are the first 2 × limit viable rows of each rule (a stepped rule's all),
    whether few or most configurations are viable and whatever the limit."""
    columns, unfiltered = _unfiltered(5, 3000)
    rng = random.Random(6)
    for _ in range(60):
        share = rng.choice((0.02, 0.2, 0.5, 0.95))
        viable = np.array([rng.random() < share for _ in columns.configurations.keys], dtype=bool)
        limit = rng.choice((0, 1, 10, 50, 64, 100))
        found = Selected.of(unfiltered, columns, viable, limit)
        for (rule, _, groups, _), positions in zip(unfiltered.by_rule, found.firsts, strict=True):
            every = np.flatnonzero(viable[groups])
            expected = every if rule == columns.stepped_rule else every[: 2 * limit]
            assert positions.tolist() == (expected.tolist() if limit > 0 else [])


def test_a_selection_is_charged_at_least_what_it_holds_and_the_kept_ones_stay_within_their_bound() -> None:
    columns, unfiltered = _unfiltered(3, 2000)
    rng = random.Random(4)
    asked = [(np.array(_random_verdicts(rng, columns), dtype=bool), 10) for _ in range(50)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    made = [Selected.of(unfiltered, columns, viable, limit) for viable, limit in asked]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    charged = sum(found.cache_size for found in made)
    assert held <= charged <= 3 * held
    for _ in range(3000):
        unfiltered.selected(columns, _random_verdicts(rng, columns), rng.choice((1, 10, 50)))
        assert unfiltered._selected.bytes <= SELECTED_MAX_BYTES
