"""A `mem` question's options for any hours: its rows kept per billing rule by price, ranked and
written with each rule's words worked out once per answer.

Under one billing rule (stepped prices aside) every offer is billed the same hours for a job, and
its total is its hourly price times those hours (api.cheapest's `job_cost`), so within a rule totals
rise with the price (a product by one number ≥ 0 keeps the order of IEEE doubles, ties included).
`MemOptions` keeps a question's priced rows per rule by price, then by tie order (the order
`by_total` gives offers of one total: `OfferColumns.tie_order`). For any hours, the rows of a rule
that can be among the first `limit` are its first `limit` and those whose total ties the
`limit`-th: a prefix. The first `limit` of those few, by (total, tie order), are the reference's
(api.cheapest.select), and only they are written. Stepped rows are all candidates (their total
does not follow the price).

Per rule, the first `limit` + SPARE rows are kept as Python values with what their option holds
beyond the offer (the end of its cost basis, its job notes: written); a tie running past them reads
the rule's rows from the arrays. Each shown option is written from the offer's pieces
(api.cheapest_write) with its rule's billed hours and words (`RuleWords`, once per rule and answer).
tests/api/test_cheapest_fast.py compares the answers with the reference's, byte for byte.
"""

from __future__ import annotations

import math
from functools import lru_cache
from json.encoder import encode_basestring  # type: ignore[attr-defined]

import numpy as np

from api.cheapest import (
    CheapestQuery,
    billed_hours,
    hourly_price_words,
    hourly_words,
    job_cost,
    mem_job_notes,
    period_price_words,
    period_words,
    price_segments,
    stepped_total,
    stepped_use,
    term_words,
    whole_periods,
)
from api.cheapest_fast import OfferColumns, Rule, billed_under
from api.cheapest_write import cost_json, members, rank_json, value_json
from pricedb.settings import Settings

SPARE = 8  # rows kept as Python values past a rule's `limit`-th: room for a tie with it
STEPPED = -1  # a candidate's rule when its price is stepped
KEPT_ROW_BYTES = 200  # a row kept as Python values, beyond its bytes' content: the tuple, float, ints, list slot
NO_JOB_NOTES = b"," + members({"job_notes": []})

FEW_STEPPED = 16  # a question's stepped rows priced in Python up to this many, by numpy beyond
SEGMENT_BYTES = 120  # a stepped price's segment kept: its tuple, two floats and the list slot
RANKS = tuple(rank_json(rank) for rank in range(101))  # written once: most answers show at most 100 options
# A row kept as Python values: (price, tie order, row, its cost basis's end, what follows the cost basis)
Kept = tuple[float, int, int, bytes, bytes]
# A stepped row: (row, tie order, what follows the cost basis, billing increment and minimum, price segments)
Stepped = tuple[int, int, bytes, int, int, list[tuple[float, float]]]
# A candidate for one question's hours: (total, tie order, row, rule index or STEPPED, basis's end, what follows)
Candidate = tuple[float, int, int, int, bytes, bytes]


@lru_cache(maxsize=256)  # bounded by the data: a note names an offer's GPU count (a few distinct ones)
def _job_notes(notes: tuple[str, ...]) -> bytes:
    return b"," + members({"job_notes": list(notes)})


class RuleWords:
    """One billing rule's part of an option for one question's hours: the hours it bills (and written),
    and the words of its cost basis but for the offer's price's (written, from the opening quote)."""

    def __init__(self, rule: Rule, billed: float, hours: float, settings: Settings) -> None:
        kind, figure = rule[0], rule[1]
        if kind == "period":  # as api.cheapest's period_cost and term_cost, with the rule's own figure
            months = whole_periods(hours, figure)  # type: ignore[arg-type]
            billed, words = months * figure, period_words(months, figure, settings)  # type: ignore[operator,arg-type]
        elif kind == "term":
            billed, words = figure, term_words(figure)  # type: ignore[arg-type,assignment]
        else:
            words = hourly_words(billed)
        self.billed = value_json(round(billed, 6))  # type: ignore[call-overload]
        self.head = encode_basestring(words).encode()[:-1]


def price_tail(rule: Rule, cny_per_hour: float) -> bytes:
    """The end of an offer's cost basis under `rule` (written, to the closing quote): its price's words."""
    if rule[0] == "period":
        return encode_basestring(period_price_words(cny_per_hour, rule[1])).encode()[1:]  # type: ignore[arg-type]
    if rule[0] == "term":
        return b'"'
    return encode_basestring(hourly_price_words(cny_per_hour)).encode()[1:]


class MemOptions:
    """A `mem` question's priced viable rows (`rows`), ranked and written for any hours."""

    def __init__(self, columns: OfferColumns, rows: np.ndarray, query: CheapestQuery, settings: Settings) -> None:
        self.columns, self.query, self.settings, self.limit = columns, query, settings, query.limit
        self.ties = columns.tie_order
        rule = columns.rule[rows]
        stepped = rule == columns.stepped_rule
        self.stepped = [self._stepped(row) for row in rows[stepped].tolist()]
        rows, rule = rows[~stepped], rule[~stepped]
        order = np.lexsort((self.ties[rows], columns.cny_per_hour[rows], rule))
        rows, rule = rows[order], rule[order]
        self.rules: list[tuple[int, list[Kept], np.ndarray]] = []
        self.kept_bytes = sum(KEPT_ROW_BYTES + len(after) + SEGMENT_BYTES * len(segments)
                              for _, _, after, _, _, segments in self.stepped)  # fmt: skip
        for block in np.split(rows, np.flatnonzero(np.diff(rule)) + 1) if len(rows) else []:
            head = [self._kept(row) for row in block[: self.limit + SPARE].tolist()]
            self.rules.append((columns.rule_list[head[0][2]], head, block))
            self.kept_bytes += sum(KEPT_ROW_BYTES + len(tail) + len(after) for *_, tail, after in head)

    @property
    def nbytes(self) -> int:
        """What it holds: the rows, and the first ones of each rule as Python values."""
        return sum(rows.nbytes for _, _, rows in self.rules) + self.kept_bytes

    def _kept(self, row: int) -> Kept:
        cny_per_hour = self.columns.cny_list[row]
        tail = price_tail(self.columns.rules[self.columns.rule_list[row]], cny_per_hour)
        return cny_per_hour, int(self.ties[row]), row, tail, self._after(row)

    def _stepped(self, row: int) -> Stepped:
        offer = self.columns.offers[row]
        segments = price_segments(offer, self.settings)
        return row, int(self.ties[row]), self._after(row), offer.billing_increment_s, offer.billing_minimum_s, segments

    def _stepped_totals(self, hours: float) -> list[float]:
        """The stepped rows' totals for `hours`: job_cost's own sums, in Python for a few rows."""
        if len(self.stepped) > FEW_STEPPED:
            return self.columns.stepped.totals(np.array([row for row, *_ in self.stepped]), hours).tolist()
        return [stepped_total(stepped_use(segments, billed_hours(increment, minimum, hours)))
                for _, _, _, increment, minimum, segments in self.stepped]  # fmt: skip

    def _after(self, row: int) -> bytes:
        """What follows an option's cost basis in this question: its job notes (by `mem`, as
        api.cheapest.option_extra gives them)."""
        notes = mem_job_notes(self.columns.offers[row], self.query)
        return _job_notes(tuple(notes)) if notes else NO_JOB_NOTES

    def top(self, hours: float) -> tuple[list[Candidate], dict[int, float]]:
        """The first `limit` options for `hours`, in the reference's order (`by_total`), and the hours
        each rule bills. A rule with `limit` rows bounds the `limit`-th total of all: its `limit`-th
        total; rows past the lowest such bound cannot be shown, so only those within it are sorted."""
        limit, rules = self.limit, self.columns.rules
        billed_by_rule = {rule: billed_under(rules[rule], hours) for rule, _, _ in self.rules}
        if limit <= 0:
            return [], billed_by_rule
        bound = math.inf
        for rule, head, rows in self.rules:
            if len(rows) >= limit:
                bound = min(bound, head[limit - 1][0] * billed_by_rule[rule])
        found: list[Candidate] = []
        for rule, head, rows in self.rules:
            billed = billed_by_rule[rule]
            for cny, tie, row, tail, after in head:
                total = cny * billed
                if total > bound:
                    break
                found.append((total, tie, row, rule, tail, after))
            else:
                if len(rows) > len(head):  # within the bound past the rows kept (a run of one total)
                    found = [one for one in found if one[3] != rule] + self._tied(rule, rows, billed, bound)
        if self.stepped:
            totals = self._stepped_totals(hours)
            found += [(total, tie, row, STEPPED, b"", after)
                      for total, (row, tie, after, *_) in zip(totals, self.stepped, strict=True)]  # fmt: skip
        found.sort()
        return found[:limit], billed_by_rule

    def _tied(self, rule: int, rows: np.ndarray, billed: float, threshold: float) -> list[Candidate]:
        """A rule's rows whose total is at most `threshold`, read from the arrays."""
        cut = int(np.searchsorted(self.columns.cny_per_hour[rows] * billed, threshold, side="right"))
        kept = map(self._kept, rows[:cut].tolist())
        return [(cny * billed, tie, row, rule, tail, after) for cny, tie, row, tail, after in kept]

    def write(self, hours: float) -> bytes:
        """The JSON array of the options for `hours`."""
        columns, settings = self.columns, self.settings
        option = columns.pieces.written_option
        top, billed = self.top(hours)
        ranks = RANKS if len(top) < len(RANKS) else [rank_json(rank) for rank in range(len(top) + 1)]
        words: dict[int, RuleWords] = {}
        written = []
        for rank, (total, _, row, rule, tail, after) in enumerate(top, start=1):
            if rule == STEPPED:
                cost = job_cost(columns.offers[row], hours, settings)
                assert cost is not None  # priced rows only
                written.append(option(row, (ranks[rank], *cost_json(cost), after)))
                continue
            found = words.get(rule)
            if found is None:
                found = words[rule] = RuleWords(columns.rules[rule], billed[rule], hours, settings)
            # As value_json writes a total: a finite float (a price times hours).
            total_json = float.__repr__(round(total, 2)).encode()
            written.append(option(row, (ranks[rank], found.billed, total_json, found.head + tail, after)))
        return b"[" + b",".join(written) + b"]"
