"""`/cheapest`'s answer written as JSON bytes from pieces of each offer's JSON written once.

An option's JSON (api.cheapest.option_json, then the mem or estimator fields) is the same for an
offer in every answer but for four members: `rank`, `billed_hours`, `total_cny` and `cost_basis`.
So each offer's option is written once per data version, as `json.dumps` writes it, and cut at
those four members (`Cut`); an answer then joins the pieces with the four values and the fields
that depend on the question. An unpriced offer's entry never changes at all. What this writes is
byte for byte what `api.state.dumps` writes for the reference answer (tests/api/test_cheapest_fast.py
compares them on thousands of random questions).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any

from api.cheapest import JobCost, option_json, unpriced_json
from api.state import dumps
from pricedb.queries import Offer

VARYING = ("rank", "billed_hours", "total_cny", "cost_basis")  # what option_json reads from the question
_PLACEHOLDER = JobCost(0.0, 0.0, "")


class Written(list[bytes]):
    """A JSON array whose elements are already written."""


class Raw(bytes):
    """A JSON value already written."""


_CONSTANTS: dict[Any, bytes] = {None: b"null", True: b"true", False: b"false"}


def value_json(value: Any) -> bytes:
    """`value` as `dumps` writes it: numbers, text, None, booleans and `[]` directly (most of what
    options hold), anything else (lists, objects, a subclass, NaN) through `dumps` itself."""
    kind = type(value)
    if kind is Raw:
        return value
    if kind is float and math.isfinite(value):
        return float.__repr__(value).encode()
    if kind is str:
        return encode_basestring(value).encode()
    if kind is int:
        return int.__repr__(value).encode()
    if value is None or kind is bool:
        return _CONSTANTS[value]
    if kind is list and not value:
        return b"[]"
    return dumps(value)


def members(fields: dict[str, Any]) -> bytes:
    """`fields` written as the members of a JSON object, without its braces (b"" when empty)."""
    return b",".join([encode_basestring(key).encode() + b":" + value_json(value) for key, value in fields.items()])


def write_object(fields: dict[str, Any]) -> bytes:
    """`dumps(fields)`, where a `Written` value is joined from its ready elements."""
    parts = []
    for key, value in fields.items():
        written = b"[" + b",".join(value) + b"]" if isinstance(value, Written) else value_json(value)
        parts.append(encode_basestring(key).encode() + b":" + written)
    return b"{" + b",".join(parts) + b"}"


def cost_json(cost: JobCost) -> tuple[bytes, bytes, bytes]:
    """An option's billed hours, total and cost basis, as `option_json` gives them, written."""
    return value_json(round(cost.billed_hours, 6)), value_json(round(cost.total_cny, 2)), value_json(cost.basis)


def rank_json(rank: int) -> bytes:
    return int.__repr__(rank).encode()


class Cut:
    """An object's JSON cut around the members named `varying`, kept as one %-format (`template`): what
    comes before each varying value (its key included), then what follows the last one and the members
    added at the end, then the closing brace."""

    def __init__(self, fields: dict[str, Any], varying: tuple[str, ...]) -> None:
        pieces = [b"{"]
        for index, (key, value) in enumerate(fields.items()):
            pieces[-1] += (b"," if index else b"") + encode_basestring(key).encode() + b":"
            if key in varying:
                pieces.append(b"")
            else:
                pieces[-1] += value_json(value)
        self.template = b"%b".join(piece.replace(b"%", b"%%") for piece in pieces) + b"%b}"

    def write(self, values: tuple[bytes, ...], more: bytes = b"") -> bytes:
        """The object with `values` in the varying members and `more` (members, written) at its end."""
        return self.template % (*values, b"," + more if more else b"")

    def write_members(self, values: tuple[bytes, ...]) -> bytes:
        """`write` without the braces: the object's members, as `members` writes them."""
        return self.write(values)[1:-1]


PIECE_BYTES = 512  # a kept entry beyond its bytes: the dict slot, its `Cut` and the tuple and bytes headers


class OfferPieces:
    """Each offer's option and unpriced entry, written the first time an answer shows it (an offer
    never shown costs nothing) and kept while the offers are current, within `max_bytes` (its bytes
    plus PIECE_BYTES each, GPUPRICE_OFFER_PIECES_MB): past it the first written go first, and are
    written again if shown again."""

    def __init__(self, offers: list[Offer], max_bytes: int) -> None:
        self._offers = offers
        self.max_bytes = max_bytes
        self.bytes = 0
        self._written: dict[int, Cut | bytes] = {}  # by row: an option; by ~row: an unpriced entry
        self._lock = threading.Lock()  # for keeping and letting go; reading needs none

    def __len__(self) -> int:
        return len(self._written)

    @staticmethod
    def size_of(found: Cut | bytes) -> int:
        return PIECE_BYTES + len(found if isinstance(found, bytes) else found.template)

    def _keep(self, key: int, found: Cut | bytes) -> None:
        with self._lock:
            if key in self._written:
                return
            self._written[key] = found
            self.bytes += self.size_of(found)
            while self.bytes > self.max_bytes and self._written:
                self.bytes -= self.size_of(self._written.pop(next(iter(self._written))))

    def option(self, row: int, rank: int, cost: JobCost, more: bytes) -> bytes:
        """The option at `rank` with `more` (its question's members, written) at its end."""
        return self.written_option(row, (rank_json(rank), *cost_json(cost), b"," + more if more else b""))

    def written_option(self, row: int, values: tuple[bytes, bytes, bytes, bytes, bytes]) -> bytes:
        """The option with its VARYING members' values written, then what follows them (b"" or b"," and
        the question's members)."""
        cut = self._written.get(row)
        if not isinstance(cut, Cut):
            cut = Cut(option_json(0, self._offers[row], _PLACEHOLDER), VARYING)
            self._keep(row, cut)
        return cut.template % values

    def unpriced(self, row: int) -> bytes:
        found = self._written.get(~row)
        if not isinstance(found, bytes):
            found = dumps(unpriced_json(self._offers[row]))
            self._keep(~row, found)
        return found


def written_answer(
    fields: Callable[[Written, Written], dict[str, Any]],
    pieces: OfferPieces,
    ranked: list[tuple[int, JobCost, bytes]],
    unpriced: list[int],
) -> bytes:
    """The answer whose members `fields(options, unpriced)` gives, with the options (row, cost, their
    question's members, written) and unpriced rows written from `pieces`."""
    options = Written(pieces.option(row, rank, cost, more) for rank, (row, cost, more) in enumerate(ranked, start=1))
    return write_object(fields(options, Written(pieces.unpriced(row) for row in unpriced)))
