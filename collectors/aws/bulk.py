"""On-demand and reserved prices from the AWS Price List bulk file, one CSV per region.

Source: https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv
(no key; the endpoint lives in us-east-1 but serves every region). Each file is hundreds of MB: it is
streamed to disk by `Http.download` keeping only the preamble, the header and the lines of GPU
instances (`KeepGpuLines`: `GPU instance`, the `Instance Family` value of every GPU row, one
substring test per line), so a few MB reach `parse`.

Layout: 5 preamble lines (`"FormatVersion","v1.0"`, `"Disclaimer",…`, `"Publication Date",…`,
`"Version",…`, `"OfferCode","AmazonEC2"`), then the header row (`"SKU","OfferTermCode",…`, ~100
columns whose order changes between versions, so indexes are resolved from the header by name), then
one row per (product, term, price dimension). Non-empty fields are quoted, empty ones are not.

Taken: every `Instance Type` of `Instance Family` "GPU instance" whose GPUs collectors.aws.instance_types
knows (p6-b200, p5/p5e/p5en, p4d/p4de, p3/p3dn, g7e, g6e, g6, gr6, g5, g5g, g4dn, g4ad, g3, p2; the
count from the `GPU` column where it says one), `Operating System` Linux, `Tenancy` Shared,
`CapacityStatus` Used, `Pre Installed S/W` NA or empty, `Currency` USD, `MarketOption` OnDemand,
`Unit` Hrs, a price above zero, and
- `TermType` OnDemand → `on_demand`;
- `TermType` Reserved, `OfferingClass` standard, `PurchaseOption` No Upfront, `LeaseContractLength`
  1yr / 3yr → `reserved_1y` / `reserved_3y` at the hourly rate (No Upfront terms have only an hourly
  row, so the hourly rate is the effective rate; Partial / All Upfront would need the `Quantity`
  upfront-fee row folded in as upfront / (years × 8760) and are not collected).

Quirks, all of which the filters above exist for:
- each product appears three times per capacity state: `CapacityStatus` Used (what you pay),
  UnusedCapacityReservation (an idle On-Demand Capacity Reservation, same price) and
  AllocatedCapacityReservation (usage inside a reservation, $0.00);
- EC2 Capacity Blocks for ML are `TermType` OnDemand rows with `MarketOption` CapacityBlock and a
  lower price: they are pre-paid fixed-length blocks, not on-demand;
- Windows / RHEL / SUSE / "Linux with SQL …" rows share the instance type; Dedicated and Host tenancy too;
- a region file also lists its Local Zones and Wavelength Zones (other `Region Code`s): skipped;
- AWS's API reports p4de's GPUs as 40GB cards; the family table maps p4de.24xlarge to 80GB;
- fractional families (g6f, gr6f: a share of one L4) are stored as slices of the card;
- GPU families the table does not know (a new family, p6-b300 whose 262 GB B300 the card table lacks)
  are not stored; `parse_price_list` counts them per instance type in `skipped` with the reason,
  for the run's notes.

The host shape comes from the same rows: `vCPU` ("96") and `Memory` ("1152 GiB"). Spot quotes
(collectors.aws.spot) have no such figures; exports take them from pricedb.shapes.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from collectors.aws.common import instance_quote
from collectors.aws.instance_types import InstanceGpus, NotStored, gpus_of
from collectors.base import QuoteMaker, RawResponse
from collectors.errors import ParseError
from pricedb.models import Pricing, Quote
from pricedb.shapes import host_fields

PRICE_LIST_URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"

# The cheap pre-filter: the `Instance Family` value of every GPU instance row. One substring test per
# line; non-GPU rows (the vast majority) never contain it, and `parse` checks the column itself.
GPU_FAMILY = "GPU instance"
NEEDLE = GPU_FAMILY.encode()


# Every row `_pick` keeps is Linux on shared tenancy: a byte test skips most other rows unparsed.
def _may_be_kept(line: bytes) -> bool:
    return b"Linux" in line and b"Shared" in line


HEADER_FIRST_FIELD = "SKU"
_MAX_LEADING_LINES = 12  # preamble (5 today) + header; more means this is not a price list
_MAX_LINE = 1 << 16  # a preamble/header line longer than this is not one
_BLOCK = 1 << 22  # bytes read at a time while scanning for candidate rows
_MAX_ROW = 1 << 20  # no real row comes near this; a longer "line" means the file is not CSV text

REQUIRED_COLUMNS = (
    "Instance Type",
    "Instance Family",
    "Region Code",
    "TermType",
    "PricePerUnit",
    "Currency",
    "Unit",
    "Operating System",
    "Tenancy",
    "CapacityStatus",
    "Pre Installed S/W",
    "MarketOption",
    "LeaseContractLength",
    "PurchaseOption",
    "OfferingClass",
)

_RESERVED_TERMS = {"1yr": Pricing.RESERVED_1Y, "3yr": Pricing.RESERVED_3Y}
_NO_SOFTWARE = ("NA", "")


def price_list_url(region: str) -> str:
    return PRICE_LIST_URL.format(region=region)


class KeepGpuLines:
    """`keep_line` for `Http.download`: keeps the leading lines up to and including the header
    row (so `parse` sees the real layout), then only the rows of GPU instances."""

    def __init__(self) -> None:
        self._leading = 0
        self._in_body = False

    def __call__(self, line: bytes) -> bool:
        if self._in_body:
            return NEEDLE in line
        self._leading += 1
        if line.startswith(b'"SKU",') or line.startswith(b"SKU,") or self._leading >= _MAX_LEADING_LINES:
            self._in_body = True
        return True


@dataclass(frozen=True, slots=True)
class _Columns:
    count: int
    instance_type: int
    family: int
    region: int
    term_type: int
    price: int
    currency: int
    unit: int
    os: int
    tenancy: int
    capacity: int
    software: int
    market: int
    lease: int
    purchase: int
    offering_class: int

    vcpu: int | None = None  # optional: the host shape, when the file has these columns
    memory: int | None = None
    gpu: int | None = None  # optional: GPUs per instance ("8", "NA")

    @classmethod
    def from_header(cls, header: list[str], url: str) -> _Columns:
        index = {name: i for i, name in enumerate(header)}
        missing = [name for name in REQUIRED_COLUMNS if name not in index]
        if missing:
            raise ParseError(f"{url}: the header lacks column(s) {', '.join(repr(m) for m in missing)}")
        optional = (index.get(name) for name in ("vCPU", "Memory", "GPU"))
        return cls(len(header), *(index[name] for name in REQUIRED_COLUMNS), *optional)

    def host(self, fields: list[str]) -> dict[str, object]:
        """vCPUs and RAM from `vCPU` ("96") and `Memory` ("1152 GiB"), when both read."""
        if self.vcpu is None or self.memory is None:
            return {}
        memory = fields[self.memory].strip()
        if not memory.endswith(" GiB"):
            return {}
        return host_fields(fields[self.vcpu], memory.removesuffix(" GiB").replace(",", ""))


def parse_price_list(
    raw: RawResponse, quote: QuoteMaker, region: str | None = None, skipped: Counter[str] | None = None
) -> list[Quote]:
    """Quotes from one region's price-list CSV. `region` (from the fetch label) keeps that
    region's rows only; without it, every `Region Code` found is taken. Instance types whose GPUs
    cannot be stored (collectors.aws.instance_types.NotStored) are counted in `skipped`, by reason."""
    with _open(raw) as handle:
        version, header = _read_leading_lines(handle, raw.url)
        columns = _Columns.from_header(header, raw.url)
        found: dict[tuple[str, str, Pricing], float] = {}
        hosts: dict[str, dict[str, object]] = {}
        gpus: dict[str, InstanceGpus | NotStored] = {}
        try:
            lines = (line for line in _candidate_lines(handle, raw.url) if _may_be_kept(line))
            rows = csv.reader(line.decode("utf-8") for line in lines)
            for fields in rows:
                picked = _pick(fields, columns, raw.url)
                if picked is None or (region is not None and picked[0] != region):
                    continue
                key, price = picked[:3], picked[3]
                sku = key[1]
                if sku not in gpus:
                    gpus[sku] = _gpus(sku, fields, columns)
                if isinstance(gpus[sku], NotStored):
                    continue
                found[key] = min(price, found.get(key, price))
                hosts[sku] = hosts.get(sku) or columns.host(fields)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ParseError(f"{raw.url}: unreadable row ({exc})") from exc
    if skipped is not None:
        skipped.update(str(why) for why in gpus.values() if isinstance(why, NotStored))
    return [
        instance_quote(
            quote,
            raw,
            region=row_region,
            sku=sku,
            gpus=gpus[sku],  # type: ignore[arg-type]  # NotStored ones never reach `found`
            pricing=pricing,
            price=price,
            notes=_note(pricing, version),
            **hosts.get(sku, {}),
        )
        for (row_region, sku, pricing), price in sorted(found.items())
    ]


def _gpus(sku: str, fields: list[str], c: _Columns) -> InstanceGpus | NotStored:
    try:
        return gpus_of(sku, fields[c.gpu] if c.gpu is not None else None)
    except NotStored as why:
        return why


def _pick(fields: list[str], c: _Columns, url: str) -> tuple[str, str, Pricing, float] | None:
    """(region, instance type, pricing, USD per hour) for a row worth keeping, else None."""
    if len(fields) != c.count:
        raise ParseError(f"{url}: a row has {len(fields)} fields, the header {c.count}: {','.join(fields)[:200]}")
    sku = fields[c.instance_type]
    if (
        fields[c.family] != GPU_FAMILY
        or fields[c.os] != "Linux"
        or fields[c.tenancy] != "Shared"
        or fields[c.capacity] != "Used"
        or fields[c.software] not in _NO_SOFTWARE
        or fields[c.currency] != "USD"
        or fields[c.market] != "OnDemand"
        or fields[c.unit] != "Hrs"
    ):
        return None
    term = fields[c.term_type]
    if term == "OnDemand":
        pricing = Pricing.ON_DEMAND
    elif term == "Reserved" and fields[c.offering_class] == "standard" and fields[c.purchase] == "No Upfront":
        reserved = _RESERVED_TERMS.get(fields[c.lease])
        if reserved is None:
            return None
        pricing = reserved
    else:
        return None
    try:
        price = float(fields[c.price])
    except ValueError as exc:
        raise ParseError(f"{url}: {sku} {term} price {fields[c.price]!r} is not a number") from exc
    if price <= 0:  # "$0.00 per …" rows price nothing anyone rents (a second SKU of the same type)
        return None
    return fields[c.region], sku, pricing, price


def _note(pricing: Pricing, version: str | None) -> str:
    source = f"AWS price list {version}" if version else "AWS price list"
    if pricing is Pricing.ON_DEMAND:
        return source
    lease = "1yr" if pricing is Pricing.RESERVED_1Y else "3yr"
    return f"standard {lease} No Upfront reserved instance, hourly rate; {source}"


def _open(raw: RawResponse) -> BinaryIO:
    return raw.path.open("rb") if raw.path is not None else io.BytesIO(raw.body)


def _read_leading_lines(handle: BinaryIO, url: str) -> tuple[str | None, list[str]]:
    """Skip the preamble (keeping its `Version`), return it and the parsed header row."""
    meta: dict[str, str] = {}
    for number in range(_MAX_LEADING_LINES):
        line = handle.readline(_MAX_LINE)
        if not line:
            what = "empty" if number == 0 else f"only {number} line(s) long and has no header row"
            raise ParseError(f"{url}: the price list is {what}")
        try:
            fields = next(csv.reader([line.decode("utf-8")]), [])
        except (UnicodeDecodeError, csv.Error) as exc:
            raise ParseError(f"{url}: line {number + 1} is not CSV text ({exc})") from exc
        if fields and fields[0] == HEADER_FIRST_FIELD:
            if meta.get("OfferCode", "AmazonEC2") != "AmazonEC2":
                raise ParseError(f"{url}: this is the {meta['OfferCode']} price list, not AmazonEC2")
            return meta.get("Version"), fields
        if len(fields) == 2:
            meta[fields[0]] = fields[1]
    raise ParseError(f'{url}: no header row (starting with "SKU") in the first {_MAX_LEADING_LINES} lines')


def _candidate_lines(handle: BinaryIO, url: str) -> Iterator[bytes]:
    """The remaining lines that contain NEEDLE, found with bytearray.find over large blocks read
    into one reused buffer, so the vast majority of the file is never copied, split into lines,
    decoded or parsed (and fresh 4 MiB allocations do not page-fault on every block)."""
    buffer = bytearray(_BLOCK + _MAX_ROW)
    view = memoryview(buffer)
    kept = 0  # bytes of an unfinished line carried over at the front of the buffer
    while read := handle.readinto(view[kept : kept + _BLOCK]):
        filled = kept + read
        cut = buffer.rfind(b"\n", 0, filled) + 1
        pos = buffer.find(NEEDLE, 0, cut)
        while pos != -1:
            start = buffer.rfind(b"\n", 0, pos) + 1
            end = buffer.find(b"\n", pos, cut)
            yield bytes(view[start:end]).rstrip(b"\r")
            pos = buffer.find(NEEDLE, end + 1, cut)
        kept = filled - cut
        if kept > _MAX_ROW:
            raise ParseError(f"{url}: a line longer than {_MAX_ROW} bytes; this is not a price list")
        buffer[:kept] = bytes(view[cut:filled])
    if buffer.find(NEEDLE, 0, kept) != -1:
        yield bytes(view[:kept]).rstrip(b"\r")
