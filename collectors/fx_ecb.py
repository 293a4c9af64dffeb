"""FX: the European Central Bank's euro foreign exchange reference rates.

Source: https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml (no key). A gesmes envelope
whose `Cube/Cube[@time]/Cube[@currency][@rate]` elements give units of each currency per 1 EUR for
one TARGET business day (published around 16:00 CET; no weekend or holiday files, so a quote on a
Sunday uses Friday's rates). The daily file uses single-quoted attributes and a default namespace:
it is read with an XML parser, never with regular expressions.
"""

from __future__ import annotations

from datetime import date
from xml.etree import ElementTree

from collectors.base import Fetched, RawResponse
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.models import FxRate

NAME = "fx"
DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
SOURCE = "ECB euro reference rates"
REQUIRED = ("USD", "CNY")  # without these nothing can be converted: a file lacking them is broken


async def fetch(http: Http) -> Fetched:
    return Fetched([await http.get(DAILY_URL, label="daily")])


def parse(fetched: Fetched) -> list[FxRate]:
    rates: list[FxRate] = []
    for raw in fetched.responses:
        rates.extend(parse_daily_xml(raw))
    return rates


def parse_daily_xml(raw: RawResponse) -> list[FxRate]:
    try:
        root = ElementTree.fromstring(raw.body if raw.path is None else raw.path.read_bytes())
    except ElementTree.ParseError as exc:
        raise ParseError(f"{raw.url}: not XML ({exc})") from exc
    rates: list[FxRate] = []
    for day in root.iter():
        if not day.tag.endswith("Cube") or "time" not in day.attrib:
            continue
        try:
            on = date.fromisoformat(day.attrib["time"])
        except ValueError as exc:
            raise ParseError(f"{raw.url}: bad date {day.attrib['time']!r}") from exc
        for cube in day:
            currency, rate = cube.attrib.get("currency"), cube.attrib.get("rate")
            if not currency or not rate:
                continue
            try:
                rates.append(FxRate(date=on, currency=currency, rate=float(rate), source=SOURCE))
            except ValueError as exc:
                raise ParseError(f"{raw.url}: bad rate {rate!r} for {currency}") from exc
    found = {r.currency for r in rates}
    missing = [c for c in REQUIRED if c not in found]
    if missing:
        raise ParseError(f"{raw.url}: no Cube[@time] with {', '.join(missing)} rates (has the file changed?)")
    return rates
