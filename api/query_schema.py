"""What the OpenAPI document says each query parameter accepts, so that it tells the truth.

Parameters arrive as text and are parsed by api.parsing, which is more forgiving than a plain JSON
type (comma lists, `60GB`, empty meaning "not given"). Each schema here describes exactly what the
parser accepts: a request valid by the schema is answered, one invalid by it is refused with a 422
(tests/fault_matrix/test_api.py runs schemathesis against the app to hold both directions). Choices
are listed in lower case; the parser also takes other cases, as the descriptions say. Around list
items only spaces and tabs are trimmed (api.parsing.BLANKS), which the patterns spell `[ \t]`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic import WithJsonSchema

EMPTY: dict[str, Any] = {"type": "string", "maxLength": 0}  # an empty value counts as not given
YEARS = "(19[7-9][0-9]|2[0-9]{3})"  # 1970 … 2999: api.parsing.EARLIEST_DAY … LATEST_DAY


def schema(value: dict[str, Any], description: str | None = None) -> WithJsonSchema:
    return WithJsonSchema({**value, "description": description} if description else value)


def _alternatives(choices: Iterable[str]) -> str:
    return "(" + "|".join(re.escape(c.lower()) for c in choices) + ")"


def choice_list(choices: Iterable[str], what: str, empty: str = "empty for all") -> WithJsonSchema:
    """A comma list of `choices` (any case, spaces and empty items ignored); `empty` says what none means."""
    choices = list(choices)
    item = rf"[ \t]*{_alternatives(choices)}?[ \t]*"
    return schema(
        {"type": "string", "pattern": f"^{item}(,{item})*$"},
        f"comma list of {what}, any case: {', '.join(choices)}; {empty}",
    )


def one_choice(choices: Iterable[str], default: str, what: str) -> WithJsonSchema:
    choices = list(choices)
    return schema(
        {"type": "string", "pattern": rf"^[ \t]*{_alternatives(choices)}?[ \t]*$", "default": default},
        f"{what}, any case: {', '.join(choices)} (empty: {default})",
    )


def region_list(item_pattern: str) -> WithJsonSchema:
    item = rf"[ \t]*({item_pattern})?[ \t]*"
    return schema(
        {"type": "string", "pattern": f"^{item}(,{item})*$"},
        "comma list of region names (letters, digits, space, - _ . : ; any case); empty for all",
    )


def number(minimum: float, maximum: float, default: float, description: str) -> WithJsonSchema:
    return schema({"type": "number", "exclusiveMinimum": minimum, "maximum": maximum, "default": default}, description)


FLAG = schema(
    {"anyOf": [{"type": "boolean"}, EMPTY]}, "true or false (also 1/0, yes/no, on/off; any case); empty: false"
)


def integer_or_empty(minimum: int | None, maximum: int | None, description: str | None = None) -> WithJsonSchema:
    bounds = {k: v for k, v in (("minimum", minimum), ("maximum", maximum)) if v is not None}
    return schema({"anyOf": [{"type": "integer", **bounds}, EMPTY]}, description)


def enum_or_empty(choices: Iterable[str], description: str | None = None) -> WithJsonSchema:
    return schema({"anyOf": [{"type": "string", "enum": [c.lower() for c in choices]}, EMPTY]}, description)


DAY = {"type": "string", "format": "date", "pattern": f"^{YEARS}-[0-9]{{2}}-[0-9]{{2}}$"}
MOMENT = {"type": "string", "format": "date-time", "pattern": f"^{YEARS}-"}


def day(description: str) -> WithJsonSchema:
    return schema({"anyOf": [DAY, EMPTY]}, description)


def moment(description: str) -> WithJsonSchema:
    return schema({"anyOf": [DAY, MOMENT, EMPTY]}, description)
