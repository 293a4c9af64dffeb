"""Reading the manual quotes sheet: one CSV row per offer, checked field by field.

A row that cannot be a quote is refused with its file, line and reason, and the other rows still
load; only a sheet-level problem (no header, a missing or unknown column) or a sheet with no good
row at all fails the run. Lines whose first cell starts with `#` are comments; blank lines are
skipped. The file may start with a UTF-8 byte-order mark (spreadsheets write one).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from collectors.base import QuoteMaker, RawResponse
from collectors.errors import InvalidQuote, ParseError
from pricedb.card_names import GpuSpec, UnknownGpu, identify
from pricedb.cards import MODEL_FACTS, model_named
from pricedb.models import Availability, Pricing, Quote, Unit

REQUIRED = (
    "provider",
    "region",
    "sku",
    "gpu_model",
    "gpu_memory_gb",
    "gpu_count",
    "pricing",
    "price",
    "currency",
    "unit",
    "source_url",
    "date_seen",
)
OPTIONAL = (
    "term_hours",
    "availability",
    "tax_included",
    "notes",
    "billing_increment_s",
    "billing_minimum_s",
    "gpu_fraction",
)
COLUMNS = REQUIRED + OPTIONAL

_SLUG = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:\S+$", re.I)
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_NAMED_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*g(?:i?b)?\b", re.I)
_MODEL_WORD = re.compile(r"\b(" + "|".join(sorted(MODEL_FACTS, key=len, reverse=True)) + r")\b", re.I)
_TRUE, _FALSE = {"true", "yes", "y", "1"}, {"false", "no", "n", "0"}


class BadRow(ValueError):
    """Why one row cannot be a quote."""


@dataclass(frozen=True)
class SheetResult:
    quotes: list[Quote]
    refused: list[dict[str, str]]  # {"offer": "<file>:<line>", "reason": ...}
    rows: int  # data rows read (comments and blank lines not counted)


def _number(row: dict[str, str], name: str, *, integer: bool = False, positive: bool = True) -> float:
    text = row[name].replace(",", "").strip()
    try:
        value = float(text)
    except ValueError:
        raise BadRow(f"{name} {row[name]!r} is not a number") from None
    if integer and value != int(value):
        raise BadRow(f"{name} {row[name]!r} is not a whole number")
    if positive and value <= 0:
        raise BadRow(f"{name} must be greater than 0, not {row[name]!r}")
    if not positive and value < 0:
        raise BadRow(f"{name} must not be negative, not {row[name]!r}")
    return value


def _choice(text: str, allowed: list[str], name: str) -> str:
    value = re.sub(r"[\s-]+", "_", text.strip().lower())
    if value not in allowed:
        raise BadRow(f"{name} {text!r} is not one of {', '.join(allowed)}")
    return value


def _gpu(row: dict[str, str], memory: float) -> GpuSpec:
    """The card a row names, whole or a slice: a MIG profile in `gpu_model` ("A100 80GB MIG 1g.10gb")
    or a `gpu_fraction` (0.5: half a GPU, as quoted) makes it a slice, whose `gpu_memory_gb` is the
    slice's own."""
    name = row["gpu_model"].strip()
    fraction = _number(row, "gpu_fraction") if row["gpu_fraction"].strip() else None
    try:
        spec = identify(name)
    except UnknownGpu:
        word = _MODEL_WORD.search(name)
        if word is None or fraction is not None:
            raise BadRow(f"gpu_model {name!r} is not a GPU gpuprice knows (README, GPUs, lists the cards)") from None
        spec = GpuSpec(model_named(word.group(1)) or word.group(1), memory)
    if spec.gpu_fraction is not None:  # a MIG profile: the name says the slice's memory and share
        if memory != spec.memory_gb or (fraction is not None and abs(fraction - spec.gpu_fraction) > 1e-3):
            raise BadRow(
                f"gpu_model {name!r} is a {spec.gpu_partition} slice: {spec.memory_gb:g} GB, {spec.gpu_fraction:.3g} "
                f"of a GPU, but the row says {row['gpu_memory_gb']} GB{f', {fraction:g}' if fraction else ''}"
            )
        return spec
    if fraction is not None:
        if fraction > 1:
            raise BadRow(f"gpu_fraction {fraction:g} is more than one GPU (write 0.5 for half of one)")
        try:
            return spec.slice(fraction, f"{fraction:.3g} of a GPU (as quoted)", memory)
        except UnknownGpu as exc:
            raise BadRow(str(exc)) from None
    named = _NAMED_MEMORY.search(name)
    if named is not None and float(named.group(1)) != memory:
        raise BadRow(f"gpu_model {name!r} says {named.group(1)} GB but gpu_memory_gb is {row['gpu_memory_gb']}")
    return GpuSpec(spec.model, memory, spec.form_factor, spec.interconnect)


def _date_seen(text: str, now: datetime) -> datetime:
    text = text.strip()
    try:
        seen = (
            datetime.combine(date.fromisoformat(text), time(), UTC) if len(text) == 10 else datetime.fromisoformat(text)
        )
    except ValueError:
        raise BadRow(f"date_seen {text!r} is not a date (write 2026-11-20)") from None
    seen = seen if seen.tzinfo is not None else seen.replace(tzinfo=UTC)
    if seen > now:
        raise BadRow(f"date_seen {text} is in the future")
    return seen


def _bool(text: str, name: str) -> bool | None:
    value = text.strip().lower()
    if not value:
        return None
    if value in _TRUE | _FALSE:
        return value in _TRUE
    raise BadRow(f"{name} {text!r} is not true/false (or blank for unknown)")


def row_quote(row: dict[str, str], raw: RawResponse, quote: QuoteMaker, offer: str) -> Quote:
    """One sheet row (`offer`: file and line) → Quote (provider `manual`, sku `<provider>/<sku>`); BadRow, or
    InvalidQuote for a value the quote model refuses."""
    for name in REQUIRED:
        if not row[name].strip():
            raise BadRow(f"{name} is empty")
    provider = row["provider"].strip().lower()
    if not _SLUG.match(provider):
        raise BadRow(f"provider {row['provider']!r} is not a slug (lower-case letters, digits, - or _)")
    memory = _number(row, "gpu_memory_gb")
    count = int(_number(row, "gpu_count", integer=True))
    spec = _gpu(row, memory)
    pricing = Pricing(_choice(row["pricing"], [p.value for p in Pricing], "pricing"))
    unit = Unit(_choice(row["unit"], [u.value for u in Unit], "unit"))
    currency = row["currency"].strip().upper()
    if not _CURRENCY.match(currency):
        raise BadRow(f"currency {row['currency']!r} is not an ISO 4217 code such as CNY or USD")
    term_hours = _number(row, "term_hours") if row["term_hours"].strip() else None
    if unit is Unit.TERM and term_hours is None:
        raise BadRow("unit is term but term_hours is empty (how many hours does the term last?)")
    source_url = row["source_url"].strip()
    if not _SCHEME.match(source_url):
        raise BadRow(f"source_url {source_url!r} is not a URL (https://…, mailto:…)")
    seen = _date_seen(row["date_seen"], raw.fetched_at)
    availability = Availability(
        _choice(row["availability"], [a.value for a in Availability], "availability")
        if row["availability"].strip()
        else "unknown"
    )
    increment = row["billing_increment_s"].strip()
    minimum = row["billing_minimum_s"].strip()
    notes = f"manual quote for {provider}, seen {seen.date().isoformat()}"
    if row["notes"].strip():
        notes += f"; {row['notes'].strip()}"
    price = _number(row, "price")
    billing = {"billing_increment_s": int(_number(row, "billing_increment_s", integer=True))} if increment else {}
    if minimum:  # a blank billing cell keeps the collector's rule: per second, no minimum
        billing["billing_minimum_s"] = int(_number(row, "billing_minimum_s", integer=True, positive=False))
    return quote(
        raw,
        offer,
        region=row["region"].strip(),
        sku=f"{provider}/{row['sku'].strip()}",
        **spec.quote_fields(),
        gpu_count=count,
        pricing=pricing,
        price=price,
        currency=currency,
        unit=unit,
        term_hours=term_hours,
        availability=availability,
        source_url=source_url,
        observed_at=seen,
        tax_included=_bool(row["tax_included"], "tax_included"),
        notes=notes,
        **billing,
    )


def _header(cells: list[str], where: str) -> list[str]:
    names = [re.sub(r"\s+", "_", c.strip().lower()) for c in cells]
    missing = [c for c in REQUIRED if c not in names]
    unknown = [c for c in names if c not in COLUMNS]
    doubled = sorted({c for c in names if names.count(c) > 1})
    if missing or unknown or doubled:
        problems = [
            f"missing column(s) {', '.join(missing)}" if missing else "",
            f"unknown column(s) {', '.join(unknown)}" if unknown else "",
            f"repeated column(s) {', '.join(doubled)}" if doubled else "",
        ]
        raise ParseError(f"{where}: {'; '.join(p for p in problems if p)} (columns: {', '.join(COLUMNS)})")
    return names


def read_sheet(raw: RawResponse, quote: QuoteMaker) -> SheetResult:
    where = raw.label or raw.url
    try:
        text = raw.body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{where}: not UTF-8 text ({exc}); save the sheet as CSV UTF-8") from exc
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    quotes: list[Quote] = []
    refused: list[dict[str, str]] = []
    first_line: dict[tuple[str, str, str, str], int] = {}
    rows, end = 0, 0
    try:
        for cells in reader:
            line, end = end + 1, reader.line_num  # a quoted field may span lines: report where the row starts
            offer = f"{where}:{line}"
            if not any(c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
                continue
            if header is None:
                header = _header(cells, f"{where}:{line}")
                continue
            rows += 1
            try:
                if len(cells) != len(header):
                    raise BadRow(f"{len(cells)} fields, the header has {len(header)}")
                row = dict.fromkeys(OPTIONAL, "") | dict(zip(header, cells, strict=True))
                made = row_quote(row, raw, quote, offer)
                if made.key in first_line:
                    raise BadRow(f"the same offer as line {first_line[made.key]} (provider, region, sku, pricing)")
                first_line[made.key] = line
                quotes.append(made)
            except BadRow as exc:
                refused.append({"offer": offer, "reason": str(exc)})
            except InvalidQuote as exc:  # a value the quote model refuses costs this row only
                refused.append({"offer": offer, "reason": exc.reason})
    except csv.Error as exc:
        raise ParseError(f"{where}:{reader.line_num}: not readable as CSV ({exc})") from exc
    if header is None:
        raise ParseError(f"{where}: no header row (columns: {', '.join(COLUMNS)})")
    return SheetResult(quotes, refused, rows)
