"""Parsing and validating what users type (`mem=60GB`, `pricing=spot,on_demand`, …).

Each parser raises ValueError with a message that says what was wrong and what would be right;
the API turns these into 422 answers naming the parameter, the CLI into an error line. The
parameter models built on these are in api.query."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta

from pricedb.models import Pricing

MAX_HOURS = 87_600.0  # ten years of wall-clock time
MAX_MEM_GB = 100_000.0
MAX_TOKENS = 1e16  # ten quadrillion: hundreds of times the largest pretraining run, far beyond any rental
MAX_EPOCHS = 1000.0
# Days a question may name: from the Unix epoch (long before any GPU was rented by the hour) to the
# end of 2999 — far enough to mean "no upper bound", near enough that a day after it still exists.
EARLIEST_DAY = date(1970, 1, 1)
LATEST_DAY = date(2999, 12, 31)

_MEM = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>gib|gb|g|tib|tb|t)?\s*$", re.IGNORECASE)
_COUNT = re.compile(r"^\s*(?P<number>(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)\s*(?P<unit>[kKmMbBtT])?\s*$")
_COUNT_UNITS = {None: 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
REGION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\- ]{0,63}$")
BLANKS = " \t"  # what is trimmed around list items and names (the OpenAPI patterns say the same)
_TRUE = {"1", "true", "yes", "on", "t", "y"}
_FALSE = {"0", "false", "no", "off", "f", "n"}


def parse_mem_gb(value: str | float | int) -> float:
    """`60GB`, `60 GB`, `60gb`, `60`, `60GiB` → 60.0 (GB here means the unit cards are sold in:
    an "80GB" A100 has 80 GiB, so GB and GiB are the same number). `1TB` → 1024."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        match = _MEM.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a memory size; write it like 60GB, 60 GiB or 60")
        number = float(match["number"])
        if (match["unit"] or "").lower().startswith("t"):
            number *= 1024
    if not math.isfinite(number) or number <= 0:
        raise ValueError("must be a memory size greater than 0 GB")
    if number > MAX_MEM_GB:
        raise ValueError(f"{number:g} GB is more than any rentable machine has (at most {MAX_MEM_GB:g})")
    return number


def _positive(value: str | float | int, what: str, maximum: float, at_most: str) -> float:
    """A number of `what` greater than 0 and at most `maximum` (said as `at_most`)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number of {what}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"must be a number of {what} greater than 0")
    if number > maximum:
        raise ValueError(f"must be at most {at_most}")
    return number


def parse_hours(value: str | float | int) -> float:
    return _positive(value, "hours", MAX_HOURS, f"{MAX_HOURS:g} hours (ten years)")


def parse_epochs(value: str | float | int) -> float:
    """Passes over the dataset (training)."""
    return _positive(value, "epochs", MAX_EPOCHS, f"{MAX_EPOCHS:g} epochs")


def parse_tokens(value: str | float | int) -> int:
    """`2e9`, `2000000000`, `2B`, `500M`, `1.5b` → a number of tokens (k, M, B, T: thousand, million,
    billion, trillion; any case)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        match = _COUNT.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a number of tokens; write it like 2e9, 2000000000 or 2B")
        number = float(match["number"]) * _COUNT_UNITS[(match["unit"] or "").lower() or None]
    if not math.isfinite(number) or number < 1:
        raise ValueError("must be at least 1 token")
    if number > MAX_TOKENS:
        raise ValueError(f"{number:g} tokens is more than any job rents GPUs for (at most {MAX_TOKENS:g})")
    return round(number)


def split_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    parts = value.split(",") if isinstance(value, str) else [p for item in value for p in str(item).split(",")]
    return [p.strip(BLANKS) for p in parts if p.strip(BLANKS)]


def parse_choice(value: str, allowed: Iterable[str], what: str) -> str:
    """One of `allowed`, in any case."""
    allowed = list(allowed)
    match = {a.lower(): a for a in allowed}.get(str(value).strip(BLANKS).lower())
    if match is None:
        raise ValueError(f"unknown {what} {value!r}; choose from {', '.join(allowed)}")
    return match


class Choices:
    """A fixed set of allowed values with their lower-case lookup, made once for a parser that runs on
    every request (a table of ~100 GPU models lowered per call cost more than the rest of the parsing)."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.allowed = list(allowed)
        self.lowered = {a.lower(): a for a in self.allowed}


def parse_choices(value: str | Iterable[str] | None, allowed: Iterable[str] | Choices, what: str) -> list[str]:
    choices = allowed if isinstance(allowed, Choices) else Choices(allowed)
    chosen: list[str] = []
    for item in split_list(value):
        match = choices.lowered.get(item.lower())
        if match is None:
            raise ValueError(f"unknown {what} {item!r}; choose from {', '.join(choices.allowed)}")
        if match not in chosen:
            chosen.append(match)
    return chosen


def parse_pricings(value: str | Iterable[str] | None) -> list[Pricing]:
    return [Pricing(p) for p in parse_choices(value, PRICINGS, "pricing")]


PRICINGS = Choices(p.value for p in Pricing)


def parse_regions(value: str | Iterable[str] | None) -> list[str]:
    regions = split_list(value)
    for region in regions:
        if not REGION.match(region):
            raise ValueError(f"{region!r} is not a region name (letters, digits, space, - _ . : only)")
    return regions


def parse_bool(value: str | bool | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip(BLANKS).lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{value!r} is not true or false")


def _in_range(day: date, value: str) -> date:
    if not EARLIEST_DAY <= day <= LATEST_DAY:
        raise ValueError(f"{value!r} is out of range: give a day from {EARLIEST_DAY} to {LATEST_DAY}")
    return day


def parse_day(value: str) -> date:
    """`2026-11-28` → that date (ISO 8601 calendar date, nothing else), 1970-01-01 … 2999-12-31."""
    text = str(value)
    try:
        if len(text) != 10:
            raise ValueError
        day = date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a date; write it as YYYY-MM-DD (e.g. 2026-11-28)") from None
    return _in_range(day, value)


def parse_moment(value: str, end_of_day: bool = False) -> datetime:
    """An ISO date or date-time → naive UTC. A bare date means the start of that UTC day, or with
    `end_of_day` its end (so `until=2026-11-28` includes all of the 28th). A time without an offset
    is UTC; `Z` and `+08:00` are honoured."""
    text = str(value)
    if len(text) == 10:
        day = parse_day(text)
        return datetime.combine(day + timedelta(days=1) if end_of_day else day, time())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{value!r} is not a date or date-time; write YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][Z|±HH:MM]"
        ) from None
    _in_range(moment.date(), value)
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment
