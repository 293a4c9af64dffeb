"""A page's query string read into the API's own parameter models (api.query), so a page asks
exactly what its JSON route would be asked, and a mistake is named the same way.

A form sends a checkbox group as one value per box (`provider=aws&provider=azure`); the API takes
a comma list (`provider=aws,azure`): a list parameter's values are joined. A checkbox sends nothing
when unchecked, so each one is preceded by a hidden `false` and the last value given counts."""

from __future__ import annotations

from typing import Any, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

from api.errors import ApiError, validation_problems
from api.web.html import Page

Params = TypeVar("Params", bound=BaseModel)
Problems = list[dict[str, Any]]


def is_list(model: type[BaseModel], name: str) -> bool:
    """A parameter the API reads as a comma list (its value is a tuple)."""
    field = model.model_fields.get(name)
    return field is not None and get_origin(field.annotation) is tuple


def given(page: Page, model: type[BaseModel], skip: frozenset[str] = frozenset()) -> dict[str, str]:
    """The page's values for the parameters `model` takes (empty ones left out: not given)."""
    values: dict[str, str] = {}
    for name, texts in page.values().items():
        if name not in model.model_fields or name in skip:
            continue
        if is_list(model, name):
            joined = ",".join(t for t in texts if t.strip())
            if joined:
                values[name] = joined
        elif texts[-1].strip():
            values[name] = texts[-1]
    return values


def parse(model: type[Params], values: dict[str, Any]) -> tuple[Params | None, Problems]:
    """The model, or the problems that name each parameter (as the API's 422 does)."""
    try:
        return model.model_validate(values), []
    except ValidationError as exc:
        return None, validation_problems(exc)


def problem_of(exc: ApiError) -> Problems:
    return [{"parameter": exc.parameter, "message": exc.message, "value": exc.value}]
