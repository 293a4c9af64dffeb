"""Price history: every observation of the matching offers between two moments, one series per
offer (provider, region, sku, pricing), oldest point first.

Observations are append-only and indexed on (provider, region, sku, pricing, observed_at), so a
query picks its series first (paged with `limit`/`offset`) and then reads their points in index
order."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb


@dataclass(frozen=True)
class HistoryQuery:
    since: datetime  # naive UTC, inclusive
    until: datetime  # naive UTC, exclusive
    gpu: str = "A100"
    providers: tuple[str, ...] = ()
    pricings: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()  # matched case-insensitively
    skus: tuple[str, ...] = ()
    include_unavailable: bool = True
    limit: int = 100  # series
    offset: int = 0


@dataclass
class Series:
    provider: str
    region: str
    sku: str
    pricing: str
    gpu_model: str
    gpu_memory_gb: float
    gpu_count: int
    currency: str
    unit: str
    points: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.sku, self.pricing)


@dataclass(frozen=True)
class History:
    series: list[Series]
    total_series: int
    points: int


def _where(query: HistoryQuery, prefix: str = "") -> tuple[str, list[Any]]:
    p = prefix
    clauses = [f"{p}observed_at >= ?", f"{p}observed_at < ?", f"lower({p}gpu_model) = ?"]
    values: list[Any] = [query.since, query.until, query.gpu.lower()]
    for column, chosen in (("provider", query.providers), ("pricing", query.pricings), ("sku", query.skus)):
        if chosen:
            clauses.append(f"{p}{column} IN ({', '.join('?' for _ in chosen)})")
            values.extend(chosen)
    if query.regions:
        clauses.append(f"lower({p}region) IN ({', '.join('?' for _ in query.regions)})")
        values.extend(r.lower() for r in query.regions)
    if not query.include_unavailable:
        clauses.append(f"{p}availability <> 'sold_out'")
    return " AND ".join(clauses), values


def history(cur: duckdb.DuckDBPyConnection, query: HistoryQuery) -> History:
    where, values = _where(query)
    joined_where, _ = _where(query, "o.")
    total_row = cur.execute(
        f"SELECT count(*) FROM (SELECT DISTINCT provider, region, sku, pricing FROM observations WHERE {where})",
        values,
    ).fetchone()
    total = int(total_row[0]) if total_row else 0
    rows = cur.execute(
        f"""
        WITH chosen AS (
            SELECT DISTINCT provider, region, sku, pricing FROM observations WHERE {where}
            ORDER BY provider, region, sku, pricing LIMIT ? OFFSET ?
        )
        SELECT o.provider, o.region, o.sku, o.pricing, o.gpu_model, o.gpu_memory_gb, o.gpu_count, o.currency,
               o.unit, o.observed_at, o.price, o.cny_per_hour, o.cny_per_gb_hour
        FROM observations o SEMI JOIN chosen c
             ON o.provider = c.provider AND o.region = c.region AND o.sku = c.sku AND o.pricing = c.pricing
        WHERE {joined_where}
        ORDER BY o.provider, o.region, o.sku, o.pricing, o.observed_at, o.observation_id
        """,
        [*values, query.limit, query.offset, *values],
    ).fetchall()
    series: list[Series] = []
    current: Series | None = None
    for provider, region, sku, pricing, model, memory, count, currency, unit, at, price, per_hour, per_gb in rows:
        if current is None or current.key != (provider, region, sku, pricing):
            current = Series(provider, region, sku, pricing, model, memory, count, currency, unit)
            series.append(current)
        point: dict[str, Any] = {
            "observed_at": at,
            "price": price,
            "cny_per_hour": per_hour,
            "cny_per_gb_hour": per_gb,
        }
        if (currency, unit) != (current.currency, current.unit):  # the provider changed how it prices
            point.update(currency=currency, unit=unit)
        current.points.append(point)
    return History(series, total, len(rows))
