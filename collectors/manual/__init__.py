"""The manual quotes sheet: prices with no machine-readable source, typed in by hand.

For providers with no public price API or page worth scraping (智星云 / ai-galaxy.cn, AutoDL
packages, CoreWeave contracts), or sales quotes and negotiated prices: a CSV file, one row per
offer, in the contract's vocabulary. Its path is the setting `GPUPRICE_MANUAL_SHEET` (default
`manual_quotes.csv` in the working directory); without the file the run is *skipped*, like a
provider without keys. README, "Manual quotes", documents the columns; `docs/manual_quotes.example.csv`
is an example.

This is a collector like the others: `fetch` reads the file (no HTTP: the sheet is local), `parse` is
pure over its bytes (collectors.manual.sheet), and the quotes pass the same sanity checks and the
same normalization as every provider's, and go stale on the same rules (by the sheet's last good
load). Each row names the page or document its price comes from in `source_url`
(https://www.ai-galaxy.cn/…, a PDF quote, `mailto:sales@…`), and `date_seen` becomes the quote's
`observed_at`, so FX uses the rate of the day the price was seen.

Quirks:
- **One provider, `manual`.** The store replaces a provider's offers, and judges staleness, by the
  run that brought them; every sheet row comes from the `manual` run. So quotes keep `manual` as
  provider and carry their own provider in the sku (`zhixingyun/A100-80G-PCIe`) and the notes
  ("manual quote for zhixingyun, seen 2026-11-20"). A row deleted from the sheet is withdrawn on
  the next load.
- **Bad rows never sink the sheet.** A row that cannot be a quote is refused with file, line and
  reason (stored with the run's rejections), and the good rows load. A sheet with no good row, no
  header, or a missing/unknown column fails the run with the reasons.
- **Offline** (`--offline`), the sheet is the recorded one listed in `fixtures/manual/replay.json`,
  like every provider's recorded answers, whatever `GPUPRICE_MANUAL_SHEET` says.
"""

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

__all__ = ["ManualCollector"]

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
            result = read_sheet(raw, self.name)
            if not result.quotes:
                reasons = "; ".join(f"line {r['offer'].rsplit(':', 1)[1]}: {r['reason']}" for r in result.refused[:10])
                more = f" (and {len(result.refused) - 10} more)" if len(result.refused) > 10 else ""
                detail = f": {reasons}{more}" if reasons else ""
                raise ParseError(f"{raw.label}: no row could be loaded ({result.rows} data rows){detail}")
            quotes.extend(result.quotes)
            refused.extend(result.refused)
        return quotes, refused
