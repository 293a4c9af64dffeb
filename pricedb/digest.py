"""The daily digest: what changed on day D against day D−1, built from observations alone.

Days are calendar days in the digest's time zone (`GPUPRICE_DIGEST_TIME_ZONE`). The market at the
end of each day is a snapshot (pricedb.snapshot), so the rules of snapshots carry over:

- **changes**: offers listed at both ends whose native price (or currency/unit) differs;
- **new**: listed at the end of D but not at the end of D−1;
- **withdrawn**: listed at the end of D−1 but not at the end of D. A snapshot only loses an offer
  when a *successful* run covering its provider and pricing no longer lists it, so a provider whose
  run failed or was skipped never produces withdrawn entries: its last offers stay, marked stale;
- **failed_providers**: providers whose latest run by the end of D failed or was skipped, that had a
  failed run during D, or whose offers were stale at the end of D;
- **cheapest**: per GPU model, memory size and pricing model, the lowest ¥/GB·h among fresh,
  available offers at the end of D.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any, NamedTuple
from zoneinfo import ZoneInfo

import duckdb

from pricedb.clock import iso_utc
from pricedb.queries import Coverage
from pricedb.redact import redact
from pricedb.snapshot import MarketSql, StateOf, market_sql
from pricedb.store import PriceStore, utc_naive

PRICING_ORDER = ("on_demand", "spot", "monthly", "reserved_1y", "reserved_3y")


class DigestOffer(NamedTuple):
    """What a digest shows of an offer (the columns of `offer_row` and `change_row`)."""

    provider: str
    region: str
    sku: str
    pricing: str
    gpu_model: str
    gpu_memory_gb: float
    gpu_count: int
    gpu_partition: str | None
    price: float
    currency: str
    unit: str
    cny_per_hour: float | None
    cny_per_gb_hour: float | None
    observed_at: datetime
    stale: bool

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.sku, self.pricing)


DIGEST_FIELDS = DigestOffer._fields
_FIELDS = ", ".join(DIGEST_FIELDS)
_READ = (*(f for f in DIGEST_FIELDS if f != "stale"), "availability")  # stale: judged by market_sql


def day_window(day: date, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """[start, end) of a calendar day in `zone`, as naive UTC."""
    start = datetime.combine(day, time(), tzinfo=zone)
    end = datetime.combine(day + timedelta(days=1), time(), tzinfo=zone)
    return utc_naive(start), utc_naive(end)


def yesterday(now: datetime, zone: ZoneInfo) -> date:
    """The day before `now` (naive UTC or aware) in `zone`."""
    aware = now if now.tzinfo is not None else now.replace(tzinfo=ZoneInfo("UTC"))
    return aware.astimezone(zone).date() - timedelta(days=1)


def _pct(old: float | None, new: float | None) -> float | None:
    if old is None or new is None or old == 0:
        return None
    return round((new - old) / old * 100, 2)


def _diff(old: float | None, new: float | None) -> float | None:
    return None if old is None or new is None else round(new - old, 6)


def offer_row(offer: DigestOffer) -> dict[str, Any]:
    return {
        "provider": offer.provider,
        "region": offer.region,
        "sku": offer.sku,
        "pricing": offer.pricing,
        "gpu_model": offer.gpu_model,
        "gpu_memory_gb": offer.gpu_memory_gb,
        "gpu_count": offer.gpu_count,
        "gpu_partition": offer.gpu_partition,  # a slice of one GPU (MIG, vGPU); None: whole cards
        "price": offer.price,
        "currency": offer.currency,
        "unit": offer.unit,
        "cny_per_hour": offer.cny_per_hour,
        "cny_per_gb_hour": offer.cny_per_gb_hour,
        "observed_at": iso_utc(offer.observed_at),
        "stale": offer.stale,
    }


def change_row(old: DigestOffer, new: DigestOffer) -> dict[str, Any]:
    same_terms = (old.currency, old.unit) == (new.currency, new.unit)
    per_gb_pct = _pct(old.cny_per_gb_hour, new.cny_per_gb_hour)
    row = {
        "provider": new.provider,
        "region": new.region,
        "sku": new.sku,
        "pricing": new.pricing,
        "gpu_model": new.gpu_model,
        "gpu_memory_gb": new.gpu_memory_gb,
        "gpu_count": new.gpu_count,
        "gpu_partition": new.gpu_partition,
        "currency": new.currency,
        "unit": new.unit,
        "old_price": old.price,
        "new_price": new.price,
        "change": round(new.price - old.price, 6) if same_terms else None,
        # Native % when the terms are the same; across a currency/unit change only ¥/GB·h compares.
        "pct": _pct(old.price, new.price) if same_terms else per_gb_pct,
        "old_cny_per_gb_hour": old.cny_per_gb_hour,
        "new_cny_per_gb_hour": new.cny_per_gb_hour,
        "cny_per_gb_hour_change": _diff(old.cny_per_gb_hour, new.cny_per_gb_hour),
        "cny_per_gb_hour_pct": per_gb_pct,
        "old_observed_at": iso_utc(old.observed_at),
        "new_observed_at": iso_utc(new.observed_at),
    }
    if not same_terms:
        row.update(old_currency=old.currency, old_unit=old.unit)
    return row


def _failed_providers(
    cur: duckdb.DuckDBPyConnection,
    start: datetime,
    end: datetime,
    now: datetime,
    cover: dict[tuple[str, str], Coverage],
) -> list[dict[str, Any]]:
    """`cover`: the coverage by the runs finished before `end`."""
    runs = cur.execute(
        """
        SELECT provider,
               arg_max(status, (finished_at, run_id)) AS last_status,
               max(finished_at) AS last_run_at,
               max(finished_at) FILTER (WHERE status = 'ok') AS last_success_at,
               count(*) FILTER (WHERE status <> 'ok' AND finished_at >= ?) AS failed_runs,
               arg_max(error, (finished_at, run_id)) FILTER (WHERE status <> 'ok') AS last_error
        FROM runs WHERE finished_at < ? GROUP BY provider ORDER BY provider
        """,
        [start, end],
    ).fetchall()
    stale: dict[str, list[str]] = {}
    for (provider, pricing), entry in cover.items():
        if entry.is_stale(min(end, now)):
            stale.setdefault(provider, []).append(pricing)
    rows = []
    for provider, status, last_run, last_ok, failed, error in runs:
        stale_pricings = sorted(stale.get(provider, []), key=_pricing_rank)
        if status == "ok" and not failed and not stale_pricings:
            continue
        rows.append(
            {
                "provider": provider,
                "status": status,
                "failed_runs": int(failed),
                "error": error if status != "ok" or failed else None,  # not an old error of a since-healthy provider
                "last_run_at": iso_utc(last_run),
                "last_success_at": iso_utc(last_ok) if last_ok else None,
                "stale": bool(stale_pricings),
                "stale_pricings": stale_pricings,
            }
        )
    return rows


def _pricing_rank(pricing: str) -> int:
    return PRICING_ORDER.index(pricing) if pricing in PRICING_ORDER else len(PRICING_ORDER)


def _cheapest(cur: duckdb.DuckDBPyConnection, after: MarketSql) -> list[dict[str, Any]]:
    # Per card, memory and pricing; a slice of a GPU (MIG 4g.40gb) is its own group, never the cheapest
    # "A100 40GB" of the whole cards. The lowest ¥/GB·h among fresh, available offers, ties by key.
    rows = cur.execute(
        f"""
        SELECT arg_min(({_FIELDS}), (cny_per_gb_hour, provider, region, sku, pricing)) FROM {after.sql}
        WHERE NOT stale AND availability <> 'sold_out' AND cny_per_gb_hour IS NOT NULL
        GROUP BY gpu_model, gpu_memory_gb, coalesce(gpu_partition, ''), pricing
        """,
        after.values,
    ).fetchall()
    best = [DigestOffer(*row) for (row,) in rows]
    best.sort(key=lambda o: (o.gpu_model, o.gpu_memory_gb, o.gpu_partition or "", _pricing_rank(o.pricing)))
    return [offer_row(offer) for offer in best]


def summary_line(digest: dict[str, Any]) -> str:
    if digest["unchanged"]:
        text = f"No price changes, new or withdrawn offers on {digest['date']} (compared to {digest['compared_to']})."
    else:
        counts = [(len(digest["changes"]), "price change"), (len(digest["new"]), "new offer"),
                  (len(digest["withdrawn"]), "withdrawn offer")]  # fmt: skip
        text = ", ".join(f"{n} {what}{'s' if n != 1 else ''}" for n, what in counts) + f" on {digest['date']}."
    if digest["failed_providers"]:
        names = ", ".join(p["provider"] for p in digest["failed_providers"])
        text += f" Failed or stale: {names}."
    return text


def build_digest(
    cur: duckdb.DuckDBPyConnection, day: date, zone: ZoneInfo, now: datetime, state_of: StateOf | None = None
) -> dict[str, Any]:
    """The digest of `day` against the day before, as of `now` (naive UTC)."""
    start, end = day_window(day, zone)
    before, after = market_sql(cur, start, now, _READ, state_of), market_sql(cur, end, now, _READ, state_of)
    # The two days compared in the database: only the offers that differ become Python objects.
    differing = cur.execute(
        f"""
        SELECT {", ".join("b." + f for f in DIGEST_FIELDS)}, {", ".join("a." + f for f in DIGEST_FIELDS)}
        FROM {before.sql} b FULL OUTER JOIN {after.sql} a
          ON a.provider = b.provider AND a.region = b.region AND a.sku = b.sku AND a.pricing = b.pricing
        WHERE a.provider IS NULL OR b.provider IS NULL
           OR a.price <> b.price OR a.currency <> b.currency OR a.unit <> b.unit
        """,
        [*before.values, *after.values],
    ).fetchall()
    width = len(DIGEST_FIELDS)
    old = {o.key: o for o in (DigestOffer(*row[:width]) for row in differing if row[0] is not None)}
    new = {o.key: o for o in (DigestOffer(*row[width:]) for row in differing if row[width] is not None)}
    changes = [change_row(old[key], new[key]) for key in sorted(old.keys() & new.keys())]
    changes.sort(key=lambda row: (-abs(row["pct"] or 0.0), row["provider"], row["region"], row["sku"]))
    digest: dict[str, Any] = {
        "date": day.isoformat(),
        "compared_to": (day - timedelta(days=1)).isoformat(),
        "time_zone": zone.key,
        "window": {"from": iso_utc(start), "to": iso_utc(end)},
        "built_at": iso_utc(now),
        "partial": now < end,
        "changes": changes,
        "new": [offer_row(new[key]) for key in sorted(new.keys() - old.keys())],
        "withdrawn": [offer_row(old[key]) for key in sorted(old.keys() - new.keys())],
        "failed_providers": _failed_providers(cur, start, end, now, after.state.coverage),
        "cheapest": _cheapest(cur, after),
    }
    digest["unchanged"] = not (digest["changes"] or digest["new"] or digest["withdrawn"])
    digest["summary"] = summary_line(digest)
    return digest


# ----- storage ----------------------------------------------------------------------------------
def store_digest(store: PriceStore, digest: dict[str, Any]) -> None:
    """Keep the digest of its day (a rebuilt one replaces the earlier build of the same day)."""
    body = json.dumps(digest, ensure_ascii=False, separators=(",", ":"))
    store.write(
        [
            ("DELETE FROM digests WHERE date = ?", [date.fromisoformat(digest["date"])]),
            (
                "INSERT INTO digests VALUES (?, ?, ?, ?, ?)",
                [
                    date.fromisoformat(digest["date"]),
                    date.fromisoformat(digest["compared_to"]),
                    digest["time_zone"],
                    datetime.fromisoformat(digest["built_at"].removesuffix("Z")),
                    body,
                ],
            ),
        ]
    )


def load_digest(cur: duckdb.DuckDBPyConnection, day: date) -> dict[str, Any] | None:
    body = load_digest_body(cur, day)
    return json.loads(body) if body is not None else None


def load_digest_body(cur: duckdb.DuckDBPyConnection, day: date) -> bytes | None:
    """The stored digest of `day` as stored: `build_digest`'s dict in its order, written compactly."""
    row = cur.execute("SELECT body FROM digests WHERE date = ?", [day]).fetchone()
    return row[0].encode() if row else None


def recent_digests(cur: duckdb.DuckDBPyConnection, count: int) -> list[dict[str, Any]]:
    rows = cur.execute("SELECT body FROM digests ORDER BY date DESC LIMIT ?", [count]).fetchall()
    return [json.loads(body) for (body,) in rows]


def record_delivery(store: PriceStore, day: date, target: str, at: datetime, error: str | None) -> None:
    status = "ok" if error is None else "failed"
    error = redact(error) if error else error  # a webhook's answer may echo its URL (which holds its token)
    store.write([("INSERT INTO deliveries VALUES (?, ?, ?, ?, ?)", [day, target, utc_naive(at), status, error])])


def deliveries_for(cur: duckdb.DuckDBPyConnection, day: date) -> list[dict[str, Any]]:
    rows = cur.execute(
        "SELECT target, attempted_at, status, error FROM deliveries WHERE digest_date = ? "
        "ORDER BY attempted_at, target",
        [day],
    ).fetchall()
    return [
        {"target": target, "attempted_at": iso_utc(at), "status": status, "error": error}
        for target, at, status, error in rows
    ]
