"""A market row's head: the attributes of its `<tr>` after its `data-k` (if any), what the page's script needs
besides the row's cells to switch currency and sort in place.

The script converts a row's figures at its FX day's rates (`data-d`) and writes its native figures
with its currency (`data-c`); it works out the row's CNY figures from its ¥/h, GPUs and GB per GPU
(table.DERIVED_MONEY), and its native figures with its FX rate. It reads each of those from the
row's own cells where the view shows their column, so the head repeats only what the view does not
show (the FX day and the currency are `""` where a row has none, which their cells show as `—`):
- ¥/h: the native price the price cell shows × the FX rate, one IEEE multiplication (the same double
  in JavaScript and Python), which is how pricedb.normalize works out an hourly price. Where the
  view shows no price, or that product is not the stored ¥/h bit for bit (a price per month or
  term, a price shown rounded), the head keeps it exactly: `data-h` (its repr, 16-17 digits: the
  largest part of a row's compressed bytes, ~9 of them).
- GPUs (`data-n`), GB per GPU (`data-m`) and the FX rate (`data-fx`): their cells (`data-v`, else
  the text) where shown.
A value the row does not have is `""` in the head.

The head is written in parts, each a way of the cell memo of its own (`head_parts`): most parts
hold a few distinct texts down the rows (kept once each), so every part any view can ask for is
written ahead for ~6 slots a row, where a whole head per set of columns read would keep 16 heads
of ~80 distinct bytes a row."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from html import escape
from typing import Any

from api.web.cell_memo import Way
from api.web.money import LATEST
from api.web.table import number

Rows = Sequence[dict[str, Any]]
Writer = Callable[[Rows], list[str]]
# The columns whose cells the script reads a row's figures from when the view shows them, in order.
READ_FROM_CELLS = ("price", "gpu_count", "gpu_memory_gb", "fx_rate", "fx_date", "currency")
HEAD = "<tr>"  # the first item of a head part's way (no column is named so)
CARRIED = {"fx_rate": "fx", "gpu_count": "n", "gpu_memory_gb": "m"}  # column: its head attribute's name
TEXTS = ("fx_date", "currency")  # carried in the head's last part, which ends it (`_last`)


def cells_read(shown: Collection[str]) -> tuple[str, ...]:
    """Which of READ_FROM_CELLS a view showing the columns `shown` lets the script read from its cells."""
    return tuple(key for key in READ_FROM_CELLS if key in shown)


def _number(value: Any) -> str:
    return '""' if value is None else repr(value)


def per_hour_from_price(row: dict[str, Any]) -> float | None:
    """The ¥/h the script works out from the price cell's number and the FX rate (None: it cannot)."""
    price, rate = row.get("price"), row.get("fx_rate")
    if price is None or rate is None:
        return None
    return float(number(price)) * rate


def _carried(key: str) -> Writer:
    prefix = f" data-{CARRIED[key]}="
    return lambda rows: [prefix + _number(row.get(key)) for row in rows]


def _per_hour(price_shown: bool) -> Writer:
    def write(rows: Rows) -> list[str]:
        heads = []
        for row in rows:
            per_hour = row.get("cny_per_hour")
            derived = price_shown and per_hour is not None and per_hour_from_price(row) == per_hour
            heads.append("" if derived else f" data-h={_number(per_hour)}")
        return heads

    return write


def _last(day: bool, currency: bool) -> Writer:
    """The head's end: the row's FX day (`day`) and currency (`currency`) where the view shows neither's cell."""

    def write(rows: Rows) -> list[str]:
        days = [f' data-d="{row.get("fx_date") or LATEST}"' if day else "" for row in rows]
        currencies = [f' data-c="{escape(row.get("currency") or "")}"' if currency else "" for row in rows]
        return [f"{d}{c}>" for d, c in zip(days, currencies, strict=True)]

    return write


def _last_part(read: tuple[str, ...]) -> tuple[Way, Writer]:
    day, currency = (key not in read for key in TEXTS)
    return (HEAD, "d", day, "c", currency), _last(day, currency)


def head_parts(read: tuple[str, ...]) -> list[tuple[Way, Writer]]:
    """The parts of the heads of a view whose script reads `read` (cells_read) from the row's cells,
    in order, each with its way in the cell memo and how to write it for rows."""
    parts: list[tuple[Way, Writer]] = [((HEAD, "h", "price" in read), _per_hour("price" in read))]
    parts += [((HEAD, key), _carried(key)) for key in CARRIED if key not in read]
    return [*parts, _last_part(read)]


def every_head_part() -> list[tuple[Way, Writer]]:
    """Every part of a head any view can ask for (with the price shown or not, any cell read or none)."""
    ends = [_last_part(read) for read in ((), TEXTS[:1], TEXTS[1:], TEXTS)]
    return head_parts(("price",))[:1] + head_parts(())[:-1] + ends


def row_heads(rows: Rows, read: tuple[str, ...] = ()) -> list[str]:
    """Each row's head for a view whose script reads `read` from the row's cells, its parts joined."""
    return ["".join(parts) for parts in zip(*(write(rows) for _, write in head_parts(read)), strict=True)]
