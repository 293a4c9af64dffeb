"""AWS list prices: parsing the Price List bulk CSV (offers, traps, preamble, broken files), the
download pre-filter, fetch wiring (region URLs, base URL, retries), offline replay and sanity."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from collections import Counter
from pathlib import Path

import httpx
import pytest
import respx

from collectors.aws import AwsCollector, bulk
from collectors.base import Fetched, RawResponse
from collectors.errors import FetchError, ParseError
from collectors.http import Http, make_client
from collectors.replay import Replay, ReplayTransport
from collectors.sanity import check_quotes
from pricedb.card_names import identify
from pricedb.models import Pricing, Unit
from pricedb.settings import Settings
from tests.conftest import FIXTURES, OBSERVED, fixture_bytes, raw_fixture

REGIONS = ("us-east-1", "us-west-2", "eu-central-1", "ap-northeast-1")
FILES = {region: f"price_list_{region}.csv" for region in REGIONS}
OD, R1, R3 = Pricing.ON_DEMAND, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y

# (region, sku, pricing) -> USD per instance-hour: every offer the fixtures hold, and nothing else.
EXPECTED = {
    ("us-east-1", "p4d.24xlarge", OD): 21.957642,
    ("us-east-1", "p4de.24xlarge", OD): 27.44705,
    ("us-east-1", "p4de.24xlarge", R1): 17.40137,
    ("us-east-1", "p4de.24xlarge", R3): 11.71777,
    ("us-east-1", "p6-b200.48xlarge", OD): 113.9328,
    ("us-east-1", "p5.48xlarge", OD): 55.04,
    ("us-east-1", "p5.4xlarge", OD): 6.88,
    ("us-east-1", "p5en.48xlarge", OD): 63.296,
    ("us-east-1", "p3.2xlarge", OD): 3.06,
    ("us-east-1", "p3.16xlarge", OD): 24.48,
    ("us-east-1", "p3dn.24xlarge", OD): 31.212,
    ("us-east-1", "g7e.2xlarge", OD): 3.36312,
    ("us-east-1", "g6e.xlarge", OD): 1.861,
    ("us-east-1", "g6e.xlarge", R1): 1.17243,
    ("us-east-1", "g6e.12xlarge", OD): 10.49264,
    ("us-east-1", "g6e.12xlarge", R1): 6.61036,
    ("us-east-1", "g6e.48xlarge", OD): 30.13118,
    ("us-east-1", "g6.2xlarge", OD): 0.9776,
    ("us-east-1", "g6.2xlarge", R1): 0.63642,
    ("us-east-1", "g6.48xlarge", OD): 13.3504,
    ("us-east-1", "g6.48xlarge", R1): 8.69111,
    ("us-east-1", "g5.xlarge", OD): 1.006,
    ("us-east-1", "g5.12xlarge", OD): 5.672,
    ("us-east-1", "g5.48xlarge", OD): 16.288,
    ("us-east-1", "g5g.xlarge", OD): 0.42,
    ("us-east-1", "g4dn.xlarge", OD): 0.526,
    ("us-east-1", "g4dn.12xlarge", OD): 3.912,
    ("us-east-1", "g4dn.12xlarge", R1): 2.465,
    ("us-east-1", "g4ad.xlarge", OD): 0.37853,
    ("us-east-1", "g4ad.xlarge", R1): 0.23847,
    ("us-east-1", "g3.4xlarge", OD): 1.14,
    ("us-east-1", "g6f.large", OD): 0.202,
    ("us-west-2", "p4d.24xlarge", OD): 21.95764,
    ("us-west-2", "p4de.24xlarge", OD): 27.44705,
    ("us-west-2", "g6e.xlarge", OD): 1.861,
    ("us-west-2", "g5.xlarge", OD): 1.006,
    ("us-west-2", "p5.48xlarge", OD): 55.04,
    ("us-west-2", "g4dn.12xlarge", OD): 3.912,
    ("eu-central-1", "p4d.24xlarge", OD): 27.43298,
    ("eu-central-1", "p4de.24xlarge", OD): 34.29122,
    ("eu-central-1", "g6e.xlarge", OD): 2.327,
    ("eu-central-1", "g4dn.12xlarge", OD): 4.89,
    ("eu-central-1", "g6.48xlarge", OD): 16.69464,
    ("ap-northeast-1", "p4d.24xlarge", OD): 30.09784,
    ("ap-northeast-1", "p4de.24xlarge", OD): 37.6223,
    ("ap-northeast-1", "g6e.xlarge", OD): 2.699,
    ("ap-northeast-1", "p5.48xlarge", OD): 68.8,
    ("ap-northeast-1", "g4dn.12xlarge", OD): 5.281,
    ("ap-northeast-1", "g6.48xlarge", OD): 19.36206,
}
A100_OFFERS = {k: v for k, v in EXPECTED.items() if k[1] in ("p4d.24xlarge", "p4de.24xlarge")}
# What AWS publishes per instance type (its instance-type pages, as in instances.vantage.sh data): the
# GPU's name and the instance's total GPU memory in GB. Independent of collectors.aws.instance_types.
PUBLISHED = {
    "p6-b200.48xlarge": ("NVIDIA B200", 1432), "p5.48xlarge": ("NVIDIA H100", 640), "p5.4xlarge": ("NVIDIA H100", 80),
    "p5en.48xlarge": ("NVIDIA H200", 1128), "p4d.24xlarge": ("NVIDIA A100", 320), "p4de.24xlarge": ("NVIDIA A100", 640),
    "p3.2xlarge": ("NVIDIA V100", 16), "p3.16xlarge": ("NVIDIA V100", 128), "p3dn.24xlarge": ("NVIDIA V100", 256),
    "g7e.2xlarge": ("NVIDIA RTX PRO 6000 Blackwell", 96), "g6e.xlarge": ("NVIDIA L40S", 48),
    "g6e.12xlarge": ("NVIDIA L40S", 192), "g6e.48xlarge": ("NVIDIA L40S", 384), "g6.2xlarge": ("NVIDIA L4", 24),
    "g6.48xlarge": ("NVIDIA L4", 192), "g5.xlarge": ("NVIDIA A10G", 24), "g5.12xlarge": ("NVIDIA A10G", 96),
    "g5.48xlarge": ("NVIDIA A10G", 192), "g5g.xlarge": ("NVIDIA T4G", 16), "g4dn.xlarge": ("NVIDIA T4", 16),
    "g4dn.12xlarge": ("NVIDIA T4", 64), "g4ad.xlarge": ("AMD Radeon Pro V520", 8), "g3.4xlarge": ("NVIDIA M60", 8),
    "g6f.large": ("NVIDIA L4", 3),
}  # fmt: skip
# The fractional sizes: the share of one GPU AWS's g6 page gives each (the rest are whole cards).
PUBLISHED_SHARES = {"g6f.large": 1 / 8}
# Rows priced like an offer that are traps all the same: unused capacity reservations cost the on-demand rate.
SAME_PRICE_TRAPS = {"8ZG4WEXH3TJ5N7RB", "A3KX7TZB6MWQ9E5P"}
_TERMS = {"JRTCKXETXF": OD, "4NA7Y494T4": R1, "BPH4J8HBKS": R3}


def csv_rows(region: str) -> list[dict[str, str]]:
    lines = fixture_bytes("aws", f"price_list_{region}.csv").decode().splitlines()
    header, *rows = list(csv.reader(lines[5:]))
    return [dict(zip(header, row, strict=True)) for row in rows]


# The rows that are offers, by (SKU, OfferTermCode): priced as an offer of EXPECTED, and not a same-price trap.
OFFER_ROWS = {
    (row["SKU"], row["OfferTermCode"])
    for region in REGIONS
    for row in csv_rows(region)
    if row["OfferTermCode"] in _TERMS
    and row["SKU"] not in SAME_PRICE_TRAPS
    and EXPECTED.get((row["Region Code"], row["Instance Type"], _TERMS[row["OfferTermCode"]]))
    == float(row["PricePerUnit"])
}


def run(coro):
    return asyncio.run(coro)


def list_raw(region: str = "us-east-1", body: bytes | None = None, label: str | None = None) -> RawResponse:
    url = bulk.price_list_url(region)
    if body is None:
        return raw_fixture("aws", FILES[region], url, label=f"list:{region}" if label is None else label)
    return RawResponse(url=url, fetched_at=OBSERVED, body=body, label=f"list:{region}" if label is None else label)


def offers(quotes) -> dict:
    return {(q.region, q.sku, q.pricing): q.price for q in quotes}


def lines_of(region: str = "us-east-1") -> list[bytes]:
    return fixture_bytes("aws", FILES[region]).splitlines(keepends=True)


def parse(region: str = "us-east-1", body: bytes | None = None):
    return AwsCollector(Settings()).parse(Fetched([list_raw(region, body)]))


# ----- parse: the offers ----------------------------------------------------------------------
def test_us_east_1_gives_exactly_its_offers() -> None:
    quotes = parse("us-east-1")
    assert offers(quotes) == {k: v for k, v in EXPECTED.items() if k[0] == "us-east-1"}
    for q in quotes:
        assert (q.provider, q.currency, q.unit) == ("aws", "USD", Unit.HOUR)
        assert (q.billing_increment_s, q.billing_minimum_s) == (1, 60)
        assert q.source_url == bulk.price_list_url("us-east-1") and q.observed_at == OBSERVED
        assert "20250912225308" in q.notes  # the price list version read from the preamble


def test_every_offer_has_the_gpus_of_its_source_row_and_of_aws_s_published_specs() -> None:
    """Per stored offer: the GPU count is its row's `GPU` column; the card is the one AWS names for the
    instance type and count × memory per card is the instance's total GPU memory AWS publishes."""
    quotes = [q for region in REGIONS for q in parse(region)]
    assert {q.sku for q in quotes} == set(PUBLISHED)
    rows = {(row["Region Code"], row["Instance Type"]): row for region in REGIONS for row in csv_rows(region)
            if (row["SKU"], row["OfferTermCode"]) in OFFER_ROWS}  # fmt: skip
    for q in quotes:
        row = rows[(q.region, q.sku)]
        name, total_gb = PUBLISHED[q.sku]
        assert q.gpu_count == int(row["GPU"]), q.sku
        assert q.gpu_model == identify(name).model, q.sku
        assert abs(q.gpu_count * q.gpu_memory_gb - total_gb) <= 0.07 * total_gb, q.sku
        assert q.gpu_fraction == PUBLISHED_SHARES.get(q.sku), q.sku
        assert (q.gpu_partition is None) == (q.sku not in PUBLISHED_SHARES), q.sku


def test_the_a100_offers_keep_their_meaning() -> None:
    quotes = [q for q in parse("us-east-1") if q.gpu_model == "A100"]
    assert offers(quotes) == {k: v for k, v in A100_OFFERS.items() if k[0] == "us-east-1"}
    for q in quotes:
        assert (q.gpu_model, q.gpu_count, q.currency, q.unit) == ("A100", 8, "USD", Unit.HOUR)
        assert q.gpu_memory_gb == {"p4d.24xlarge": 40.0, "p4de.24xlarge": 80.0}[q.sku]
        assert (q.form_factor, q.interconnect) == ("SXM4", "NVLink")
        assert (q.billing_increment_s, q.billing_minimum_s) == (1, 60)
        assert (
            q.source_url
            == "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.csv"
        )
        assert q.observed_at == OBSERVED
        assert "20250912225308" in q.notes  # the price list version read from the preamble


@pytest.mark.parametrize("region", ["us-west-2", "eu-central-1", "ap-northeast-1"])
def test_small_regions_give_their_on_demand_offers(region: str) -> None:
    assert offers(parse(region)) == {k: v for k, v in EXPECTED.items() if k[0] == region}


def test_reserved_quotes_are_standard_no_upfront_hourly_rates() -> None:
    reserved = [q for q in parse("us-east-1") if q.pricing.is_reserved]
    assert {(q.sku, q.pricing, q.price) for q in reserved} == {
        (sku, pricing, price) for (region, sku, pricing), price in EXPECTED.items() if pricing.is_reserved
    }
    assert all(q.unit is Unit.HOUR and "No Upfront" in q.notes for q in reserved)


def _rows(region: str) -> tuple[list[bytes], list[bytes]]:
    lines = lines_of(region)
    return lines[:6], lines[6:]


@pytest.mark.parametrize("region", REGIONS)
def test_every_trap_row_is_excluded_on_its_own(region: str) -> None:
    """Each data row alone under the real preamble and header: only the offer rows give a quote."""
    leading, rows = _rows(region)
    traps = 0
    for row in rows:
        fields = next(csv.reader([row.decode()]))
        quotes = parse(region, b"".join(leading) + row)
        if (fields[0], fields[1]) in OFFER_ROWS:
            assert len(quotes) == 1, row[:120]
        else:
            traps += 1
            assert quotes == [], f"trap row reached the output: {row[:160]!r}"
    assert traps >= (15 if region == "us-east-1" else 1)


def test_trap_prices_never_appear() -> None:
    prices = {q.price for region in REGIONS for q in parse(region)}
    trap_prices = {26.373642, 26.37364, 24.15341, 0.0, 17.712, 22.101642, 33.477642, 21.81653, 19.98615, 8.28614, 0.096,
                   142.416, 0.7582, 1.19, 0.579, 31.464, 1.35, 1.173}  # fmt: skip
    assert not prices & trap_prices


def test_a_fractional_size_is_a_slice_and_an_unknown_family_is_counted_not_stored() -> None:
    """g6f.large is 1/8 of an L4 (3 GB of its memory), never a whole L4; p6-b300's 262 GB B300 is not
    in the card table: no offer, its reason counted."""
    skipped: Counter[str] = Counter()
    quotes = bulk.parse_price_list(list_raw("us-east-1"), AwsCollector.quote, "us-east-1", skipped)
    (g6f,) = [q for q in quotes if q.sku == "g6f.large"]
    assert (g6f.gpu_model, g6f.gpu_count, g6f.gpu_memory_gb) == ("L4", 1, 3.0)
    assert (g6f.gpu_fraction, g6f.gpu_partition) == (0.125, "1/8 GPU")
    assert not {q.sku for q in quotes} & {"p6-b300.48xlarge", "inf2.xlarge"}
    assert dict(skipped) == {"p6-b300.48xlarge: GPU family 'p6-b300' not in the table (card unknown)": 1}


def test_the_run_reports_each_unknown_gpu_with_its_count(settings: Settings) -> None:
    fetched = Fetched([list_raw(region) for region in REGIONS])
    quotes, refused = AwsCollector(settings).parse_report(fetched)
    assert quotes and refused == [
        {
            "offer": "p6-b300.48xlarge",
            "reason": "unknown GPU, not collected: GPU family 'p6-b300' not in the table (card unknown) (1 items)",
        }
    ]


def test_the_price_list_count_wins_over_the_table_and_the_difference_is_noted() -> None:
    lines = lines_of("us-west-2")
    g4dn = next(line for line in lines if b"g4dn.12xlarge" in line)
    changed = g4dn.replace(b',"4","NA",', b',"2","NA",')
    assert changed != g4dn
    (quote,) = parse("us-west-2", b"".join(lines[:6]) + changed)
    assert quote.gpu_count == 2 and "the price list says 2 GPUs, AWS's documentation 4" in quote.notes
    unknown = g4dn.replace(b',"4","NA",', b',"NA","NA",')
    assert parse("us-west-2", b"".join(lines[:6]) + unknown)[0].gpu_count == 4  # no count listed: the table


def test_other_region_codes_in_a_file_are_skipped() -> None:
    """A region file also lists Local/Wavelength Zones with their own Region Code: only the file's region counts."""
    body = fixture_bytes("aws", FILES["us-east-1"]).replace(b'"us-east-1",,"Amazon', b'"us-east-1-bos-1",,"Amazon')
    assert parse("us-east-1", body) == []


# ----- parse: layout ---------------------------------------------------------------------------
def test_preamble_is_skipped_and_optional() -> None:
    lines = lines_of()
    assert lines[0].startswith(b'"FormatVersion"') and lines[5].startswith(b'"SKU","OfferTermCode"')
    without_preamble = b"".join(lines[5:])
    assert offers(parse("us-east-1", without_preamble)) == offers(parse("us-east-1"))


def test_crlf_line_endings_parse_the_same() -> None:
    body = fixture_bytes("aws", FILES["us-east-1"]).replace(b"\n", b"\r\n")
    assert offers(parse("us-east-1", body)) == offers(parse("us-east-1"))


@pytest.mark.parametrize("block", [64, 1000, 4096])
def test_rows_split_across_read_blocks_are_found(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(bulk, "_BLOCK", block)
    assert offers(parse("us-east-1")) == {k: v for k, v in EXPECTED.items() if k[0] == "us-east-1"}


def test_a_file_without_final_newline_keeps_its_last_row() -> None:
    body = fixture_bytes("aws", FILES["us-west-2"]).rstrip(b"\n")
    assert offers(parse("us-west-2", body)) == offers(parse("us-west-2"))


def test_columns_are_found_by_name_not_position() -> None:
    """AWS adds and moves columns between versions; swap two columns everywhere and nothing changes."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    lines = lines_of()
    for number, line in enumerate(lines):
        fields = next(csv.reader([line.decode()]))
        if number >= 5:
            fields[3], fields[19] = fields[19], fields[3]  # TermType <-> Instance Type
        writer.writerow(fields)
    assert offers(parse("us-east-1", out.getvalue().encode())) == offers(parse("us-east-1"))


@pytest.mark.parametrize("column", ["MarketOption", "CapacityStatus", "Pre Installed S/W", "Instance Type"])
def test_a_header_without_a_needed_column_is_a_parse_error_naming_it(column: str) -> None:
    lines = lines_of()
    lines[5] = lines[5].replace(f'"{column}",'.encode(), b'"Something Else",')
    with pytest.raises(ParseError, match=re.escape(repr(column))):
        parse("us-east-1", b"".join(lines))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty"),
        (b"".join(lines_of()[:5]), "no header row"),
        (b"<html><body><h1>503 Service Unavailable</h1></body></html>\n", "no header row"),
        (bytes(range(256)) * 40, "not CSV text|no header row|longer than"),
        (b'"FormatVersion","v1.0"\n"OfferCode","AmazonRDS"\n"SKU","OfferTermCode"\n', "AmazonRDS"),
    ],
    ids=["empty", "preamble-only", "html", "binary", "wrong-offer"],
)
def test_empty_or_garbled_files_are_parse_errors(body: bytes, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse("us-east-1", body)


def test_a_row_with_the_wrong_field_count_is_a_parse_error() -> None:
    lines = lines_of()
    lines[8] = lines[8].replace(b',"true"\n', b"\n")  # a p4d row cut short by one field
    with pytest.raises(ParseError, match="fields"):
        parse("us-east-1", b"".join(lines))


def test_a_non_numeric_price_is_a_parse_error() -> None:
    body = fixture_bytes("aws", FILES["us-west-2"]).replace(b'"21.9576400000"', b'"twenty-one"')
    with pytest.raises(ParseError, match="twenty-one"):
        parse("us-west-2", body)


def test_a_valid_file_without_gpu_rows_gives_no_quotes_not_an_error() -> None:
    """A region that sells no GPU instance is not broken; the runner still refuses a run with no quotes at all."""
    leading, rows = _rows("us-east-1")
    m5 = [row for row in rows if b"m5.large" in row]
    assert parse("us-east-1", b"".join(leading + m5)) == []


def test_unknown_labels_are_refused() -> None:
    with pytest.raises(ParseError, match="label"):
        AwsCollector(Settings()).parse(Fetched([list_raw(label="bogus:us-east-1")]))


# ----- the download pre-filter -------------------------------------------------------------------
def test_keep_line_keeps_preamble_header_and_gpu_rows_only() -> None:
    keep = bulk.KeepGpuLines()
    lines = lines_of()
    kept = [line for line in lines if keep(line)]
    assert kept[:6] == lines[:6]
    assert all(b'"GPU instance"' in line for line in kept[6:]) and len(kept) == len(lines) - 2
    assert not any(b"m5.large" in line or b"inf2.xlarge" in line for line in kept)
    assert offers(parse("us-east-1", b"".join(kept))) == offers(parse("us-east-1"))


# ----- fetch wiring ----------------------------------------------------------------------------
async def _fetch(settings: Settings, scope: str = "list", workdir: Path | None = None, sleep=None) -> Fetched:
    collector = AwsCollector(settings)
    async with make_client(settings) as client:
        http = Http(client, "aws", settings, workdir=workdir, **({"sleep": sleep} if sleep else {}))
        return await collector.fetch(http, collector.scope(scope))


def _two_regions(settings: Settings, **update) -> Settings:
    return settings.model_copy(update={"regions": {"aws": ["us-east-1", "us-west-2"]}, **update})


def test_default_regions_sell_p4d_and_p4de(settings: Settings) -> None:
    assert AwsCollector(settings).regions() == list(REGIONS)


def test_regions_setting_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUPRICE_AWS_REGIONS", "us-east-2, eu-west-1")
    assert AwsCollector(Settings()).regions() == ["us-east-2", "eu-west-1"]


def test_scopes_list_daily_and_spot_hourly(settings: Settings) -> None:
    collector = AwsCollector(settings)
    assert collector.scope("list").pricings == {OD, R1, R3} and collector.scope("list").default_interval_minutes == 1440
    assert collector.scope("spot").pricings == {Pricing.SPOT} and collector.scope("spot").default_interval_minutes == 60
    assert (AwsCollector.billing_increment_s, AwsCollector.billing_minimum_s) == (1, 60)


@respx.mock
def test_fetch_downloads_each_region_file_pre_filtered(settings: Settings, tmp_path: Path) -> None:
    routes = {
        region: respx.get(bulk.price_list_url(region)).mock(
            return_value=httpx.Response(200, content=fixture_bytes("aws", FILES[region]))
        )
        for region in ("us-east-1", "us-west-2")
    }
    fetched = run(_fetch(_two_regions(settings), workdir=tmp_path))
    assert [r.label for r in fetched.responses] == ["list:us-east-1", "list:us-west-2"]
    assert all(route.call_count == 1 for route in routes.values())
    on_disk = fetched.responses[0].path
    assert on_disk is not None and on_disk.parent == tmp_path and b"m5.large" not in on_disk.read_bytes()
    assert fetched.responses[0].url == bulk.price_list_url("us-east-1")
    assert offers(AwsCollector(settings).parse(fetched)) == {
        k: v for k, v in EXPECTED.items() if k[0] in ("us-east-1", "us-west-2")
    }


@respx.mock
def test_base_url_setting_rewrites_every_region_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUPRICE_AWS_BASE_URL", "http://mirror.test:9000/aws")
    monkeypatch.setenv("GPUPRICE_AWS_REGIONS", "us-east-1,us-west-2")
    settings = Settings(retry_base_delay_s=0, retry_max_delay_s=0)
    path = "/aws/offers/v1.0/aws/AmazonEC2/current/{}/index.csv"
    for region in ("us-east-1", "us-west-2"):
        respx.get(f"http://mirror.test:9000{path.format(region)}").mock(
            return_value=httpx.Response(200, content=fixture_bytes("aws", FILES[region]))
        )
    fetched = run(_fetch(settings, workdir=tmp_path))
    assert len(fetched.responses) == 2
    assert fetched.responses[1].url == bulk.price_list_url("us-west-2")  # quotes cite AWS, not the mirror
    assert offers(AwsCollector(settings).parse(fetched)) == {
        k: v for k, v in EXPECTED.items() if k[0] in ("us-east-1", "us-west-2")
    }


@respx.mock
def test_5xx_then_success_is_retried(settings: Settings, tmp_path: Path) -> None:
    route = respx.get(bulk.price_list_url("us-east-1")).mock(
        side_effect=[httpx.Response(503), httpx.Response(500), httpx.Response(200, content=lines_of()[0])]
    )
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1"]}})
    fetched = run(_fetch(settings, workdir=tmp_path))
    assert route.call_count == 3 and fetched.responses[0].path.read_bytes() == lines_of()[0]


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@respx.mock
def test_429_waits_as_long_as_retry_after_says(settings: Settings, tmp_path: Path) -> None:
    route = respx.get(bulk.price_list_url("us-east-1")).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, content=b"x\n")]
    )
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1"]}, "retry_max_delay_s": 60.0})
    sleeps = Sleeps()
    run(_fetch(settings, workdir=tmp_path, sleep=sleeps))
    assert route.call_count == 2 and sleeps.delays == [7.0]


@respx.mock
def test_timeouts_become_a_fetch_error_after_every_retry(settings: Settings, tmp_path: Path) -> None:
    route = respx.get(bulk.price_list_url("us-east-1")).mock(side_effect=httpx.ReadTimeout("slow"))
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1"]}})
    with pytest.raises(FetchError, match="timed out") as caught:
        run(_fetch(settings, workdir=tmp_path))
    assert route.call_count == settings.retry_attempts
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)


@respx.mock
def test_a_4xx_is_not_retried(settings: Settings, tmp_path: Path) -> None:
    route = respx.get(bulk.price_list_url("us-east-1")).mock(return_value=httpx.Response(403, text="AccessDenied"))
    settings = settings.model_copy(update={"regions": {"aws": ["us-east-1"]}})
    with pytest.raises(FetchError, match="HTTP 403"):
        run(_fetch(settings, workdir=tmp_path))
    assert route.call_count == 1


@respx.mock
def test_a_failed_region_leaves_no_downloaded_files_behind(settings: Settings, tmp_path: Path) -> None:
    respx.get(bulk.price_list_url("us-east-1")).mock(return_value=httpx.Response(200, content=lines_of()[0]))
    respx.get(bulk.price_list_url("us-west-2")).mock(return_value=httpx.Response(404))
    with pytest.raises(FetchError):
        run(_fetch(_two_regions(settings), workdir=tmp_path))
    assert list(tmp_path.iterdir()) == []


# ----- offline replay and sanity -----------------------------------------------------------------
async def _offline(settings: Settings, scope: str | None, workdir: Path) -> tuple[AwsCollector, Fetched]:
    collector = AwsCollector(settings)
    transport = ReplayTransport(Replay.load(settings.fixtures_dir, "aws"))
    async with make_client(settings, transport) as client:
        chosen = collector.scope(scope) if scope else collector.full_scope()
        return collector, await collector.fetch(Http(client, "aws", settings, workdir=workdir), chosen)


def test_offline_replays_every_request_for_the_default_regions(settings: Settings, tmp_path: Path) -> None:
    settings = settings.model_copy(update={"offline": True, "fixtures_dir": FIXTURES})
    collector, fetched = run(_offline(settings, None, tmp_path))
    assert fetched.not_covered == {} and fetched.notes == []
    quotes = collector.parse(fetched)
    assert offers(q for q in quotes if q.pricing is not Pricing.SPOT) == EXPECTED
    assert {q.region for q in quotes if q.pricing is Pricing.SPOT} == set(REGIONS)
    assert len(quotes) == len(EXPECTED) + 2 * len(REGIONS)  # the recorded spot answers hold p4d and p4de


def test_all_parsed_quotes_pass_the_shared_sanity_checks(settings: Settings, tmp_path: Path, fx_table) -> None:
    settings = settings.model_copy(update={"offline": True, "fixtures_dir": FIXTURES})
    collector, fetched = run(_offline(settings, None, tmp_path))
    quotes = collector.parse(fetched)
    accepted, rejected = check_quotes(quotes, fx_table, settings)
    assert rejected == [] and len(accepted) == len(quotes) == len(EXPECTED) + 8


def test_list_quotes_carry_vcpu_and_memory_from_the_price_list() -> None:
    rows = {
        row["Instance Type"]: row for row in csv_rows("us-east-1") if (row["SKU"], row["OfferTermCode"]) in OFFER_ROWS
    }
    for q in parse():
        row = rows[q.sku]
        assert (q.vcpus, q.memory_gib) == (int(row["vCPU"]), float(row["Memory"].removesuffix(" GiB"))), q.sku
    assert {(q.sku, q.vcpus, q.memory_gib) for q in parse() if q.gpu_model == "A100"} == {
        ("p4d.24xlarge", 96, 1152.0), ("p4de.24xlarge", 96, 1152.0)}  # fmt: skip
