"""A `mem` question's answer for any hours, from what the question holds without them.

By `mem`, all of `/cheapest`'s answer but its ranked options and the `hours` it echoes stays the
same whatever the hours: the rows that can hold the job, the unpriced ones, what the flags left out,
the rest of the echo. So `MemAnswer` works a question out once per data version without its hours
(api.cheapest_fast's `candidates`, and the answer's JSON cut around `hours` and `options`), kept in
the question's `CheapestParams.shared` (which its copies with other hours share: api.query_fast),
and each hours asked only ranks those rows and writes the options between the pieces. What it
writes is byte for byte the reference answer (tests/api/test_cheapest_fast.py).
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any

from api.cheapest import CheapestQuery, Selection, answer_fields, mem_job_notes
from api.cheapest_fast import OfferColumns, candidates, ranked_top
from api.cheapest_write import Cut, Raw, members, value_json
from pricedb.settings import Settings

MEM_ANSWER = "mem_answer"  # under this in `CheapestParams.shared`
NO_JOB_NOTES = members({"job_notes": []})
HELD_BYTES = 4096  # beyond its JSON pieces and rows: the instance, its query, the cuts and the arrays' headers


@lru_cache(maxsize=256)  # a note names the machine's GPU count: a few distinct ones
def _job_notes(notes: tuple[str, ...]) -> bytes:
    return members({"job_notes": list(notes)})


class MemAnswer:
    """A `mem` question's answer over one data version's `columns`, for any hours."""

    def __init__(
        self,
        columns: OfferColumns,
        query: CheapestQuery,
        echo: dict[str, Any],
        as_of: datetime | None,
        settings: Settings,
    ) -> None:
        found = candidates(columns, query, None)
        self.columns, self.as_of, self.settings = columns, as_of, settings
        self.query, self.rows = query, found.rows
        self.echo = Cut(echo, ("hours",))
        unpriced = Raw(b"[" + b",".join([columns.pieces.unpriced(row) for row in found.unpriced]) + b"]")
        selection = Selection([], [], found.excluded, [], found.viable_count)
        self.answer = Cut(answer_fields(echo, as_of, selection, None, [], unpriced), ("query", "options"))

    def serves(self, columns: OfferColumns, as_of: datetime | None, settings: Settings) -> bool:
        return columns is self.columns and as_of == self.as_of and settings is self.settings

    @property
    def cache_size(self) -> int:
        return HELD_BYTES + len(self.echo.template) + len(self.answer.template) + self.rows.nbytes

    def write(self, hours: float) -> bytes:
        """The answer for `hours`."""
        top = ranked_top(self.columns, self.rows, self.query.limit, hours, self.settings, None)
        option, query = self.columns.pieces.option, self.query
        options = []
        for rank, (row, offer, cost) in enumerate(top, start=1):
            notes = mem_job_notes(offer, query)  # api.cheapest.option_extra's, by `mem`: most options have none
            options.append(option(row, rank, cost, _job_notes(tuple(notes)) if notes else NO_JOB_NOTES))
        return self.answer.write((self.echo.write((value_json(hours),)), b"[" + b",".join(options) + b"]"))
