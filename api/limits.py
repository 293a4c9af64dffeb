"""How much one answer may hold: each limit is a setting (README, settings table), read here and
nowhere else.

The parameter models (api.query) are classes, defined once; the settings belong to the app or the
command that asks. So the settings in effect are held in a context variable while a question is
parsed: the app sets it around each request (`LimitsFromSettings`) and while it writes its OpenAPI
document, the CLI around its parsing (`limits_of`). Without one, the settings' defaults apply. A
`limit` parameter validated here also tells the OpenAPI document its maximum, so both say the same."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import AfterValidator, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from pricedb.settings import Settings

_ACTIVE: ContextVar[Settings | None] = ContextVar("gpuprice_limits", default=None)


@contextmanager
def limits_of(settings: Settings) -> Iterator[None]:
    token = _ACTIVE.set(settings)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def limit(setting: str) -> int:
    """The value of `setting` (e.g. `max_limit`) in effect."""
    settings = _ACTIVE.get()
    return int(getattr(settings, setting) if settings is not None else Settings.model_fields[setting].default)


def limit_parameter(setting: str) -> tuple[Any, ...]:
    """Annotated metadata for a `limit` parameter: from 1 to the setting's value, in the answer and in
    the OpenAPI document."""

    def within(value: int) -> int:
        most = limit(setting)
        if not 1 <= value <= most:
            raise ValueError(f"must be between 1 and {most}")
        return value

    def document(schema: dict[str, Any]) -> None:
        schema.update(minimum=1, maximum=limit(setting))

    return AfterValidator(within), Field(json_schema_extra=document)


class LimitsFromSettings:
    """ASGI middleware: the app's settings are in effect while each request is parsed."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with limits_of(self.settings):
            await self.app(scope, receive, send)
