"""A named offer's `/offers/history` question read without the parameter model's validation machinery.

Validating `HistoryParams` costs ~0.25 ms, a sixth of what answering one offer's history from its
compacted frame costs (api.history_frames), and the question is nearly always plain: `provider`,
`region`, `sku`, `pricing`, `since`, `until`. Those are parsed here by the very functions the
model's validators call, into the `HistoryParams` the model would make (`model_construct`), as
api.query_fast does for `/cheapest`. Anything else — another parameter, an empty value, a value a
parser refuses, a window the model refuses — gives None, and the model reads the question as usual,
with its 422 naming the parameter. tests/api/test_history_query_fast.py holds both readings equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api.parsing import parse_moment, split_list
from api.query import HistoryParams
from api.query_fast import OFFER_LISTS, query_pairs


def _until(text: str) -> Any:
    return parse_moment(text, end_of_day=True)


PLAIN: dict[str, Callable[[str], Any]] = {
    **OFFER_LISTS,
    "sku": lambda text: tuple(split_list(text)),
    "since": parse_moment,
    "until": _until,
}

# Every other field's default, given to `model_construct` (which otherwise inspects each default
# factory's signature on every call).
DEFAULTS = {name: field.get_default(call_default_factory=True) for name, field in HistoryParams.model_fields.items()}


def plain_history_params(query_string: bytes) -> HistoryParams | None:
    """The `HistoryParams` of a plain question, or None when the model must read it."""
    values: dict[str, Any] = {}
    try:
        for name, text in query_pairs(query_string).items():
            parse = PLAIN.get(name)
            if parse is None or not text:
                return None
            values[name] = parse(text)
    except ValueError:
        return None
    since, until = values.get("since"), values.get("until")
    if since is not None and until is not None and since >= until:
        return None  # the model's 422
    return HistoryParams.model_construct(set(values), **{**DEFAULTS, **values})
