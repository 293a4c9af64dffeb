"""Each page: its answer (the function its JSON route returns), its view, its template."""

from __future__ import annotations

import json
from datetime import UTC, date, timedelta
from typing import Any

from markupsafe import Markup

from api.answers import providers_answer
from api.digests import digest_answer
from api.query import DigestParams
from api.state import AppState
from api.web import job as job_view
from api.web import market as market_view
from api.web.chart import Point, band_svg, series_svg
from api.web.html import Page, Rendered, render
from api.web.offer import offer_view
from api.web.params import Problems, given, parse
from api.web.table import data_table

Built = tuple[Rendered, int]


def render_page(page: Page, template: str, status: int = 200, **values: Any) -> Built:
    return Rendered.of(render(page, template, **values)), status


def refused(page: Page, problems: Problems, status: int) -> Built:
    """A question the answer refused: the page says which parameter and why (the API's 4xx, in HTML)."""
    return render_page(page, "refused.html", status, problems=problems)


def market_page(state: AppState, page: Page, fast: bool = True) -> Built:
    """The template around the rows, which are joined as bytes (most of them kept from earlier
    views): megabytes the template engine and the encoder need not copy."""
    found = market_view.market(state, page, fast)
    values = market_view.template_values(state, found)
    before, table, after = render(page, "market.html", **values).partition(market_view.ROWS)
    body = b"".join([before.encode(), *found.rows_html(), after.encode()]) if table else before.encode()
    return Rendered.of(body), 422 if found.problems else 200


# What the options table shows in its own columns; every other field of an option is listed under "more".
OPTION_COLUMNS = frozenset(
    {
        "rank", "provider", "region", "sku", "gpu_model", "gpu_memory_gb", "gpu_count", "pricing", "price",
        "currency", "unit", "cny_per_hour", "billed_hours", "total_cny", "cost_basis", "billing_increment_s",
        "billing_minimum_s", "per_gpu_need_gb", "usable_gb", "strategy", "tokens_per_s", "cny_per_mtoken",
        "job_notes", "interruptible", "stale", "held_reason", "availability",
    }
)  # fmt: skip


def job_page(state: AppState, page: Page, parameters: list[dict[str, Any]]) -> Built:
    found = job_view.job(state, page, parameters)
    answer = found.answer or {}
    estimate = answer.get("estimate")
    band = ""
    if estimate:
        marks = sorted(
            {
                (c["usable_gb"], f"{c['gpu_memory_gb']:g} GB")
                for c in answer.get("viability", {}).get("configurations", [])
            }
        )
        band = band_svg(
            estimate["per_gpu_low_gb"],
            estimate["per_gpu_gb"],
            estimate["per_gpu_high_gb"],
            marks,
            f"{page.words('band')}: {estimate['per_gpu_low_gb']}–{estimate['per_gpu_high_gb']} GiB",
        )
    fields = [f for _, group in found.groups for f in group]
    return render_page(
        page,
        "job.html",
        422 if found.problems else 200,
        j=found,
        estimated=bool(estimate),
        throughput=bool(answer.get("throughput")),
        band_svg=Markup(band),
        shown_keys=OPTION_COLUMNS,
        opened={group for group, fields in found.groups if any(f.changed for f in fields)},
        defaults={
            **{f.name: f.default for f in fields if f.default},
            "_lists": [f.name for f in fields if f.control == "checks"],
        },
    )


def offer_page(state: AppState, page: Page) -> Built:
    found = offer_view(state, page)
    charts = {"native_chart": "", "per_gb_chart": ""}
    if found.series is not None:
        points = found.series["points"]
        unit = f"{found.series['currency']}/{page.words.value('unit', found.series['unit'])}"
        native = [Point(p["observed_at"], p["price"]) for p in points]
        per_gb = [Point(p["observed_at"], p["cny_per_gb_hour"]) for p in points if p["cny_per_gb_hour"] is not None]
        charts["native_chart"] = series_svg(native, page.words("chart_native", currency=found.series["currency"],
                                            unit=page.words.value("unit", found.series["unit"])), unit)  # fmt: skip
        charts["per_gb_chart"] = series_svg(per_gb, page.words("chart_per_gb"), "¥/GB·h")
    status = found.status if found.status != 200 else 422 if found.problems else 200
    return render_page(page, "offer.html", status, v=found, **{k: Markup(v) for k, v in charts.items()})


DIGEST_SECTIONS = {
    "changes": ("provider", "region", "sku", "pricing", "gpu_memory_gb", "gpu_count", "currency", "old_price",
                "new_price", "pct", "old_cny_per_gb_hour", "new_cny_per_gb_hour", "cny_per_gb_hour_pct"),
    "new": ("provider", "region", "sku", "pricing", "gpu_model", "gpu_memory_gb", "gpu_count", "price",
            "cny_per_hour", "cny_per_gb_hour", "observed_at"),
    "failed_providers": (),  # every field
    "cheapest": ("gpu_model", "gpu_memory_gb", "pricing", "provider", "region", "sku", "gpu_count", "price",
                 "cny_per_hour", "cny_per_gb_hour", "observed_at"),
}  # fmt: skip
DIGEST_SECTIONS["withdrawn"] = DIGEST_SECTIONS["new"]


def digests_page(state: AppState, page: Page) -> Built:
    params, problems = parse(DigestParams, given(page, DigestParams, skip=frozenset({"format"})))
    if params is None:
        return refused(page, problems, 422)
    body, _ = digest_answer(state, params)
    digest = json.loads(body)
    day = date.fromisoformat(digest["date"])
    today = state.clock().replace(tzinfo=UTC).astimezone(state.settings.digest_zone).date()
    sections = []
    for name in ("changes", "new", "withdrawn", "failed_providers", "cheapest"):
        rows = digest.get(name) or []
        keys = DIGEST_SECTIONS.get(name) or (list(rows[0]) if rows else [])
        shown = [k for k in keys if any(k in row for row in rows)]
        table = data_table(rows, shown, page.words, page.offer_link) if rows else ""
        sections.append((name, len(rows), Markup(table)))

    def day_link(d: date) -> str:
        return page.here(date=d.isoformat())

    return render_page(
        page,
        "digests.html",
        digest=digest,
        sections=sections,
        previous=day_link(day - timedelta(days=1)),
        following=day_link(day + timedelta(days=1)) if day + timedelta(days=1) <= today else None,
        json_href=f"/digest?date={day.isoformat()}",
        md_href=f"/digest?date={day.isoformat()}&format=md",
    )


def status_page(state: AppState, page: Page) -> Built:
    answer = json.loads(providers_answer(state))
    return render_page(page, "status.html", providers=answer["providers"])
