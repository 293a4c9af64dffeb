"""The ECB daily reference-rate file, parsed as XML (single-quoted attributes, default namespace)."""

from __future__ import annotations

from datetime import date

import pytest

from collectors import fx_ecb
from collectors.base import RawResponse
from collectors.errors import ParseError
from tests.conftest import OBSERVED, fetched_of, raw_fixture


def test_parses_the_real_daily_file() -> None:
    rates = fx_ecb.parse(fetched_of(raw_fixture("fx", "eurofxref-daily.xml", fx_ecb.DAILY_URL)))
    by_currency = {r.currency: r for r in rates}
    assert len(rates) == 31
    assert by_currency["USD"].rate == 1.0163 and by_currency["CNY"].rate == 6.8095
    assert by_currency["INR"].rate == 80.5280
    assert {r.date for r in rates} == {date(2022, 7, 8)}


def test_double_quoted_attributes_parse_the_same() -> None:
    text = raw_fixture("fx", "eurofxref-daily.xml", fx_ecb.DAILY_URL).text().replace("'", '"')
    raw = RawResponse(url=fx_ecb.DAILY_URL, fetched_at=OBSERVED, body=text.encode())
    assert {r.currency: r.rate for r in fx_ecb.parse_daily_xml(raw)}["CNY"] == 6.8095


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html><body>Service unavailable</body>", "not XML"),
        (b"<?xml version='1.0'?><Envelope><Cube/></Envelope>", "no Cube"),
        (b"<Envelope><Cube><Cube time='2022-07-08'><Cube currency='USD' rate='1.0'/></Cube></Cube></Envelope>", "CNY"),
        (b"<Envelope><Cube><Cube time='08/07/2022'><Cube currency='USD' rate='1'/></Cube></Cube></Envelope>", "date"),
    ],
)
def test_changed_or_broken_files_fail_loudly(body: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        fx_ecb.parse_daily_xml(RawResponse(url=fx_ecb.DAILY_URL, fetched_at=OBSERVED, body=body))
