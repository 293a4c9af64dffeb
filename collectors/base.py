"""The contract every collector keeps.

A collector is a class with a `name` (the provider slug), the `source_urls` it reads, the
`pricings` it covers, and one or more `scopes` (groups of pricings fetched on their own schedule,
e.g. AWS list prices daily and spot hourly). It has two jobs, kept apart so parsing can be tested
on recorded bodies alone:

- `fetch(http, scope)` does HTTP only and returns the raw bodies it read (`Fetched`);
- `parse(fetched)` is a pure function from those bodies to `Quote`s, raising `ParseError` when the
  source's shape is not what it knows. Every quote is made by `Collector.quote`, which fills in what
  all of a provider's quotes share and names the source record when a value is refused.

The runner (collectors.runner) wraps both with sanity checks, storage and error recording.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import ValidationError

from collectors.errors import InvalidQuote, ParseError
from pricedb.models import InstanceZone, Pricing, Quote
from pricedb.settings import Settings

if TYPE_CHECKING:
    from collectors.http import Http


@dataclass(frozen=True)
class RawResponse:
    """One body as read from a source. Large bodies are streamed to `path` instead of `body`."""

    url: str  # the URL as the provider knows it (before any base-URL rewriting)
    fetched_at: datetime
    status: int = 200
    content_type: str | None = None
    body: bytes = b""
    path: Path | None = None
    label: str = ""  # what the collector asked for: a region, a page number, "spot:us-east-1"

    def text(self) -> str:
        if self.path is not None:
            return self.path.read_text(encoding="utf-8")
        return self.body.decode("utf-8")

    def json(self) -> Any:
        try:
            return json.loads(self.text())
        except ValueError as exc:
            raise ParseError(f"{self.url}: body is not JSON ({exc})") from exc

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object; ParseError saying what it is instead."""
        body = self.json()
        if not isinstance(body, dict):
            raise ParseError(f"{self.url}: expected a JSON object, got {type(body).__name__}")
        return body

    def json_list(self, key: str, source: str) -> list[Mapping[str, Any]]:
        """The list of objects under `key` in a JSON object body; ParseError saying what was found."""
        body = self.json()
        if not isinstance(body, dict) or key not in body:
            found = ", ".join(map(str, body)) if isinstance(body, dict) else type(body).__name__
            raise ParseError(f"{self.url}: no {key!r} in the response (found: {found}); has the {source} changed?")
        items = body[key]
        if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
            raise ParseError(f"{self.url}: {key!r} is not a list of objects")
        return items

    def iter_lines(self) -> Iterator[bytes]:
        if self.path is not None:
            with self.path.open("rb") as handle:
                yield from handle
        else:
            yield from self.body.splitlines(keepends=True)


@dataclass
class Fetched:
    """What `fetch` read, plus what it deliberately did not cover (and why)."""

    responses: list[RawResponse]
    not_covered: dict[Pricing, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Where the instance types are sold, per region surveyed (a region with no entry was not surveyed).
    zones: dict[str, list[InstanceZone]] = field(default_factory=dict)

    def remove_files(self) -> None:
        """Delete the bodies streamed to disk (once parsed, or when the fetch fails half-way)."""
        for raw in self.responses:
            if raw.path is not None:
                raw.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Scope:
    """A group of pricings fetched together on one schedule."""

    name: str
    pricings: frozenset[Pricing]
    default_interval_minutes: int


class QuoteMaker(Protocol):
    """`Collector.quote` as handed to a provider's parsing helpers that build quotes outside the class."""

    def __call__(self, raw: RawResponse, row: str, /, **fields: Any) -> Quote: ...


class Collector(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    source_urls: ClassVar[tuple[str, ...]]
    pricings: ClassVar[frozenset[Pricing]]
    scopes: ClassVar[tuple[Scope, ...]]
    # The billing rule, recorded with every quote: per-second, per-minute or per-hour rounding.
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0
    # A collector that reads a local file instead of URLs (the manual quotes sheet) names the
    # setting that points at it here; its `source_urls` may then be empty.
    local_source: ClassVar[str | None] = None
    # The time one run may take, fetch and parse together (GPUPRICE_<PROVIDER>_DEADLINE_S overrides):
    # minutes for a JSON API; the sources with many pages or huge files set more.
    deadline_s: ClassVar[float] = 300.0

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def scope(self, name: str | None = None) -> Scope:
        if name is None:
            return self.scopes[0] if len(self.scopes) == 1 else self.full_scope()
        for scope in self.scopes:
            if scope.name == name:
                return scope
        raise KeyError(f"{self.name} has no scope {name!r}")

    def full_scope(self) -> Scope:
        return Scope("all", self.pricings, min(s.default_interval_minutes for s in self.scopes))

    @abstractmethod
    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        """Read the source over HTTP (through `http`, which retries and rewrites base URLs)."""

    @abstractmethod
    def parse(self, fetched: Fetched) -> list[Quote]:
        """Turn the bodies into quotes. Pure: no I/O beyond reading `fetched`."""

    @classmethod
    def quote(cls, raw: RawResponse, row: str, **fields: Any) -> Quote:
        """A quote of this provider, read from `raw`. Filled in unless `fields` say otherwise:
        `provider` (the collector's name), the billing rule (`billing_increment_s`,
        `billing_minimum_s`), `source_url` (the URL `raw` was read from) and `observed_at` (when it
        was read). Values the quote model refuses raise `InvalidQuote` naming `row`, the source
        record they came from ("p4d.24xlarge us-east-1 spot"), and each refused field with why."""
        values: dict[str, Any] = {
            "provider": cls.name,
            "billing_increment_s": cls.billing_increment_s,
            "billing_minimum_s": cls.billing_minimum_s,
            "source_url": raw.url,
            "observed_at": raw.fetched_at,
            **fields,
        }
        try:
            return Quote(**values)
        except ValidationError as exc:
            raise InvalidQuote(raw.url, row, _refusals(exc)) from exc

    def parse_report(self, fetched: Fetched) -> tuple[list[Quote], list[dict[str, str]]]:
        """The quotes, and the records the source holds but `parse` refused, each as
        `{"offer": where, "reason": why}` (the runner stores them with the run's rejections).
        Sources whose records are typed by hand (the manual sheet) refuse bad rows and keep the
        rest; every other source is all or nothing, so by default nothing is refused."""
        return self.parse(fetched), []


def unknown_gpus(counts: Mapping[str, int]) -> list[dict[str, str]]:
    """`parse_report`'s refused records for the GPUs a source lists that the collector cannot name
    (a card or family its tables lack): each `counts` key is "name: why", its value how many
    records said it. Nothing is guessed; the runner writes these into the run's notes."""
    records = []
    for said, count in sorted(counts.items()):
        name, _, why = said.partition(": ")
        records.append({"offer": name, "reason": f"unknown GPU, not collected: {why or said} ({count} items)"})
    return records


def _refusals(exc: ValidationError) -> str:
    """ "gpu_count: Input should be greater than or equal to 1; …" — each refused field and why."""
    return "; ".join(
        f"{'.'.join(map(str, error['loc']))}: {error['msg']}" if error["loc"] else error["msg"]
        for error in exc.errors()
    )
