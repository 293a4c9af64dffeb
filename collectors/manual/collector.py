"""`ManualCollector`: the sheet read as a local file (or the recorded one offline) and its rows
checked one by one (collectors.manual.sheet); bad rows are refused, the good ones load.

Source: a local CSV file (`GPUPRICE_MANUAL_SHEET`), each row naming where its price comes from in
`source_url` (https://…, mailto:…; the package docstring has the details)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import FetchError, MissingCredentials, ParseError
from collectors.http import Http
from collectors.manual.sheet import COLUMNS, read_sheet
from collectors.replay import Replay
from pricedb import clock
from pricedb.models import Pricing, Quote

SETTING = "GPUPRICE_MANUAL_SHEET"


class ManualCollector(Collector):
    name: ClassVar[str] = "manual"
    title: ClassVar[str] = "Manual quotes sheet"
    source_urls: ClassVar[tuple[str, ...]] = ()  # each row names its own source_url
    local_source: ClassVar[str | None] = SETTING
    pricings: ClassVar[frozenset[Pricing]] = frozenset(Pricing)
    # Reading a local file is cheap: every hour, so an edited sheet shows within the hour.
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", frozenset(Pricing), 60),)

    def sheet_paths(self) -> list[Path]:
        if self.settings.offline:
            replay = Replay.load(self.settings.fixtures_dir, self.name)
            return [route.file for route in replay.routes]
        path = self.settings.manual_sheet
        if not path.is_file():
            raise MissingCredentials(
                f"no manual quotes sheet at {path.resolve()}: set {SETTING} to a CSV file with the columns "
                f"{', '.join(COLUMNS)} (see README, 'Manual quotes', and docs/manual_quotes.example.csv)"
            )
        return [path]

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        responses = []
        for path in self.sheet_paths():
            try:
                body = path.read_bytes()
            except OSError as exc:
                raise FetchError(f"cannot read the manual quotes sheet {path}: {exc}") from exc
            responses.append(
                RawResponse(
                    url=path.resolve().as_uri(),
                    fetched_at=clock.now(),
                    content_type="text/csv",
                    body=body,
                    label=str(path),
                )
            )
        return Fetched(responses)

    def parse(self, fetched: Fetched) -> list[Quote]:
        return self.parse_report(fetched)[0]

    def parse_report(self, fetched: Fetched) -> tuple[list[Quote], list[dict[str, str]]]:
        quotes: list[Quote] = []
        refused: list[dict[str, str]] = []
        for raw in fetched.responses:
            result = read_sheet(raw, self.quote)
            if not result.quotes:
                reasons = "; ".join(f"line {r['offer'].rsplit(':', 1)[1]}: {r['reason']}" for r in result.refused[:10])
                more = f" (and {len(result.refused) - 10} more)" if len(result.refused) > 10 else ""
                detail = f": {reasons}{more}" if reasons else ""
                raise ParseError(f"{raw.label}: no row could be loaded ({result.rows} data rows){detail}")
            quotes.extend(result.quotes)
            refused.extend(result.refused)
        return quotes, refused
