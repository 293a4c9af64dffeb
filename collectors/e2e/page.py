"""Reading E2E Networks' pricing page: find the GPU price table(s), read each plan row.

The page is located by meaning, not by CSS class: a GPU price table is any `<table>` whose header
row names a plan column, a GPU column and at least one price column (hourly, 30/90/365 days, or
monthly/annual). Class names of a marketing page change with every redesign; column headings
change far less often. What is taken from a row: the plan name (sku), the GPU cell ("1 x A100 80 GB"
→ count 1, A100 80GB), the host's vCPU/RAM/storage cells (kept for the notes; vCPUs "16" and RAM
"115 GB" also become the quote's host shape) and each price cell.

A price cell is read as published: currency by its symbol (₹/Rs/INR or $/USD), the amount with
Indian digit grouping allowed ("₹1,46,000"), and the period from an explicit suffix ("/hr", "/mo")
or else from its column (the hourly column is per hour, a committed column is the whole term).
Cells without digits ("—", "NA", "Contact us") mean "not offered"; a cell with digits that cannot
be read is a ParseError, never a silent skip.

An HTML comment starting "fixture price" inside a cell marks a placeholder in a reconstructed
fixture (fixtures/e2e/README section); a live page has no such comments, so live quotes never
carry the mark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from selectolax.lexbor import LexborHTMLParser, LexborNode

from collectors.e2e.plans import Price
from collectors.errors import ParseError
from pricedb.shapes import host_fields


class Term(StrEnum):
    """The price columns the page publishes."""

    HOURLY = "hourly"
    DAYS_30 = "30 days"
    DAYS_90 = "90 days"
    DAYS_365 = "365 days"


TERM_DAYS = {Term.DAYS_30: 30, Term.DAYS_90: 90, Term.DAYS_365: 365}

# Header text → what the column holds. First match wins, so "GPU Memory" is tried before "GPU".
_COLUMNS: list[tuple[str, re.Pattern[str]]] = [
    ("gpu_memory", re.compile(r"gpu\s*(memory|ram)|vram", re.I)),
    ("gpu", re.compile(r"\bgpus?\b|graphics", re.I)),
    ("plan", re.compile(r"\bplan|\bsku\b|\binstance\b|\bname\b", re.I)),
    ("vcpu", re.compile(r"v?cpu|cores", re.I)),
    ("ram", re.compile(r"\bram\b|memory", re.I)),
    ("storage", re.compile(r"storage|disk|ssd|nvme", re.I)),
    (Term.HOURLY, re.compile(r"hourly|per\s*hour|on[-\s]?demand|/\s*hr\b", re.I)),
    (Term.DAYS_30, re.compile(r"\b30\s*days?\b|\bmonthly\b|\b1\s*month\b", re.I)),
    (Term.DAYS_90, re.compile(r"\b90\s*days?\b|\b3\s*months?\b|quarter", re.I)),
    (Term.DAYS_365, re.compile(r"\b365\s*days?\b|annual|yearly|\b1\s*year\b|\b12\s*months?\b", re.I)),
]
PRICE_COLUMNS = tuple(Term)
_CURRENCY = [(re.compile(r"₹|\bRs\.?|\bINR\b", re.I), "INR"), (re.compile(r"\$|\bUSD\b", re.I), "USD")]
_AMOUNT = re.compile(r"\d[\d,]*(?:\.\d+)?")
_PER_HOUR = re.compile(r"/\s*(hr|hour|h)\b|per\s+hour", re.I)
_PER_MONTH = re.compile(r"/\s*(mo|month)\b|per\s+month", re.I)
_GPU_COUNT = re.compile(r"(\d+)\s*[x×]\s*|\s*[x×]\s*(\d+)\b", re.I)
_GPU_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*GB", re.I)


@dataclass
class PlanRow:
    sku: str
    gpu_text: str
    gpu_memory_text: str
    host: str  # vCPU / RAM / storage, as published, for the notes
    row: int  # 1-based row number in its table, for messages
    prices: dict[Term, Price] = field(default_factory=dict)
    shape: dict[str, object] = field(default_factory=dict)  # vcpus / memory_gib, when both cells read


def _text(node: LexborNode) -> str:
    return " ".join(node.text(separator=" ").split())


def _is_placeholder(cell: LexborNode) -> bool:
    return any(
        n.is_comment_node and (n.comment_content or "").strip().lower().startswith("fixture price")
        for n in cell.iter(include_text=True)
    )


def classify_header(text: str) -> str | None:
    for kind, pattern in _COLUMNS:
        if pattern.search(text):
            return kind
    return None


def read_price(text: str, term: Term, placeholder: bool = False) -> Price | None:
    """A price cell → Price; None when the cell has no digits (not offered)."""
    if not any(ch.isdigit() for ch in text):
        return None
    amounts = _AMOUNT.findall(text)
    currency = next((code for pattern, code in _CURRENCY if pattern.search(text)), None)
    if len(amounts) != 1 or currency is None:
        raise ParseError(f"cannot read the {term.value} price {text!r} (expected one amount with ₹ or $)")
    amount = float(amounts[0].replace(",", ""))
    if _PER_HOUR.search(text):
        per = "hour"
    elif _PER_MONTH.search(text):
        per = "month"
    else:
        per = "hour" if term is Term.HOURLY else "term"
    return Price(amount, currency, per, text, placeholder)


def gpu_count_of(text: str) -> int | None:
    match = _GPU_COUNT.search(text)
    if match is None:
        return None
    return int(match.group(1) or match.group(2))


def gpu_memory_of(text: str) -> float | None:
    match = _GPU_MEMORY.search(text)
    return float(match.group(1)) if match else None


def _header_cells(table: LexborNode) -> list[LexborNode]:
    head = table.css_first("thead tr") or table.css_first("tr")
    return head.css("th, td") if head is not None else []


def _body_rows(table: LexborNode) -> list[LexborNode]:
    rows = table.css("tbody tr") or table.css("tr")[1:]
    return [r for r in rows if r.css_first("td") is not None]


def gpu_tables(html: str) -> tuple[list[tuple[dict[int, str], LexborNode]], list[list[str]]]:
    """The page's GPU price tables (column map, table) and the headers of every table seen."""
    tree = LexborHTMLParser(html)
    found: list[tuple[dict[int, str], LexborNode]] = []
    seen: list[list[str]] = []
    for table in tree.css("table"):
        headers = [_text(cell) for cell in _header_cells(table)]
        seen.append(headers)
        columns = {i: kind for i, h in enumerate(headers) if (kind := classify_header(h)) is not None}
        kinds = set(columns.values())
        if {"plan", "gpu"} <= kinds and kinds & set(PRICE_COLUMNS):
            found.append((columns, table))
    return found, seen


_GB = re.compile(r"^(\d+(?:\.\d+)?)\s*GB$", re.I)


def _shape(cells: dict[str, LexborNode]) -> dict[str, object]:
    """The host shape from the vCPU cell ("16") and the RAM cell ("115 GB"), when both read."""
    if "vcpu" not in cells or "ram" not in cells:
        return {}
    ram = _GB.match(_text(cells["ram"]))
    return host_fields(_text(cells["vcpu"]), ram.group(1) if ram else None)


def plan_rows(columns: dict[int, str], table: LexborNode) -> list[PlanRow]:
    rows: list[PlanRow] = []
    for number, tr in enumerate(_body_rows(table), 1):
        cells = tr.css("td, th")
        by_kind: dict[str, LexborNode] = {}
        for index, kind in columns.items():
            if index < len(cells) and kind not in by_kind:
                by_kind[kind] = cells[index]
        if "plan" not in by_kind or "gpu" not in by_kind:
            continue  # a spacer or sub-heading row
        host = ", ".join(
            f"{_text(by_kind[k])} {label}".strip()
            for k, label in (("vcpu", "vCPU"), ("ram", "RAM"), ("storage", "storage"))
            if k in by_kind and _text(by_kind[k])
        )
        row = PlanRow(
            sku=_text(by_kind["plan"]),
            gpu_text=_text(by_kind["gpu"]),
            gpu_memory_text=_text(by_kind["gpu_memory"]) if "gpu_memory" in by_kind else "",
            host=host,
            row=number,
            shape=_shape(by_kind),
        )
        for term in PRICE_COLUMNS:
            if term in by_kind:
                cell = by_kind[term]
                try:
                    price = read_price(_text(cell), term, _is_placeholder(cell))
                except ParseError as exc:
                    raise ParseError(f"plan {row.sku!r} (row {number}): {exc}") from exc
                if price is not None:
                    row.prices[term] = price
        rows.append(row)
    return rows
