"""Tables for people (rich). They show what the JSON answers hold, never more."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _flags(row: dict[str, Any]) -> str:
    flags = []
    if row.get("pricing") == "spot":
        flags.append("interruptible")
    if row.get("stale"):
        flags.append("[yellow]stale[/yellow]")
    if row.get("availability") == "sold_out":
        flags.append("[red]sold out[/red]")
    if row.get("offline"):
        flags.append("offline")
    return ", ".join(flags)


def cheapest_table(payload: dict[str, Any]) -> None:
    query = payload["query"]
    table = Table(
        title=f"Cheapest ways to get {query['mem_gb']:g} GB of {query['gpu']} memory for {query['hours']:g} h",
        caption=f"prices as of {payload['as_of']}; total = billed hours × ¥/h "
        "(monthly: whole months; reserved: whole term)",
    )
    for name, justify in [
        ("#", "right"), ("provider", "left"), ("region", "left"), ("sku", "left"), ("GPUs", "left"),
        ("pricing", "left"), ("price", "right"), ("¥/h", "right"), ("¥/GB·h", "right"),
        ("billed h", "right"), ("total ¥", "right"), ("", "left"),
    ]:  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in payload["options"]:
        table.add_row(
            str(row["rank"]),
            row["provider"],
            row["region"],
            row["sku"],
            f"{row['gpu_count']}×{row['gpu_memory_gb']:g}GB",
            row["pricing"],
            f"{row['price']:,.4g} {row['currency']}/{row['unit']}",
            _num(row["cny_per_hour"]),
            _num(row["cny_per_gb_hour"], 4),
            f"{row['billed_hours']:g}",
            _num(row["total_cny"]),
            _flags(row),
        )
    console.print(table)
    left_out = {k: v for k, v in payload.get("excluded", {}).items() if v}
    if left_out:
        console.print("left out: " + ", ".join(f"{count} {why}" for why, count in left_out.items()))
    for row in payload.get("unpriced", []):
        console.print(f"not ranked: {row['provider']}/{row['region']}/{row['sku']} ({row['pricing']}): {row['reason']}")
    if not payload["options"]:
        console.print("no viable option: try more hours, fewer GB, include_stale, or `gpuprice collect`")


def offers_table(payload: dict[str, Any]) -> None:
    when = f"at the end of {payload['date']} UTC" if payload.get("date") else "current"
    table = Table(title=f"{payload['count']} {when} offers (as of {payload['as_of']})")
    for name in ("provider", "region", "sku", "GPUs", "pricing", "price", "¥/h", "¥/GPU·h", "¥/GB·h", "observed", ""):
        table.add_column(name)
    for row in payload["offers"]:
        table.add_row(
            row["provider"],
            row["region"],
            row["sku"],
            f"{row['gpu_count']}×{row['gpu_memory_gb']:g}GB",
            row["pricing"],
            f"{row['price']:,.4g} {row['currency']}/{row['unit']}",
            _num(row["cny_per_hour"]),
            _num(row["cny_per_gpu_hour"]),
            _num(row["cny_per_gb_hour"], 4),
            row["observed_at"] or "",
            _flags(row),
        )
    console.print(table)


def providers_table(payload: dict[str, Any]) -> None:
    table = Table(title="Providers")
    for name in ("provider", "status", "last run", "last success", "offers", "stale", "error / notes"):
        table.add_column(name)
    for row in payload["providers"]:
        status = row["status"]
        colour = {"ok": "green", "failed": "red", "skipped": "yellow"}.get(status, "white")
        table.add_row(
            row["provider"],
            f"[{colour}]{status}[/{colour}]" + (" (offline)" if row["offline"] else ""),
            row["last_run_at"] or "never",
            row["last_success_at"] or "never",
            str(row["offers"]),
            str(row["stale_offers"]),
            row["error"] or "; ".join(row["notes"]),
        )
    console.print(table)


def collect_table(payload: dict[str, Any]) -> None:
    table = Table(title="Collection summary", caption=f"price sheets written to {payload['exports']}")
    for name in ("provider", "scope", "status", "quotes", "rejected", "seconds", "error / notes"):
        table.add_column(name)
    for row in payload["runs"]:
        colour = {"ok": "green", "failed": "red", "skipped": "yellow"}[row["status"]]
        table.add_row(
            row["provider"],
            row["scope"],
            f"[{colour}]{row['status']}[/{colour}]",
            str(row["quotes"]),
            str(row["rejected"]),
            f"{row['seconds']:.2f}",
            row["error"] or "; ".join(row["notes"]),
        )
    console.print(table)


def history_table(payload: dict[str, Any]) -> None:
    query = payload["query"]
    table = Table(
        title=f"{payload['count']} offers' price history, {query['since']} → {query['until']}",
        caption=f"{payload['points']} observations; `--json` for every point",
    )
    for name in ("provider", "region", "sku", "pricing", "points", "first", "last", "change", "¥/GB·h first → last"):
        table.add_column(name)
    for series in payload["series"]:
        first, last = series["points"][0], series["points"][-1]
        change = (last["price"] - first["price"]) / first["price"] * 100 if first["price"] else None
        table.add_row(
            series["provider"],
            series["region"],
            series["sku"],
            series["pricing"],
            str(len(series["points"])),
            f"{first['price']:,.4g} {series['currency']}/{series['unit']}",
            f"{last['price']:,.4g}",
            "—" if change is None else f"{change:+.2f}%",
            f"{_num(first['cny_per_gb_hour'], 4)} → {_num(last['cny_per_gb_hour'], 4)}",
        )
    console.print(table)
