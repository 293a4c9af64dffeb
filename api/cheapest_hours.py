"""A `mem` question's answer for any hours, from what the question holds without them.

By `mem`, all of `/cheapest`'s answer but its ranked options and the `hours` it echoes stays the
same whatever the hours: the rows that can hold the job, the unpriced ones, what the flags left out,
the rest of the echo. So `MemAnswer` works a question out once per data version without its hours
(api.cheapest_fast's `candidates`, and the answer's JSON cut around `hours` and `options`), kept in
the question's `CheapestParams.shared` (which its copies with other hours share: api.query_fast),
and each hours asked only ranks those rows and writes the options between the pieces
(api.cheapest_rules: the rows kept per billing rule by price). What it writes is byte for byte
the reference answer (tests/api/test_cheapest_fast.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.cheapest import CheapestQuery, Selection, answer_fields
from api.cheapest_fast import OfferColumns, candidates
from api.cheapest_rules import MemOptions
from api.cheapest_write import Cut, Raw, value_json
from pricedb.settings import Settings

MEM_ANSWER = "mem_answer"  # under this in `CheapestParams.shared`
HELD_BYTES = 4096  # beyond its JSON pieces and options: the instance, its query, the cuts and the arrays' headers


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
        self.options = MemOptions(columns, found.rows, query, settings)
        self.echo = Cut(echo, ("hours",))
        unpriced = Raw(b"[" + b",".join([columns.pieces.unpriced(row) for row in found.unpriced]) + b"]")
        selection = Selection([], [], found.excluded, [], found.viable_count)
        self.answer = Cut(answer_fields(echo, as_of, selection, None, [], unpriced), ("query", "options"))

    def serves(self, columns: OfferColumns, as_of: datetime | None, settings: Settings) -> bool:
        return columns is self.columns and as_of == self.as_of and settings is self.settings

    @property
    def cache_size(self) -> int:
        return HELD_BYTES + len(self.echo.template) + len(self.answer.template) + self.options.nbytes

    def write(self, hours: float) -> bytes:
        """The answer for `hours`."""
        return self.answer.write((self.echo.write((value_json(hours),)), self.options.write(hours)))
