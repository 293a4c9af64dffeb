"""`E2eCollector`: E2E's GPU plans from its MyAccount plan API when its credentials are set
(collectors.e2e.plans_api), else from the public pricing page (collectors.e2e.page); each plan's quotes
made the same way from either (collectors.e2e.plans). The run's notes say which source was read.

Sources: https://api.e2enetworks.com/myaccount/api/v1/images/ and https://www.e2enetworks.com/pricing
(the package docstring has the details)."""

from __future__ import annotations

from typing import ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.e2e.page import TERM_DAYS, PlanRow, Term, gpu_count_of, gpu_memory_of, gpu_tables, plan_rows
from collectors.e2e.plans import PRICING_OF_DAYS, Plan, plan_quotes
from collectors.e2e.plans_api import (
    DEFAULT_LOCATIONS,
    PLANS_LABEL,
    PLANS_URL,
    SETTINGS,
    ApiKeys,
    fetch_plans,
    plan_items,
    read_plan,
)
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.card_names import UnknownGpu, identify
from pricedb.cards import memory_sizes
from pricedb.models import Pricing, Quote

PRICING_URL = "https://www.e2enetworks.com/pricing"
PAGE_REGION = "india"  # the page does not price Delhi NCR and Mumbai apart
PAGE_LABEL = "pricing page"
FIXTURE_NOTE = "fixture price: test data replayed from fixtures/e2e (see its README), not an E2E quote"


class E2eCollector(Collector):
    name: ClassVar[str] = "e2e"
    title: ClassVar[str] = "E2E Networks"
    source_urls: ClassVar[tuple[str, ...]] = (PLANS_URL, PRICING_URL)
    pricings: ClassVar[frozenset[Pricing]] = frozenset({Pricing.ON_DEMAND, *PRICING_OF_DAYS.values()})
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 24 * 60),)
    billing_increment_s: ClassVar[int] = 60  # per-minute billing of hourly plans
    billing_minimum_s: ClassVar[int] = 0

    def api_keys(self) -> ApiKeys | list[str]:
        """The MyAccount API credentials, or the names of the settings that are missing."""
        values = (self.settings.e2e_api_key, self.settings.e2e_auth_token, self.settings.e2e_project_id)
        missing = [name for name, v in zip(SETTINGS, values, strict=True) if v is None or not v.get_secret_value()]
        if missing:
            return missing
        key, token, project = values
        assert key is not None and token is not None and project is not None
        return ApiKeys(key, token, project)

    def locations(self) -> list[str]:
        return self.settings.regions_for(self.name, list(DEFAULT_LOCATIONS))

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        keys = self.api_keys()
        if isinstance(keys, ApiKeys):
            fetched = Fetched([await fetch_plans(http, keys, location) for location in self.locations()])
            fetched.notes.append(f"source: E2E's MyAccount plan API ({', '.join(self.locations())})")
        else:
            fetched = Fetched([await http.get(PRICING_URL, label=PAGE_LABEL)])
            fetched.notes.append(f"source: E2E's public pricing page ({', '.join(keys)} not set for the plan API)")
        fetched.notes += self.left_out(fetched)
        return fetched

    def parse(self, fetched: Fetched) -> list[Quote]:
        return self._read(fetched)[0]

    def left_out(self, fetched: Fetched) -> list[str]:
        """What `parse` leaves out and why, for the run's notes: unknown cards, Windows images, plans
        without a price."""
        return self._read(fetched)[1]

    def _read(self, fetched: Fetched) -> tuple[list[Quote], list[str]]:
        """(quotes, what was left out and why) of every answer, from either source."""
        quotes: list[Quote] = []
        left_out: list[str] = []
        for raw in fetched.responses:
            if raw.label.startswith(PLANS_LABEL):  # raw.url is plans_url(location): no credential in it
                location = raw.label.removeprefix(PLANS_LABEL)
                plans, skipped = self._api_plans(raw, location)
                region = location.lower()
            else:
                plans, skipped = self._page_plans(raw)
                region = PAGE_REGION
            left_out += skipped
            marks = [FIXTURE_NOTE] if self.settings.offline and raw.label.startswith(PLANS_LABEL) else []
            for plan in plans:
                quotes += plan_quotes(self.quote, raw, plan, region, marks)
        return quotes, left_out

    # ----- the plan API -------------------------------------------------------------------------
    @staticmethod
    def _api_plans(raw: RawResponse, location: str) -> tuple[list[Plan], list[str]]:
        plans: dict[str, Plan] = {}
        skipped: list[str] = []
        for number, item in enumerate(plan_items(raw), 1):
            plan = read_plan(item, f"{PLANS_URL} ({location}) plan {number}")
            if isinstance(plan, str):
                skipped.append(f"{plan} ({location})")
            elif plan is not None:
                plans.setdefault(plan.sku, plan)  # the same plan once per OS image: the first is kept
        if not plans:
            raise ParseError(
                f"{PLANS_URL} ({location}): no GPU plan with a price among {len(plan_items(raw))} plans"
                + (f" ({'; '.join(skipped)})" if skipped else "")
            )
        return list(plans.values()), sorted(set(skipped))

    # ----- the public page ----------------------------------------------------------------------
    @staticmethod
    def _page_plans(raw: RawResponse) -> tuple[list[Plan], list[str]]:
        tables, seen = gpu_tables(raw.text())
        if not tables:
            shown = "; ".join(" | ".join(h) for h in seen[:5]) or "no <table> at all"
            raise ParseError(
                f"{raw.url}: no GPU price table (looked for a <table> whose header names a plan, a GPU and an "
                f"hourly or 30/90/365-day price column; tables seen: {shown}); has the page changed?"
            )
        rows = [row for columns, table in tables for row in plan_rows(columns, table)]
        plans: dict[str, Plan] = {}
        skipped: list[str] = []
        for row in rows:
            plan = _row_plan(raw, row)
            if isinstance(plan, str):
                skipped.append(plan)
            elif row.prices:
                plans.setdefault(plan.sku, plan)  # a plan shown in two tables: the first wins
        if not plans:
            raise ParseError(
                f"{raw.url}: no priced GPU plan in the GPU price table ({len(rows)} rows"
                + (f"; {'; '.join(skipped)}" if skipped else "")
                + "); has the page changed?"
            )
        return list(plans.values()), skipped


def _row_plan(raw: RawResponse, row: PlanRow) -> Plan | str:
    """The plan of one page row; a string when its card is not one the card table knows."""
    count = gpu_count_of(row.gpu_text)
    memory = gpu_memory_of(row.gpu_text) or gpu_memory_of(row.gpu_memory_text)
    if count is None or memory is None:
        missing = "GPU count" if count is None else "GPU memory"
        raise ParseError(f"{raw.url}: plan {row.sku!r}: cannot read the {missing} from {row.gpu_text!r}")
    try:
        spec = identify(row.gpu_text, memory)
    except UnknownGpu as exc:
        return f"unknown GPU, not collected: plan {row.sku} ({exc})"
    if spec.memory_gb not in memory_sizes(spec.model):
        return f"unknown GPU, not collected: plan {row.sku} (a {spec.model} with {memory:g} GB is not a card sold)"
    hourly = row.prices.get(Term.HOURLY)
    committed = {TERM_DAYS[term]: price for term, price in row.prices.items() if term is not Term.HOURLY}
    return Plan(row.sku, spec, count, hourly, committed, host=row.host, shape=row.shape)
