"""`E2eCollector`: the public pricing page, its A100 plan rows (collectors.e2e.page) as one quote
per plan and term.

Source: https://www.e2enetworks.com/pricing (public HTML; the package docstring has the details)."""

from __future__ import annotations

from typing import ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.e2e.page import TERM_DAYS, PlanRow, Price, Term, gpu_count_of, gpu_memory_of, gpu_tables, plan_rows
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.card_names import UnknownGpu, identify
from pricedb.models import Pricing, Quote, Unit

PRICING_URL = "https://www.e2enetworks.com/pricing"
REGION = "india"
GST_NOTE = "price excludes 18% GST, which E2E charges on top"
PLACEHOLDER_NOTE = "fixture price (placeholder in a reconstructed page, not a published E2E figure)"
_PRICING_OF_TERM = {Term.HOURLY: Pricing.ON_DEMAND, Term.DAYS_30: Pricing.MONTHLY, Term.DAYS_365: Pricing.RESERVED_1Y}


class E2eCollector(Collector):
    name: ClassVar[str] = "e2e"
    title: ClassVar[str] = "E2E Networks"
    source_urls: ClassVar[tuple[str, ...]] = (PRICING_URL,)
    pricings: ClassVar[frozenset[Pricing]] = frozenset(_PRICING_OF_TERM.values())
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 24 * 60),)
    billing_increment_s: ClassVar[int] = 60  # per-minute billing of hourly plans
    billing_minimum_s: ClassVar[int] = 0

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        return Fetched([await http.get(PRICING_URL, label="pricing page")])

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        for raw in fetched.responses:
            quotes.extend(self._parse_page(raw))
        return quotes

    def _parse_page(self, raw: RawResponse) -> list[Quote]:
        tables, seen = gpu_tables(raw.text())
        if not tables:
            shown = "; ".join(" | ".join(h) for h in seen[:5]) or "no <table> at all"
            raise ParseError(
                f"{raw.url}: no GPU price table (looked for a <table> whose header names a plan, a GPU and an "
                f"hourly or 30/90/365-day price column; tables seen: {shown}); has the page changed?"
            )
        rows = [row for columns, table in tables for row in plan_rows(columns, table)]
        a100 = [row for row in rows if "a100" in row.gpu_text.lower()]
        if not a100:
            gpus = ", ".join(sorted({row.gpu_text for row in rows})) or "none"
            raise ParseError(
                f"{raw.url}: no A100 row in the GPU price table (looked for 'A100' in the GPU column of "
                f"{len(rows)} rows; GPUs listed: {gpus}); has the page changed?"
            )
        quotes: list[Quote] = []
        seen_keys: set[tuple[str, Pricing]] = set()
        for row in a100:
            for quote in self._row_quotes(row, raw):
                if (quote.sku, quote.pricing) not in seen_keys:  # a plan shown in two tables: the first wins
                    seen_keys.add((quote.sku, quote.pricing))
                    quotes.append(quote)
        if not quotes:
            raise ParseError(f"{raw.url}: {len(a100)} A100 rows found but none has a price that could be read")
        return quotes

    def _row_quotes(self, row: PlanRow, raw: RawResponse) -> list[Quote]:
        count = gpu_count_of(row.gpu_text)
        memory = gpu_memory_of(row.gpu_text) or gpu_memory_of(row.gpu_memory_text)
        if count is None or memory is None:
            missing = "GPU count" if count is None else "GPU memory"
            raise ParseError(f"{raw.url}: plan {row.sku!r}: cannot read the {missing} from {row.gpu_text!r}")
        try:
            spec = identify(row.gpu_text, memory)
        except UnknownGpu as exc:
            raise ParseError(f"{raw.url}: plan {row.sku!r}: {exc}") from exc
        quotes = []
        for term, pricing in _PRICING_OF_TERM.items():
            price = row.prices.get(term)
            if price is None:
                continue
            notes = self._notes(row, term, price)
            unit, term_hours = self._unit(term, price)
            quotes.append(
                self.quote(
                    raw,
                    f"plan {row.sku!r} {pricing.value}",
                    region=REGION,
                    sku=row.sku,
                    **spec.quote_fields(),
                    gpu_count=count,
                    pricing=pricing,
                    price=price.amount,
                    currency=price.currency,
                    unit=unit,
                    term_hours=term_hours,
                    tax_included=False,
                    notes="; ".join(notes),
                    **row.shape,
                )
            )
        return quotes

    @staticmethod
    def _unit(term: Term, price: Price) -> tuple[Unit, float | None]:
        if price.per == "hour":
            return Unit.HOUR, None
        if price.per == "month":
            return Unit.MONTH, None
        return Unit.TERM, TERM_DAYS[term] * 24.0

    @staticmethod
    def _notes(row: PlanRow, term: Term, price: Price) -> list[str]:
        notes = [GST_NOTE]
        if term is Term.HOURLY:
            notes.append("billed per minute")
        else:
            days = TERM_DAYS[term]
            whole = " for the whole term" if price.per == "term" else ""
            notes.append(f"{days}-day committed plan, charged upfront{whole} ({price.text})")
        quarter = row.prices.get(Term.DAYS_90)
        carrier = next((t for t in (Term.DAYS_30, Term.DAYS_365, Term.HOURLY) if t in row.prices), None)
        if quarter is not None and term is carrier:
            notes.append(
                f"a 90-day committed plan is also published ({quarter.text}), not collected: "
                "the contract has no 90-day pricing"
            )
        if row.host:
            notes.append(row.host)
        if price.placeholder:
            notes.append(PLACEHOLDER_NOTE)
        return notes
