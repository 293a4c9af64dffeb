"""The common `/cheapest` question read without the parameter model's validation machinery.

Validating `CheapestParams` costs more than answering a `mem` question over the columnar offers
(api.cheapest_fast), and most questions are plain: `mem`, `hours`, filters, flags, `limit`. Those
are parsed here by the very functions the model's validators call (api.parsing and the model's
own list parsers), into the `CheapestParams` the model would make (`model_construct`: every value
already parsed, the model's checks across parameters have nothing to refuse in such a question).
A plain question by model and workload is read so too: the estimator's inputs are texts the model
keeps as given, and the estimate is made as the model makes it (`_run_estimator`); one the estimator
refuses, or whose `single_gpu` contradicts its `gpus`, is left to the model.
Anything else — another parameter, an empty or unusual value, a value a parser refuses — gives
None, and the model reads the question as usual, with its 422 naming the parameter.
tests/api/test_query_fast.py holds both readings equal on many random query strings.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from pydantic import ValidationError

from api.byte_cache import ByteLRU
from api.estimator.estimate import ESTIMATE_BYTES
from api.limits import limits_of
from api.parsing import parse_bool, parse_hours, parse_mem_gb, parse_pricings, parse_regions
from api.query import ESTIMATOR_FIELDS, CheapestParams, parse_gpus, parse_providers
from pricedb.settings import Settings

_DIGITS = re.compile(r"[0-9]{1,9}")


def _flag(text: str) -> bool:
    return parse_bool(text, default=False)


def _total(text: str) -> str:
    if text != "total":
        raise ValueError("another ranking: the model reads it")
    return text


# The offer filters' lists, as every question model keeps them (api.history_query_fast reads them too).
OFFER_LISTS: dict[str, Callable[[str], Any]] = {
    "pricing": lambda text: tuple(parse_pricings(text)),
    "provider": lambda text: tuple(parse_providers(text)),
    "region": lambda text: tuple(parse_regions(text)),
}

PLAIN: dict[str, Callable[[str], Any]] = {
    "mem": parse_mem_gb,
    "hours": parse_hours,
    "gpu": lambda text: tuple(parse_gpus(text)),
    **OFFER_LISTS,
    "include_unavailable": _flag,
    "include_stale": _flag,
    "single_gpu": _flag,
    "interruptible": _flag,
    "rank_by": _total,
}


# Every other field's default, given to `model_construct` (which otherwise inspects each default
# factory's signature on every call).
DEFAULTS = {name: field.get_default(call_default_factory=True) for name, field in CheapestParams.model_fields.items()}


def query_pairs(query_string: bytes) -> dict[str, str]:
    """The parameters given, the last one of each, as `parse_qsl(…, keep_blank_values=True)` reads
    them (as Starlette does); split without it when nothing in them is quoted (most questions)."""
    text = query_string.decode("latin-1")
    if "%" in text or "+" in text:
        return dict(parse_qsl(text, keep_blank_values=True))
    return dict(part.partition("=")[::2] for part in text.split("&") if part)


def plain_params(query_string: bytes, settings: Settings) -> CheapestParams | None:
    """The `CheapestParams` of a plain `mem` question, or None when the model must read it."""
    return plain_given(query_pairs(query_string), settings)


def plain_given(given: dict[str, str], settings: Settings) -> CheapestParams | None:
    """`plain_params` of the parameters given (the last one of each)."""
    by_model = "mem" not in given
    values: dict[str, Any] = {}
    try:
        for name, text in given.items():
            if name == "limit":
                if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= settings.max_limit:
                    return None
                values[name] = int(text)
                continue
            parse = _as_given if by_model and name in ESTIMATOR_FIELDS else PLAIN.get(name)
            if parse is None or not text:
                return None
            values[name] = parse(text)
    except ValueError:
        return None
    if by_model and not values.keys() & ESTIMATOR_FIELDS:
        return None  # neither mem nor the job: the model says what is missing
    params = CheapestParams.model_construct(set(values), **{**DEFAULTS, **values})
    if by_model:
        try:
            estimate = params._run_estimator(params.gpu)
        except ValidationError:
            return None
        if params.single_gpu and estimate.gpus > 1:
            return None
    return params


def _as_given(text: str) -> str:
    """An estimator input: a text the model keeps as it is (the estimator reads it)."""
    return text


# What a question's parameters hold (pydantic models, tracemalloc: tests/api/test_query_fast.py), with a
# margin: by model ~1.9 KB beside their estimate, which they keep alive too (the estimator's memo may let
# it go: ESTIMATE_BYTES); by `mem` 1.5-2.1 KB (more filters, more), beside their answer without hours.
PARAMS_BYTES = 2560
MEM_PARAMS_BYTES = 2560
KEY = "reused"  # under this in `CheapestParams.shared`: the question's key in `ReusedQuestions`


class Kept:
    """A question's parameters, charged as they hold: their own models and their judge's memo."""

    def __init__(self, params: CheapestParams) -> None:
        self.params = params

    @property
    def cache_size(self) -> int:
        held = MEM_PARAMS_BYTES if self.params.estimate is None else PARAMS_BYTES + ESTIMATE_BYTES
        return held + sum(getattr(value, "cache_size", 0) for value in self.params.shared.values())


class ReusedQuestions:
    """Questions asked before, without their hours: their `CheapestParams` (validated, with the
    estimate) and what answers worked out from them (the judge's memo), bounded in bytes
    (GPUPRICE_QUESTION_MEMO_MB), least recently asked first out."""

    def __init__(self, max_bytes: int) -> None:
        self._kept = ByteLRU(max_bytes)
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        with self._lock:
            return self._kept.bytes

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)

    def params(self, query_string: bytes, settings: Settings) -> CheapestParams | None:
        """The `CheapestParams` of a question asked before with other `hours` (or none), copied with this
        question's hours: validating a question by model and workload runs the estimator, and its copies
        share what the answers work out from it (`CheapestParams.shared`: the judge's memo; by `mem`,
        the answer without its hours, api.cheapest_hours). None for a question about an amount of work
        (hours are refused there), a refused one, or hours the parser refuses: the model then reads it
        as usual."""
        found = self.kept(query_string, settings)
        if found is None:
            return None
        params, hours = found
        return params if hours is None else params.model_copy(update={"hours": hours})

    def kept(self, query_string: bytes, settings: Settings) -> tuple[CheapestParams, float | None] | None:
        """`params` before the copy: the question's parameters as kept (with the hours first asked: do
        not answer from them as they are) and the hours asked now (None: not given)."""
        given = query_pairs(query_string)
        hours_text = given.pop("hours", None)
        try:
            hours = None if hours_text is None else parse_hours(hours_text)
        except ValueError:
            return None
        key = (settings.max_limit, *sorted(given.items()))
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None:
            return kept.params, hours
        try:
            with limits_of(settings):
                found = plain_given(given, settings) or CheapestParams.model_validate(given)
        except ValidationError:
            return None
        if found.work is not None:
            return None
        found.shared[KEY] = key
        with self._lock:
            self._kept.put(key, Kept(found))
        return found, hours

    def charge(self, params: CheapestParams) -> None:
        """Charge `params`' question again after an answer (its memo may have grown)."""
        key = params.shared.get(KEY)
        if key is not None:
            with self._lock:
                self._kept.refit(key)
