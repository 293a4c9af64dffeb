"""The manual quotes sheet: rows become quotes through the same checks and normalization as any
provider; bad rows are refused with file, line and reason while good rows load; a missing sheet is
a skipped run; offline mode reads the recorded sheet; the quotes go stale on the same rules."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collectors import runner
from collectors.base import Fetched, RawResponse
from collectors.errors import MissingCredentials, ParseError
from collectors.http import Http, make_client
from collectors.manual import ManualCollector
from collectors.manual.sheet import read_sheet
from collectors.sanity import check_quotes
from pricedb import clock
from pricedb.models import Availability, Pricing, RunStatus, Unit
from pricedb.normalize import normalize
from pricedb.queries import current_offers
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import FIXTURES, fixture_bytes
from tests.helpers import seed_fx

SHEET = FIXTURES / "manual" / "manual_quotes.csv"
BAD = FIXTURES / "manual" / "manual_quotes_bad_rows.csv"
USD_TO_CNY = 6.8095 / 1.0163  # ECB 2022-07-08 (fixtures/fx)
NOW = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
SOLD_OUT = ("manual", "us-east", "coreweave/HGX A100 80GB x8", "on_demand")
H100_NODE = ("manual", "us-east", "coreweave/HGX H100 80GB x8", "on_demand")
MIG_SLICE = ("manual", "us-east", "coreweave/A100 80GB MIG 3g.40gb", "on_demand")
HOURLY_WORD = "pricing 'hourly' is not one of on_demand, spot, monthly, reserved_1y, reserved_3y"

# offer key -> (price, currency, unit, gpu_count, gpu_memory_gb, availability, tax_included, date seen)
EXPECTED = {
    ("manual", "secure-cloud", "runpod/A100 SXM", "on_demand"): (1.79, "USD", "hour", 1, 80, "unknown", False, 9),
    ("manual", "community-cloud", "runpod/A100 SXM", "on_demand"): (1.39, "USD", "hour", 1, 80, "unknown", False, 9),
    ("manual", "cn", "zhixingyun/A100-PCIE-40GB", "on_demand"): (8.5, "CNY", "hour", 1, 40, "available", True, 20),
    ("manual", "cn", "zhixingyun/A100-PCIE-40GB", "monthly"): (4500, "CNY", "month", 1, 40, "available", True, 20),
    SOLD_OUT: (17.6, "USD", "hour", 8, 80, "sold_out", False, 18),
    ("manual", "cn", "zhixingyun/RTX4090-24G", "on_demand"): (2.6, "CNY", "hour", 1, 24, "available", True, 20),
    ("manual", "cn", "zhixingyun/A800-80G", "on_demand"): (7.2, "CNY", "hour", 1, 80, "available", True, 20),
    ("manual", "cn", "zhixingyun/A10-vGPU-12G", "on_demand"): (1.3, "CNY", "hour", 1, 12, "available", True, 20),
    H100_NODE: (48.0, "USD", "hour", 8, 80, "available", False, 18),
    MIG_SLICE: (1.1, "USD", "hour", 1, 40, "available", False, 18),
}  # fmt: skip
# What each gpu_model of the recorded sheet means, independent of the parser: (model, form factor,
# share of one GPU or None for a whole card).
CARD_OF_MODEL = {
    "A100 SXM 80GB": ("A100", "SXM4", None), "A100 PCIe 40GB": ("A100", "PCIe", None),
    "A100 SXM4 80GB": ("A100", "SXM4", None), "RTX 4090": ("RTX4090", "PCIe", None), "A800 80GB": ("A800", None, None),
    "A10 24GB": ("A10", "PCIe", 0.5), "H100 SXM5 80GB": ("H100", "SXM5", None),
    "A100 SXM4 80GB MIG 3g.40gb": ("A100", "SXM4", 3 / 7),
}  # fmt: skip


def raw_sheet(path: Path, body: bytes | None = None) -> RawResponse:
    return RawResponse(
        url=path.as_uri(), fetched_at=NOW, body=fixture_bytes("manual", path.name) if body is None else body,
        label=str(path),
    )  # fmt: skip


def sheet(body: str, name: str = "sheet.csv"):
    return read_sheet(raw_sheet(Path("/data") / name, body.encode()), ManualCollector.quote)


HEADER = "provider,region,sku,gpu_model,gpu_memory_gb,gpu_count,pricing,price,currency,unit,source_url,date_seen"
GOOD = "zhixingyun,cn,A100-40G,A100 PCIe 40GB,40,1,on_demand,8.5,CNY,hour,https://www.ai-galaxy.cn/,2026-11-20"


def test_the_recorded_sheet_gives_exactly_its_rows() -> None:
    result = read_sheet(raw_sheet(SHEET), ManualCollector.quote)
    assert result.refused == [] and result.rows == 10
    got = {
        q.key: (q.price, q.currency, q.unit.value, q.gpu_count, q.gpu_memory_gb, q.availability.value,
                q.tax_included, q.observed_at.day)
        for q in result.quotes
    }  # fmt: skip
    assert got == EXPECTED


def test_every_stored_offer_has_the_card_count_memory_and_slice_of_its_row() -> None:
    rows = [r for r in csv.DictReader(io.StringIO(SHEET.read_text(encoding="utf-8")))]
    by_key = {("manual", r["region"], f"{r['provider']}/{r['sku']}", r["pricing"]): r for r in rows}
    quotes = read_sheet(raw_sheet(SHEET), ManualCollector.quote).quotes
    assert {q.key for q in quotes} == set(by_key)
    for q in quotes:
        row = by_key[q.key]
        model, form, fraction = CARD_OF_MODEL[row["gpu_model"]]
        assert (q.gpu_model, q.form_factor, q.gpu_count) == (model, form, int(row["gpu_count"]))
        assert q.gpu_memory_gb == float(row["gpu_memory_gb"])  # a slice's memory is its own
        assert q.gpu_fraction == (pytest.approx(fraction) if fraction else None)
        assert (q.gpu_partition is None) == (fraction is None)
    assert {(q.gpu_model, q.gpu_partition) for q in quotes if q.gpu_partition} == {
        ("A100", "MIG 3g.40gb"), ("A10", "0.5 of a GPU (as quoted)")
    }  # fmt: skip


@pytest.mark.parametrize(
    ("model", "memory", "fraction", "reason"),
    [
        (
            "A100 SXM4 80GB MIG 3g.40gb",
            "80",
            "",
            "is a MIG 3g.40gb slice: 40 GB, 0.429 of a GPU, but the row says 80 GB",
        ),
        ("A100 SXM4 80GB MIG 3g.40gb", "40", "0.5", "but the row says 40 GB, 0.5"),
        ("A10 24GB", "30", "0.5", "0.5 of a GPU with 30 GB is not a slice of the A10"),
        ("A10 24GB", "12", "2", "gpu_fraction 2 is more than one GPU"),
        ("Quadro P4000 8GB", "4", "0.5", "is not a GPU gpuprice knows"),
    ],
)
def test_slices_must_agree_with_their_card(model: str, memory: str, fraction: str, reason: str) -> None:
    row = f"zhixingyun,cn,X,{model},{memory},1,on_demand,1.0,CNY,hour,https://www.ai-galaxy.cn/,2026-11-20,{fraction}"
    result = sheet(f"{HEADER},gpu_fraction\n{row}\n")
    assert result.quotes == [] and reason in result.refused[0]["reason"]


def test_rows_keep_their_provider_in_sku_and_notes_and_their_date_as_observed_at() -> None:
    quotes = {q.key: q for q in read_sheet(raw_sheet(SHEET), ManualCollector.quote).quotes}
    runpod = quotes[("manual", "secure-cloud", "runpod/A100 SXM", "on_demand")]
    assert runpod.observed_at == datetime(2026, 11, 9, tzinfo=UTC)
    assert runpod.notes.startswith("manual quote for runpod, seen 2026-11-09; Secure Cloud list price")
    assert runpod.source_url == "https://www.runpod.io/pricing"
    assert (runpod.form_factor, runpod.interconnect) == ("SXM4", "NVLink")  # from the GPU table, by name
    coreweave = quotes[SOLD_OUT]
    assert coreweave.source_url == "mailto:sales@coreweave.com"
    assert "fixture price" in coreweave.notes


def test_bad_rows_are_refused_with_file_line_and_reason_and_good_rows_load() -> None:
    result = read_sheet(raw_sheet(BAD), ManualCollector.quote)
    assert {q.sku for q in result.quotes} == {"zhixingyun/A100-PCIE-40GB", "coreweave/HGX A100 80GB x8"}
    where = str(BAD)
    assert result.refused == [
        {"offer": f"{where}:4", "reason": HOURLY_WORD},
        {"offer": f"{where}:5", "reason": "price '¥12' is not a number"},
        {"offer": f"{where}:7", "reason": "date_seen '20/11/2026' is not a date (write 2026-11-20)"},
        {"offer": f"{where}:8", "reason": "gpu_model 'A100 SXM4 80GB' says 80 GB but gpu_memory_gb is 40"},
        {"offer": f"{where}:9", "reason": "unit is term but term_hours is empty (how many hours does the term last?)"},
        {"offer": f"{where}:12", "reason": "the same offer as line 11 (provider, region, sku, pricing)"},
        {"offer": f"{where}:13", "reason": "source_url 'lambdalabs.com' is not a URL (https://…, mailto:…)"},
        {"offer": f"{where}:14", "reason": "date_seen 2099-01-01 is in the future"},
        {"offer": f"{where}:15", "reason": "3 fields, the header has 16"},
        {"offer": f"{where}:16",
         "reason": "gpu_model 'GeForce RTX 3080' is not a GPU gpuprice knows (README, GPUs, lists the cards)"},
    ]  # fmt: skip
    sold_out = next(q for q in result.quotes if q.sku.startswith("coreweave"))
    assert sold_out.availability is Availability.SOLD_OUT  # written "sold out" in the sheet


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (GOOD.replace(",1,on_demand", ",0,on_demand"), "gpu_count must be greater than 0"),
        (GOOD.replace(",1,on_demand", ",1.5,on_demand"), "gpu_count '1.5' is not a whole number"),
        (GOOD.replace(",8.5,", ",-8.5,"), "price must be greater than 0"),
        (GOOD.replace(",CNY,", ",yuan,"), "currency 'yuan' is not an ISO 4217 code"),
        (GOOD.replace(",hour,", ",hr,"), "unit 'hr' is not one of hour, month, year, term"),
        (GOOD.replace("zhixingyun,", "智星云,"), "provider '智星云' is not a slug"),
        (GOOD.replace(",cn,", ",,"), "region is empty"),
    ],
)
def test_field_checks(row: str, reason: str) -> None:
    result = sheet(f"{HEADER}\n{GOOD.replace('A100-40G', 'other')}\n{row}\n")
    assert len(result.quotes) == 1
    assert result.refused[0]["offer"] == "/data/sheet.csv:3"
    assert result.refused[0]["reason"].startswith(reason)


def test_optional_columns_term_billing_and_tax() -> None:
    header = HEADER + ",term_hours,billing_increment_s,billing_minimum_s,tax_included,availability"
    row = (
        "coreweave,us-east,HGX,A100 SXM4 80GB,80,8,reserved_1y,120000,usd,term,mailto:q@x.test,2026-11-18,"
        "8760,60,60,,Sold-Out"
    )
    (quote,) = sheet(f"{header}\n{row}\n").quotes
    assert (quote.unit, quote.term_hours, quote.currency) == (Unit.TERM, 8760.0, "USD")
    assert (quote.billing_increment_s, quote.billing_minimum_s) == (60, 60)
    assert quote.tax_included is None and quote.availability is Availability.SOLD_OUT


def test_spreadsheet_exports_with_bom_crlf_comments_and_spaced_headers_are_read() -> None:
    spaced = HEADER.replace("gpu_memory_gb", "GPU Memory GB").replace("date_seen", " Date Seen ")
    body = "\ufeff# prices from the November calls\r\n" + spaced + "\r\n\r\n" + GOOD + "\r\n"
    result = sheet(body)
    assert len(result.quotes) == 1 and result.refused == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("", "no header row"),
        ("# only a comment\n", "no header row"),
        (HEADER.replace(",date_seen", "") + "\n", "missing column(s) date_seen"),
        (HEADER + ",discount\n", "unknown column(s) discount"),
        (HEADER + ",price\n", "repeated column(s) price"),
    ],
)
def test_sheet_level_problems_fail_the_whole_sheet(body: str, message: str) -> None:
    with pytest.raises(ParseError, match=rf"/data/sheet.csv(:\d+)?: .*{message}".replace("(s)", r"\(s\)")):
        sheet(body)


def test_a_sheet_without_a_good_row_fails_the_run_with_the_reasons(settings: Settings) -> None:
    raw = raw_sheet(Path("/data/sheet.csv"), f"{HEADER}\n{GOOD.replace('2026-11-20', 'yesterday')}\n".encode())
    with pytest.raises(ParseError, match=r"no row could be loaded \(1 data rows\): line 2: date_seen 'yesterday'"):
        ManualCollector(settings).parse(Fetched([raw]))
    with pytest.raises(ParseError, match=r"no row could be loaded \(0 data rows\)$"):
        ManualCollector(settings).parse(Fetched([raw_sheet(Path("/data/s.csv"), f"{HEADER}\n".encode())]))


def test_quotes_pass_the_shared_checks_and_normalize_like_any_provider(fx_table, settings: Settings) -> None:
    quotes = {q.key: q for q in read_sheet(raw_sheet(SHEET), ManualCollector.quote).quotes}
    accepted, rejected = check_quotes(list(quotes.values()), fx_table, settings)
    assert rejected == [] and len(accepted) == 10
    runpod = normalize(quotes[("manual", "secure-cloud", "runpod/A100 SXM", "on_demand")], fx_table, settings)
    assert runpod.cny_per_hour == pytest.approx(1.79 * USD_TO_CNY)
    assert runpod.fx_date.isoformat() == "2022-07-08"  # the latest rate on or before the date seen
    monthly = normalize(quotes[("manual", "cn", "zhixingyun/A100-PCIE-40GB", "monthly")], fx_table, settings)
    assert monthly.cny_per_hour == pytest.approx(4500 / 730)
    assert monthly.cny_per_gb_hour == pytest.approx(4500 / 730 / 40)
    coreweave = normalize(quotes[SOLD_OUT], fx_table, settings)
    assert coreweave.cny_per_gpu_hour == pytest.approx(17.6 * USD_TO_CNY / 8)


# ----- fetch: the file named by the setting, or the recorded one offline -------------------------


def fetch(settings: Settings):
    async def go():
        collector = ManualCollector(settings)
        async with make_client(settings) as client:
            return await collector.fetch(Http(client, "manual", settings), collector.scope())

    return asyncio.run(go())


def test_fetch_reads_the_sheet_the_setting_names(settings: Settings, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "quotes.csv"
    shutil.copy(SHEET, path)
    monkeypatch.setenv("GPUPRICE_MANUAL_SHEET", str(path))
    live = Settings(**settings.model_dump(exclude={"manual_sheet"}))
    assert live.manual_sheet == path
    fetched = fetch(live)
    (raw,) = fetched.responses
    assert (raw.url, raw.label, raw.body) == (path.as_uri(), str(path), SHEET.read_bytes())


def test_without_the_sheet_the_run_is_skipped_naming_the_setting(settings: Settings, tmp_path: Path) -> None:
    missing = settings.model_copy(update={"manual_sheet": tmp_path / "nope.csv"})
    with pytest.raises(MissingCredentials, match=r"no manual quotes sheet at .*nope.csv: set GPUPRICE_MANUAL_SHEET"):
        fetch(missing)


def test_default_sheet_is_manual_quotes_csv_in_the_working_directory() -> None:
    assert Settings().manual_sheet == Path("manual_quotes.csv")


def test_offline_reads_the_recorded_sheet_whatever_the_setting_says(settings: Settings, tmp_path: Path) -> None:
    offline = settings.model_copy(update={"offline": True, "manual_sheet": tmp_path / "absent.csv"})
    (raw,) = fetch(offline).responses
    assert raw.body == SHEET.read_bytes()
    manifest = json.loads((FIXTURES / "manual" / "replay.json").read_text())
    assert [r["file"] for r in manifest["routes"]] == ["manual_quotes.csv"]


# ----- through the runner and the store ----------------------------------------------------------


def collect_manual(store: PriceStore, settings: Settings):
    (summary,) = asyncio.run(runner.collect(store, settings, ["manual"], include_fx=False))
    return summary


def last_run(store: PriceStore) -> tuple:
    return (
        store.cursor()
        .execute("SELECT status, error, quote_count, rejected_count, rejected FROM runs ORDER BY run_id DESC LIMIT 1")
        .fetchone()
    )


def test_a_run_stores_good_rows_and_records_the_refused_ones(store: PriceStore, settings: Settings) -> None:
    seed_fx(store)
    live = settings.model_copy(update={"manual_sheet": BAD})
    summary = collect_manual(store, live)
    assert (summary.status, summary.quotes, summary.rejected) == (RunStatus.OK, 2, 10)
    status, error, count, rejected_count, rejected = last_run(store)
    assert (status, error, count, rejected_count) == ("ok", None, 2, 10)
    assert json.loads(rejected)[0] == {"offer": f"{BAD}:4", "reason": HOURLY_WORD}
    # people see them where they see a run: its notes (`gpuprice collect`, /providers)
    assert len(summary.notes) == 10
    assert summary.notes[1] == f"refused {BAD}:5: price '¥12' is not a number"


def test_a_run_whose_sheet_has_no_good_row_fails_with_the_reasons(store, settings, tmp_path: Path) -> None:
    path = tmp_path / "all_bad.csv"
    path.write_text(f"{HEADER}\n{GOOD.replace(',CNY,', ',RMB yuan,')}\n", encoding="utf-8")
    summary = collect_manual(store, settings.model_copy(update={"manual_sheet": path}))
    assert summary.status is RunStatus.FAILED
    assert "no row could be loaded (1 data rows): line 2: currency 'RMB yuan'" in summary.error


def test_missing_sheet_is_a_skipped_run(store: PriceStore, settings: Settings, tmp_path: Path) -> None:
    summary = collect_manual(store, settings.model_copy(update={"manual_sheet": tmp_path / "nope.csv"}))
    assert summary.status is RunStatus.SKIPPED
    assert "GPUPRICE_MANUAL_SHEET" in summary.error


def test_quotes_go_stale_on_the_same_rules_and_removed_rows_are_withdrawn(store, settings, tmp_path) -> None:
    seed_fx(store)
    path = tmp_path / "quotes.csv"
    shutil.copy(SHEET, path)
    live = settings.model_copy(update={"manual_sheet": path})
    assert collect_manual(store, live).status is RunStatus.OK
    now = clock.now_naive()
    offers = current_offers(store.cursor(), now).offers
    assert len(offers) == 10 and not any(o.stale for o in offers)
    # an hourly sheet read twice a schedule ago is stale, like any provider's last success
    later = current_offers(store.cursor(), now + timedelta(days=365)).offers
    assert all(o.stale for o in later)
    # a row deleted from the sheet is withdrawn on the next load
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line for line in lines if not line.startswith("coreweave")), encoding="utf-8")
    assert collect_manual(store, live).status is RunStatus.OK
    assert {o.sku for o in current_offers(store.cursor(), now).offers} == {
        "runpod/A100 SXM",
        "zhixingyun/A100-PCIE-40GB",
        "zhixingyun/RTX4090-24G",
        "zhixingyun/A800-80G",
        "zhixingyun/A10-vGPU-12G",
    }
    # the sheet gone: a skipped run, and what the last good load brought reads as stale
    path.unlink()
    assert collect_manual(store, live).status is RunStatus.SKIPPED
    offers = current_offers(store.cursor(), now).offers
    assert len(offers) == 7 and all(o.stale for o in offers)
    assert {o.pricing for o in offers} <= {p.value for p in Pricing}


def test_refused_rows_in_the_notes_are_capped_but_all_are_kept_in_the_rejections() -> None:
    refused = [{"offer": f"s.csv:{n}", "reason": "bad"} for n in range(2, 27)]
    notes = runner._refused_notes(refused)
    assert len(notes) == 21 and notes[0] == "refused s.csv:2: bad"
    assert notes[-1] == "… and 5 more refused (all are in the run's rejections)"
