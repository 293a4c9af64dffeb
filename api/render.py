"""Tables for people (rich). They show what the JSON answers hold, never more."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _card_cell(row: dict[str, Any]) -> str:
    """`8×H100 80GB`, or for slices of a GPU `1×A100 MIG 1g.10gb (10GB)`: never a slice shown as a card."""
    partition = row.get("gpu_partition")
    if partition:
        return f"{row['gpu_count']}×{row['gpu_model']} {partition} ({row['gpu_memory_gb']:g}GB)"
    return f"{row['gpu_count']}×{row['gpu_model']} {row['gpu_memory_gb']:g}GB"


def _offer_cells(row: dict[str, Any]) -> list[str]:
    """Which offer, at what native price: the first columns of the option and offer tables."""
    return [
        row["provider"],
        row["region"],
        row["sku"],
        _card_cell(row),
        row["pricing"],
        f"{row['price']:,.4g} {row['currency']}/{row['unit']}",
    ]


def _flags(row: dict[str, Any]) -> str:
    flags = []
    if row.get("pricing") == "spot":
        flags.append("interruptible")
    if row.get("stale"):
        held = " (new quote rejected)" if row.get("held_reason") else ""
        flags.append(f"[yellow]stale{held}[/yellow]")
    if row.get("availability") == "sold_out":
        flags.append("[red]sold out[/red]")
    if row.get("offline"):
        flags.append("offline")
    return ", ".join(flags)


def _cheapest_title(payload: dict[str, Any]) -> str:
    query, estimate = payload["query"], payload.get("estimate")
    cards = query["gpu"] or "any GPU"
    if estimate is None:
        return f"Cheapest ways to get {query['mem_gb']:g} GB of {cards} memory for {query['hours']:g} h"
    what = estimate["model"] or f"a {estimate['params_b']:g}B model"
    amount = f"{query['hours']:g} h" if query["hours"] is not None else f"{query['tokens']:,} tokens"
    return (
        f"Cheapest ways to run {what} ({estimate['workload']}, {estimate['precision']}, context {estimate['context']}, "
        f"batch {estimate['batch']}) on {cards} for {amount}"
    )


def cheapest_table(payload: dict[str, Any]) -> None:
    estimate = payload.get("estimate")
    per_mtoken = bool(payload.get("throughput"))
    table = Table(
        title=_cheapest_title(payload),
        caption=f"prices as of {payload['as_of']}; total = billed hours × ¥/h "
        "(monthly: whole months; reserved: whole term)"
        + ("; need/GPU = high end of the per-GPU band vs the usable part of the card" if estimate else ""),
    )
    columns = [
        ("#", "right"), ("provider", "left"), ("region", "left"), ("sku", "left"), ("GPUs", "left"),
        ("pricing", "left"), ("price", "right"), ("¥/h", "right"), ("¥/GB·h", "right"),
        ("billed h", "right"), ("total ¥", "right"),
    ]  # fmt: skip
    if estimate:
        columns.append(("need/GPU GiB", "right"))
    if per_mtoken:
        columns += [("tok/s", "right"), ("¥/Mtok", "right")]
    job = bool(payload.get("job"))
    if job:
        columns.append(("hours needed", "right"))
    for name, justify in [*columns, ("", "left")]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in payload["options"]:
        cells = [
            str(row["rank"]),
            *_offer_cells(row),
            _num(row["cny_per_hour"]),
            _num(row["cny_per_gb_hour"], 4),
            f"{row['billed_hours']:g}",
            _num(row["total_cny"]),
        ]
        if estimate:
            cells.append(f"{_num(row['per_gpu_need_gb'], 1)}/{row['usable_gb']:g}")
        if per_mtoken:
            cells += [_num(row["tokens_per_s"], 1), _num(row["cny_per_mtoken"])]
        if job:
            cells.append(_num(row["job"]["hours_needed"], 1))
        flags = _flags(row) + (" [cyan]PCIe[/cyan]" if any("PCIe" in n for n in row.get("job_notes", [])) else "")
        table.add_row(*cells, flags.strip())
    console.print(table)
    if estimate:
        _estimate_summary(payload)
    left_out = {k: v for k, v in payload.get("excluded", {}).items() if v}
    if left_out:
        console.print("left out: " + ", ".join(f"{count} {why}" for why, count in left_out.items()))
    for row in [*payload.get("unpriced", []), *payload.get("unranked", [])]:
        console.print(f"not ranked: {row['provider']}/{row['region']}/{row['sku']} ({row['pricing']}): {row['reason']}")
    if not payload["options"]:
        console.print("no viable option: try more hours, fewer GB, include_stale, or `gpuprice collect`")


def _estimate_summary(payload: dict[str, Any]) -> None:
    estimate, viability = payload["estimate"], payload["viability"]
    console.print(
        f"estimate: {estimate['per_gpu_gb']:g} GiB on {estimate['gpus']} GPU(s) "
        f"(band {estimate['per_gpu_low_gb']:g}–{estimate['per_gpu_high_gb']:g}); {viability['rule']} "
        f"(headroom {viability['headroom']:g})"
    )
    for config in viability["configurations"]:
        verdict = "[green]fits[/green]" if config["viable"] else f"[red]no[/red]: {config['reason']}"
        console.print(
            f"  {config['gpu_count']}×{config['gpu_memory_gb']:g}GB: {config['strategy']}, "
            f"{_num(config['per_gpu_need_gb'], 1)} of {config['usable_gb']:g} GiB per GPU — {verdict}"
        )
    notes = {n for row in payload["options"] for n in row.get("job_notes", [])}
    for note in sorted(notes):
        console.print(f"note: {note}")
    if payload.get("throughput"):
        console.print("throughput is an estimate: " + " ".join(payload["throughput"]["notes"]))
    if payload.get("job"):
        console.print(f"job: {payload['job']['rule']}; " + " ".join(payload["job"]["notes"]))


def estimate_table(payload: dict[str, Any]) -> None:
    what = payload["model"] or f"{payload['params_b']:g}B parameters"
    table = Table(
        title=f"{what}: {payload['workload']}, {payload['precision']}, context {payload['context']}, "
        f"batch {payload['batch']}, {payload['gpus']} GPU(s)",
        caption=f"sizes in {payload['unit']} per GPU; layout: {payload['strategy']}",
    )
    table.add_column("component")
    table.add_column("GiB per GPU", justify="right")
    for name, value in payload["breakdown"].items():
        if value:
            table.add_row(name.removesuffix("_gb").replace("_", " "), f"{value:,.2f}")
    table.add_row("[bold]per GPU[/bold]", f"[bold]{payload['per_gpu_gb']:,.2f}[/bold]")
    table.add_row("band per GPU", f"{payload['per_gpu_low_gb']:,.2f}–{payload['per_gpu_high_gb']:,.2f}")
    total = f"{payload['total_gb']:,.2f} ({payload['low_gb']:,.2f}–{payload['high_gb']:,.2f})"
    table.add_row("total (all GPUs)", total)
    console.print(table)
    if payload["borderline"]:
        cards = ", ".join(f"{c} GiB" for c in payload["borderline_cards_gb"])
        console.print(f"[yellow]borderline[/yellow] for {cards} cards: measure before committing")
    for warning in payload["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    console.print("assumptions:")
    for line in payload["assumptions"]:
        console.print(f"  • {line}")


def offers_table(payload: dict[str, Any]) -> None:
    when = f"at the end of {payload['date']} UTC" if payload.get("date") else "current"
    table = Table(title=f"{payload['count']} {when} offers (as of {payload['as_of']})")
    for name in ("provider", "region", "sku", "GPUs", "pricing", "price", "¥/h", "¥/GPU·h", "¥/GB·h", "observed", ""):
        table.add_column(name)
    for row in payload["offers"]:
        table.add_row(
            *_offer_cells(row),
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
            str(row["stale_offers"]) + (f" ({row['held_offers']} held)" if row.get("held_offers") else ""),
            "; ".join(filter(None, [row["error"] or "; ".join(row["notes"]), row.get("export_error")])),
        )
    console.print(table)


def collect_table(payload: dict[str, Any]) -> None:
    written = f"price sheets written to {payload['exports']}"
    publish = payload.get("publish")
    if publish:
        written += f"; {publish['error']}" if publish["error"] else f"; snapshot {publish['version']} published"
    table = Table(title="Collection summary", caption=payload.get("export_error") or written)
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
