"""A market row's head: the attributes of its `<tr>` after its `data-k`, what the page's script needs
besides the row's cells to switch currency and sort in place.

Every row carries its FX day (`data-d`) and native currency (`data-c`). The script works out the
row's CNY figures from its ¥/h, GPUs and GB per GPU (table.DERIVED_MONEY), and its native figures
with its FX rate; it reads each of those from the row's own cells where the view shows their
column, so the head repeats only what the view does not show:
- ¥/h: the native price the price cell shows × the FX rate, one IEEE multiplication (the same double in
  JavaScript and Python), which is how pricedb.normalize works out an hourly price. Where the view
  shows no price, or that product is not the stored ¥/h bit for bit (a price per month or term, a
  price shown rounded), the head keeps it exactly: `data-h` (its repr, 16-17 digits: the largest
  part of a row's compressed bytes, ~9 of them).
- GPUs (`data-n`), GB per GPU (`data-m`) and the FX rate (`data-fx`): their cells (`data-v`, else
  the text) where shown.
A value the row does not have is `""` in the head."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from html import escape
from typing import Any

from api.web.cell_memo import Way
from api.web.money import LATEST
from api.web.table import number

# The columns whose cells the script reads a row's figures from when the view shows them, in order.
READ_FROM_CELLS = ("price", "gpu_count", "gpu_memory_gb", "fx_rate")
HEAD = "<tr>"  # a head way's first item (no column is named so)


def cells_read(shown: Collection[str]) -> tuple[str, ...]:
    """Which of READ_FROM_CELLS a view showing the columns `shown` lets the script read from its cells."""
    return tuple(key for key in READ_FROM_CELLS if key in shown)


def head_way(read: tuple[str, ...]) -> Way:
    """The cell memo's way of the heads of a view reading `read` from its cells (a column of their own)."""
    return (HEAD, read)


def every_head_way() -> list[tuple[str, ...]]:
    """Every `read` a view can have: each subset of READ_FROM_CELLS."""
    subsets: list[tuple[str, ...]] = [()]
    for key in READ_FROM_CELLS:
        subsets += [(*subset, key) for subset in subsets]
    return [tuple(k for k in READ_FROM_CELLS if k in subset) for subset in subsets]


def _number(value: Any) -> str:
    return '""' if value is None else repr(value)


def per_hour_from_price(row: dict[str, Any]) -> float | None:
    """The ¥/h the script works out from the price cell's number and `data-fx` (None: it cannot)."""
    price, rate = row.get("price"), row.get("fx_rate")
    if price is None or rate is None:
        return None
    return float(number(price)) * rate


def row_heads(rows: Sequence[dict[str, Any]], read: tuple[str, ...] = ()) -> list[str]:
    """Each row's head for a view whose script reads `read` (cells_read) from the row's cells."""
    price_shown = "price" in read
    count_attr = "" if "gpu_count" in read else " data-n="
    memory_attr = "" if "gpu_memory_gb" in read else " data-m="
    rate_shown = "fx_rate" in read
    heads = []
    for row in rows:
        per_hour = row.get("cny_per_hour")
        head = f' data-d="{row.get("fx_date") or LATEST}" data-c="{escape(row.get("currency") or "")}"'
        if not rate_shown:
            head += f" data-fx={_number(row.get('fx_rate'))}"
        if not (price_shown and per_hour is not None and per_hour_from_price(row) == per_hour):
            head += f" data-h={_number(per_hour)}"
        if count_attr:
            head += count_attr + _number(row.get("gpu_count"))
        if memory_attr:
            head += memory_attr + _number(row.get("gpu_memory_gb"))
        heads.append(head + ">")
    return heads
