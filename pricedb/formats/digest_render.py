"""The digest for people (Markdown) and for feed readers (Atom, RFC 4287).

Atom entry ids are tag URIs (RFC 4151) built from the day alone, so a feed reader or a spreadsheet
feed import (Google Sheets `IMPORTFEED`) sees the same entry for the same day however often the
feed is fetched; `updated` is when that day's digest was built."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

ATOM_NS = "http://www.w3.org/2005/Atom"
TAG_AUTHORITY = "gpuprice"
TAG_DATE = "2026"


def _num(value: float | None, digits: int = 4) -> str:
    return "—" if value is None else f"{value:,.{digits}f}".rstrip("0").rstrip(".")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}%"


def _offer_cell(row: dict[str, Any]) -> str:
    return f"{row['provider']} | {row['region']} | {row['sku']} | {row['pricing']}"


def title(digest: dict[str, Any]) -> str:
    return f"GPU price digest {digest['date']}"


def to_markdown(digest: dict[str, Any]) -> str:
    lines = [
        f"# {title(digest)} ({digest['time_zone']})",
        "",
        f"Compared to {digest['compared_to']}. {digest['summary']}",
    ]
    if digest.get("note"):
        lines += ["", f"_{digest['note']}_"]
    if digest["changes"]:
        lines += ["", "## Price changes", "",
                  "| provider | region | sku | pricing | old | new | change | % | ¥/GB·h old → new |",
                  "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
        for c in digest["changes"]:
            lines.append(
                f"| {_offer_cell(c)} | {_num(c['old_price'], 6)} "
                f"| {_num(c['new_price'], 6)} {c['currency']}/{c['unit']} "
                f"| {_num(c['change'], 6)} | {_pct(c['pct'])} "
                f"| {_num(c['old_cny_per_gb_hour'])} → {_num(c['new_cny_per_gb_hour'])} |"
            )
    for key, heading in (("new", "New offers"), ("withdrawn", "Withdrawn offers")):
        if digest[key]:
            lines += ["", f"## {heading}", "", "| provider | region | sku | pricing | price | ¥/GB·h |",
                      "| --- | --- | --- | --- | ---: | ---: |"]  # fmt: skip
            for row in digest[key]:
                lines.append(
                    f"| {_offer_cell(row)} | {_num(row['price'], 6)} {row['currency']}/{row['unit']} "
                    f"| {_num(row['cny_per_gb_hour'])} |"
                )
    if digest["failed_providers"]:
        lines += ["", "## Failed or stale providers", ""]
        for p in digest["failed_providers"]:
            stale = f"; stale: {', '.join(p['stale_pricings'])}" if p["stale"] else ""
            error = f": {p['error']}" if p["error"] else ""
            lines.append(f"- **{p['provider']}**: last run {p['status']}{error} "
                         f"(last success {p['last_success_at'] or 'never'}{stale})")  # fmt: skip
    if digest["cheapest"]:
        lines += ["", "## Cheapest per GPU memory size and pricing", "",
                  "| GPU | pricing | provider | region | sku | GPUs | ¥/GB·h | ¥/h |",
                  "| --- | --- | --- | --- | --- | ---: | ---: | ---: |"]  # fmt: skip
        for row in digest["cheapest"]:
            lines.append(
                f"| {row['gpu_model']} {_size(row)} | {row['pricing']} | {row['provider']} "
                f"| {row['region']} | {row['sku']} | {row['gpu_count']} | {_num(row['cny_per_gb_hour'])} "
                f"| {_num(row['cny_per_hour'], 2)} |"
            )
    for d in digest.get("deliveries", []):
        if d["status"] != "ok":
            lines += ["", f"_Delivery to {d['target']} failed at {d['attempted_at']}: {d['error']}_"]
    return "\n".join(lines) + "\n"


def _size(row: dict[str, Any]) -> str:
    """`40GB`, or for a slice of one GPU `MIG 4g.40gb (40GB)` (digests stored before slices have no key)."""
    partition = row.get("gpu_partition")
    return f"{partition} ({row['gpu_memory_gb']:g}GB)" if partition else f"{row['gpu_memory_gb']:g}GB"


def entry_id(day: str) -> str:
    return f"tag:{TAG_AUTHORITY},{TAG_DATE}:digest:{day}"


def to_atom(digests: list[dict[str, Any]], base_url: str, feed_updated: str) -> bytes:
    """An Atom feed with one entry per stored digest (newest first)."""
    ET.register_namespace("", ATOM_NS)

    def sub(parent: ET.Element, name: str, text: str | None = None, **attrs: str) -> ET.Element:
        element = ET.SubElement(parent, f"{{{ATOM_NS}}}{name}", attrs)
        if text is not None:
            element.text = text
        return element

    feed = ET.Element(f"{{{ATOM_NS}}}feed")
    sub(feed, "id", f"tag:{TAG_AUTHORITY},{TAG_DATE}:digests")
    sub(feed, "title", "gpuprice: daily GPU rental price digest")
    sub(feed, "subtitle", "Price changes, new and withdrawn offers, failed providers and the cheapest ¥/GB·h per day")
    sub(feed, "updated", feed_updated)
    author = sub(feed, "author")
    sub(author, "name", "gpuprice")
    sub(feed, "link", rel="self", type="application/atom+xml", href=f"{base_url}/digest.atom")
    sub(feed, "link", rel="alternate", type="application/json", href=f"{base_url}/digest")
    sub(feed, "generator", "gpuprice")
    for digest in digests:
        day = digest["date"]
        entry = sub(feed, "entry")
        sub(entry, "id", entry_id(day))
        sub(entry, "title", f"{title(digest)}: {digest['summary']}")
        sub(entry, "updated", digest["built_at"])
        sub(entry, "published", digest["built_at"])
        sub(entry, "link", rel="alternate", type="text/markdown", href=f"{base_url}/digest?date={day}&format=md")
        sub(entry, "link", rel="related", type="application/json", href=f"{base_url}/digest?date={day}")
        sub(entry, "summary", digest["summary"])
        sub(entry, "content", to_markdown(digest), type="text")
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)
