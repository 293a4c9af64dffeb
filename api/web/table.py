"""An answer's fields as table cells: the same text in the HTML table, the CSV and the Markdown.

A column is a field of the answer's rows. How it is written follows from its name and values, so a
field an answer gains later gets a column without a change here: `cny_*` figures are money (shown
in the chosen currency), `*_at` are moments, true/false are yes/no, lists are written as JSON. A
few fields are named: the native price with its currency and unit, the vocabulary (pricing,
availability) in the reader's language, the source as a link."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from html import escape, unescape
from operator import is_not, methodcaller
from typing import Any

from api.web.i18n import MESSAGES, Words
from api.web.money import CNY, NATIVE, convert, symbol

MISSING = "—"
VOCABULARY = {"pricing": "pricing", "availability": "availability", "unit": "unit", "status": "status"}
NATIVE_PRICES = ("price", "list_price")
PER = {"hour": "h", "gpu_hour": "GPU·h", "gb_hour": "GB·h", "mtoken": "M tokens"}
DERIVED = {"total_gb": lambda row: row["gpu_count"] * row["gpu_memory_gb"]}
# Long texts that repeat down the market, each written once in a numbered list below the table, the
# cells linking to their item by number (`#n12`, `#s3`): a few hundred notes and a few dozen source
# URLs down 2,000 rows, repeats too far apart for gzip's 32 KB window to see. A note's cell shows
# its number, a source's its host. The CSV, the Markdown and other tables keep the texts.
LISTED = {"notes": "n", "source_url": "s"}  # column: its items' anchor prefix
# The native prices (a price, a list price): sorted in the market by their rank among the current
# offers' prices and list prices together.
RANKED = frozenset(NATIVE_PRICES)


@dataclass(frozen=True)
class Listed:
    """A listed column's texts numbered in their order (so the numbers sort as the texts do), and
    each number's item in the list below the table."""

    places: dict[str, int]
    items: dict[int, str]

    @classmethod
    def of(cls, key: str, texts: set[str]) -> Listed:
        places = {text: place for place, text in enumerate(sorted(texts), 1)}
        anchor = LISTED[key]
        shown = (lambda t: f'<a href="{t}">{t}</a>') if key.endswith("_url") else (lambda t: t)
        items = {place: f"<li value={place} id={anchor}{place}>{shown(escape(t))}" for t, place in places.items()}
        return cls(places, items)


@dataclass(frozen=True)
class Numbering:
    """Numbers the market writes for values of the current offers instead of the values themselves:
    each listed column's texts numbered (`Listed`); and each native price's (and list price's) rank
    among them (None when every one reads back from its text, which the script then sorts by). A
    price's full-precision `data-v` was the largest part of a row's compressed bytes after the CNY
    figures; its rank sorts the same (equal prices equal ranks, then the offer key) in a few digits.
    Prices and list prices share one ranking: any sort of either column by it is a sort by value."""

    listed: dict[str, Listed]
    prices: dict[float, int] | None


Rates = dict[str, dict[str, float]]


def _host(url: Any) -> str:
    """What a source cell shows of its URL: the host."""
    return escape(str(url).split("://", 1)[-1].split("/", 1)[0])


def _per_gpu_hour(row: dict[str, Any]) -> float | None:
    per_hour, count = row.get("cny_per_hour"), row.get("gpu_count")
    return per_hour / count if per_hour is not None and count else None


def _per_gb_hour(row: dict[str, Any]) -> float | None:
    per_hour, count, memory = row.get("cny_per_hour"), row.get("gpu_count"), row.get("gpu_memory_gb")
    return per_hour / (count * memory) if per_hour is not None and count and memory else None


# The CNY figures the market's script works out from its row's `data-h` (¥/h), `data-n` (GPUs) and
# `data-m` (GB per GPU) as pricedb.normalize does (one IEEE division each, the same double in
# JavaScript): where a row's figure is exactly that, its cell needs no `data-v` (about a third of
# the 37-column page's compressed bytes were these full-precision numbers, each written again
# in three columns). A figure that is not (none today) keeps its `data-v`.
DERIVED_MONEY: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "cny_per_hour": lambda row: row.get("cny_per_hour"),
    "cny_per_gpu_hour": _per_gpu_hour,
    "cny_per_gb_hour": _per_gb_hour,
}


@dataclass(frozen=True)
class Column:
    key: str
    kind: str  # money, native, when, link, vocab, flag, number, data, note, text
    label: str
    unit: str = ""  # money: what the amount is per (h, GB·h)

    @property
    def numeric(self) -> bool:
        return self.kind in ("money", "native", "number")


def kind_of(key: str, sample: Any) -> str:
    if ("cny_per" in key or key.endswith("_cny")) and not key.endswith("_pct"):
        return "money"
    if key in NATIVE_PRICES:
        return "native"
    if key.endswith("_at"):
        return "when"
    if key.endswith("_url"):
        return "link"
    if key in VOCABULARY:
        return "vocab"
    if key == "notes" and (sample is None or isinstance(sample, str)):
        return "note"
    if isinstance(sample, bool):
        return "flag"
    if isinstance(sample, int | float):
        return "number"
    if isinstance(sample, list | dict):
        return "data"
    return "text"


def money_unit(key: str) -> str:
    rest = key.removeprefix("cny_").removeprefix("per_").removesuffix("_cny")
    return PER.get(rest, "" if rest in ("cny", "total") else rest.replace("_", " "))


def header_label(column: Column, currency: str, words: Words) -> str:
    """A named field by its name in the reader's language; other money by its currency and unit."""
    if column.key.startswith("cny_per") or (column.kind == "money" and not words.has(column.key)):
        return money_label(column, currency, words)
    return column.label


def data_table(rows: Sequence[dict[str, Any]], keys: Sequence[str], words: Words, link: Callable[..., str]) -> str:
    """Rows of an answer as a plain table (CNY; the sku links to its offer page)."""
    columns = columns_of(rows, keys, words)
    cells = [column_cells(c, rows, words, "CNY", {}, link if c.key == "sku" else None, html=True) for c in columns]
    numeric = ' class="n"'
    head = "".join(
        f'<th scope="col"{numeric if c.numeric else ""}>{escape(header_label(c, "CNY", words))}</th>' for c in columns
    )
    body = "\n".join("<tr>" + "".join(row) + "</tr>" for row in zip(*cells, strict=True))
    return f'<table class="{table_classes(columns)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def table_classes(columns: Sequence[Column]) -> str:
    """A data table's classes: `data`, then `n<i>` for each numeric column and `t<i>` for each
    moment (1-based), which style.css aligns by position (`td:nth-child(i)`), so the thousands of
    cells below need no class of their own."""
    marks = [f"{'n' if c.numeric else 't'}{i}" for i, c in enumerate(columns, 1) if c.numeric or c.kind == "when"]
    return " ".join(["data", *marks])


@lru_cache(maxsize=256)  # bounded: a few worded columns in each of two languages
def _worded(kind: str, vocabulary: str, lang: str) -> dict[str, str]:
    words = Words(lang)
    if kind == "flag":
        return {words.flag(True): "1", words.flag(False): "0"}
    prefix = f"{vocabulary}."
    known = (key.removeprefix(prefix) for key in MESSAGES if key.startswith(prefix))
    return {words.value(vocabulary, value): value for value in known}


def worded(column: Column, words: Words) -> dict[str, str]:
    """A vocabulary or yes/no column's words in the reader's language, each with the value it stands
    for (empty for other columns). The market's column head carries them (`data-words`), so a cell
    whose text they read back as its value needs no `data-v` of its own (`column_cells`' `headed`)."""
    if column.kind not in ("vocab", "flag"):
        return {}
    return _worded(column.kind, VOCABULARY.get(column.key, ""), words.lang)


def column(key: str, sample: Any, words: Words) -> Column:
    kind = kind_of(key, sample)
    return Column(key, kind, words(key), money_unit(key) if kind == "money" else "")


def samples_of(
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    absent: Collection[str] = (),
    known: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Each key's first value in `rows` (None: none has one; a derived column's, its first row's).
    `absent`: keys known to have none in these rows; `known`: keys whose first value is known
    already (neither is looked for down every row)."""
    found: dict[str, Any] = {}
    valued, known = partial(is_not, None), known or {}
    for key in keys:
        if key in known:
            found[key] = known[key]
        elif key in DERIVED:  # no row holds it: its kind is its value's, as sorting reads it (a number)
            found[key] = DERIVED[key](rows[0]) if rows else None
        else:
            found[key] = None if key in absent else next(filter(valued, map(methodcaller("get", key), rows)), None)
    return found


def columns_of(
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    words: Words,
    absent: Collection[str] = (),
    known: Mapping[str, Any] | None = None,
) -> list[Column]:
    """Each key's column, its kind read from the first row with a value (`samples_of`)."""
    samples = samples_of(rows, keys, absent, known)
    return [column(key, samples[key], words) for key in keys]


def number(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.6f}".rstrip("0").rstrip(".")
        return text if text not in ("", "-0") else "0"
    return str(value)


def raw_value(value: int | float) -> str:
    """A number cell's `data-v` attribute: none where the number as shown reads back as the very
    value (the page's script then sorts by the text, as it reads it with parseFloat), else its repr."""
    return "" if isinstance(value, int) or float(number(value)) == value else f" data-v={value!r}"


def plain(value: Any) -> str:
    """Any answer value as text: what a field the page does not know yet looks like."""
    if value is None or value == [] or value == {}:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return number(value)


def moment(value: str) -> str:
    """An ISO moment as the pages write it: `2026-12-01 17:11` (UTC)."""
    return value[:16].replace("T", " ") if len(value) >= 16 and value[10] == "T" else value


def money_label(column: Column, currency: str, words: Words) -> str:
    sym = words("native") if currency == NATIVE else symbol(currency)
    return f"{sym}/{column.unit}" if column.unit else sym


def column_cells(
    column: Column,
    rows: Sequence[dict[str, Any]],
    words: Words,
    currency: str,
    rates: Rates,
    link: Callable[[dict[str, Any]], str] | None = None,
    html: bool = False,
    headed: bool = False,
    numbering: Numbering | None = None,
) -> list[str]:
    """`column` down `rows`: each row's text (as shown, and as copied; MISSING when unknown), or
    with `html` its table cell (a `<td>` holding the raw value in `data-v` where the text does not
    read as it, for sorting and currency switching). A column at a time, each kind in one
    comprehension: a market page writes tens of thousands of cells (numbers and moments need no
    escaping). The cells are as short as HTML allows, as the page's size and its compression
    time grow with them: no end tag (the next cell or row ends a cell), no class (the table's
    classes align columns, `table_classes`), numbers' `data-v` unquoted (a repr has no space or quote).
    `headed`: each row's head carries what the script derives the CNY figures from (the market's
    rows, `DERIVED_MONEY`), so a figure that is what it derives needs no `data-v`; and each worded
    column's head its words' values (`worded`), so a word that reads back as its value needs none
    either. `numbering`: the
    numbers of the listed columns' texts (`LISTED`), for their cells to link to their item below the
    table by; and each price's rank, the native price's `data-v` (`Numbering`)."""
    key, kind = column.key, column.kind
    derive = DERIVED.get(key)
    values = [row.get(key) for row in rows] if derive is None else [derive(row) for row in rows]
    missing = f"<td>{MISSING}" if html else MISSING

    if kind == "money":
        shown = values
        if currency != CNY:
            shown = [
                None if v is None else convert(v, row, currency, rates) for v, row in zip(values, rows, strict=True)
            ]
        texts = [MISSING if v is None else f"{v:.2f}" if abs(v) >= 1 else f"{v:.4f}" for v in shown]
        if currency == NATIVE:
            texts = [
                t if t == MISSING else f"{t} {escape(r.get('currency') or '')}"
                for t, r in zip(texts, rows, strict=True)
            ]
        if not html:
            return [MISSING if v is None else t for v, t in zip(values, texts, strict=True)]
        derived = DERIVED_MONEY.get(key) if headed else None
        if derived is not None:  # `data-v=""`: none, where the script would work one out
            return [
                (missing if derived(row) is None else f'<td data-v="">{MISSING}')
                if v is None
                else f"<td>{t}"
                if v == derived(row)
                else f"<td data-v={v!r}>{t}"
                for v, t, row in zip(values, texts, rows, strict=True)
            ]
        return [missing if v is None else f"<td data-v={v!r}>{t}" for v, t in zip(values, texts, strict=True)]
    if kind == "native":
        units = {unit: escape(words.value("unit", unit)) for unit in {row.get("unit") for row in rows}}
        texts = [
            None if v is None else f"{number(v)} {escape(r.get('currency') or '')}/{units[r.get('unit')]}"
            for v, r in zip(values, rows, strict=True)
        ]
        if not html:
            return [MISSING if t is None else unescape(t) for t in texts]
        ranks = numbering.prices if numbering is not None and key in RANKED else None
        if ranks is not None:  # a price not ranked (offers changed meanwhile) keeps its value
            return [
                missing if v is None else f"<td data-v={ranks[v] if v in ranks else repr(v)}>{t}"
                for v, t in zip(values, texts, strict=True)
            ]
        return [missing if v is None else f"<td{raw_value(v)}>{t}" for v, t in zip(values, texts, strict=True)]
    if kind == "number":
        if not html:
            return [MISSING if v is None else number(v) for v in values]
        return [missing if v is None else f"<td{raw_value(v)}>{number(v)}" for v in values]
    if kind == "when":
        stale = escape(words("stale"))
        badged = key == "observed_at"
        out = []
        for value, row in zip(values, rows, strict=True):
            if value is None:
                out.append(missing)
                continue
            value = escape(str(value))
            text = moment(value)
            if badged and row.get("stale"):
                if not html:
                    out.append(f"{text} ({unescape(stale)})")
                    continue
                why = row.get("held_reason")
                title = f' title="{escape(why)}"' if why else ""
                text += f' <span class="badge stale"{title}>{stale}</span>'
            out.append(f'<td data-v="{value}">{text}' if html else text)
        return out
    listed = numbering.listed.get(key) if html and numbering is not None else None
    if kind == "link":  # no `rel`: Referrer-Policy same-origin sends no referrer away, a link opened in place no opener
        if not html:
            return [str(v) if v else MISSING for v in values]
        places = listed.places if listed is not None else {}
        written = {
            v: missing
            if not v
            else f"<td><a href=#{LISTED[key]}{places[v]}>{_host(v)}</a>"
            if v in places
            else f'<td><a href="{escape(str(v))}">{_host(v)}</a>'
            for v in set(values)
        }
        return [written[v] for v in values]
    if kind in ("vocab", "flag"):
        vocabulary = VOCABULARY.get(key, "")
        read_back = worded(column, words) if headed else {}  # the words the column's head carries
        written: dict[Any, str] = {}  # a handful of values, each written once
        for value in set(values):
            text = words.flag(value) if kind == "flag" else words.value(vocabulary, value)
            raw = None if value is None else str(int(value)) if kind == "flag" else str(value)
            # availability's `data-v` also colours the dot before its word (style.css), so it is always written
            spelled = key == "availability" or read_back.get(text, text) != raw
            attr = f' data-v="{escape(raw)}"' if raw is not None and spelled else ""
            written[value] = f"<td{attr}>{escape(text)}" if html else text
        return [written[v] for v in values]
    if kind == "note" and listed is not None:
        written = {}
        for value in set(values):
            place = listed.places.get(value)
            written[value] = (
                f"<td><a href=#{LISTED[key]}{place}>{place}</a>"
                if place
                else missing
                if value is None
                else f"<td>{escape(str(value))}"
            )
        return [written[v] for v in values]
    texts = [
        None
        if v is None or v == [] or v == {}
        else json.dumps(v, ensure_ascii=False)
        if isinstance(v, list | dict)
        else str(v)
        for v in values
    ]
    if not html:
        return [MISSING if t is None else t for t in texts]
    escaped = {t: escape(t) for t in set(texts) if t is not None}  # names repeat down a column
    if link is not None:
        return [
            missing if t is None else f'<td><a href="{escape(link(row))}">{escaped[t]}</a>'
            for t, row in zip(texts, rows, strict=True)
        ]
    return [missing if t is None else f"<td>{escaped[t]}" for t in texts]


def csv_value(text: str) -> str:
    return "" if text == MISSING else text


def markdown_value(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
