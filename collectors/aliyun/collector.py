"""The Alibaba Cloud collector: which calls to make, and how the answers become quotes.

Source: the ECS OpenAPI at https://ecs.{region}.aliyuncs.com/ (see the package docstring). Per run:
DescribeInstanceTypes for every type with a GPU (`MinimumGPUAmount=1`, paged; at the first region's
endpoint, the catalogue is the same everywhere), then per region DescribeAvailableResource for each
charge type the scope needs, then DescribePrice for every whole-card GPU type that region lists —
whatever its stock, so a sold-out offer is kept and marked `sold_out` rather than dropped. Spot
prices differ by zone, so spot is priced in each zone with stock and the cheapest is taken (in one
listed zone when none has stock, so the sold-out offer keeps a price).

Request count: DescribePrice has no batch form, so it is one call per (type, pricing, region) and one
per (type, zone with spot stock). With every GPU family that is a few hundred calls a day per region
for the list scope (2 per type listed) and about as many an hour for spot; `MAX_PRICE_CALLS` bounds a
run (more fails it, naming GPUPRICE_ALIYUN_REGIONS, rather than storing part of the market), vGPU
slices and unknown cards are not priced, and `CONCURRENCY` keeps the account under the API's rate limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from collectors.aliyun import api, responses
from collectors.aliyun.instance_types import GPU_FAMILY
from collectors.aliyun.responses import Catalogue, InstanceType, Price, ZoneStock
from collectors.aliyun.signing import Credentials, resolve_credentials
from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import FetchError, ParseError
from collectors.http import Http
from pricedb.models import Availability, Pricing, Quote, Unit

T = TypeVar("T")
PROVIDER = "aliyun"

# Mainland regions with GPU capacity: Beijing (华北2), Hangzhou (华东1) and Shanghai (华东2), the three
# largest mainland regions and the ones public deployment guides name for gn7e. Not checked against a
# published availability table (Alibaba Cloud publishes none as data): DescribeAvailableResource
# decides what is sold, and a region that lists no GPU type yields no offers and a note. Add others
# (cn-zhangjiakou, cn-wulanchabu, cn-shenzhen, …) with GPUPRICE_ALIYUN_REGIONS. Each region costs 2
# stock calls + 2 price calls per GPU type a day, and 1 stock call + 1 price call per (type, zone
# with stock) an hour for spot.
DEFAULT_REGIONS = ("cn-beijing", "cn-hangzhou", "cn-shanghai")
CONCURRENCY = 4  # requests in flight at once; the ECS API rate-limits per account (Throttling.User)
PAGE_SIZE = "100"
MAX_PRICE_CALLS = 1500  # DescribePrice calls one run may make (about 2 minutes at CONCURRENCY)

LIST_PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.MONTHLY})
SPOT_PRICINGS = frozenset({Pricing.SPOT})
# pricing -> DescribeAvailableResource charge parameters, and the label word for them
CHARGES: dict[Pricing, tuple[str, list[tuple[str, str]]]] = {
    Pricing.ON_DEMAND: ("PostPaid", [("InstanceChargeType", "PostPaid")]),
    Pricing.MONTHLY: ("PrePaid", [("InstanceChargeType", "PrePaid")]),
    Pricing.SPOT: ("Spot", [("InstanceChargeType", "PostPaid"), ("SpotStrategy", "SpotAsPriceGo")]),
}
PRICE_PARAMS: dict[Pricing, list[tuple[str, str]]] = {
    Pricing.ON_DEMAND: [("PriceUnit", "Hour"), ("Period", "1")],
    Pricing.MONTHLY: [("PriceUnit", "Month"), ("Period", "1")],
    Pricing.SPOT: [("PriceUnit", "Hour"), ("Period", "1"), ("SpotStrategy", "SpotAsPriceGo")],
}
FIXTURE_NOTE = "fixture price: test data replayed from fixtures/aliyun (see its README), not an Alibaba Cloud quote"


async def _all(coroutines: Iterable[Awaitable[T]]) -> list[T]:
    """Run concurrently; the first failure cancels the rest and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(coroutine) for coroutine in coroutines]  # type: ignore[arg-type]
    except ExceptionGroup as failures:
        raise failures.exceptions[0] from None
    return [task.result() for task in tasks]


@dataclass
class _Calls:
    http: Http
    credentials: Credentials
    limit: asyncio.Semaphore

    async def one(self, region: str, action: str, params: list[tuple[str, str]], label: str) -> RawResponse:
        async with self.limit:
            return await api.call(self.http, self.credentials, region, action, params, label)


class AliyunCollector(Collector):
    name: ClassVar[str] = PROVIDER
    title: ClassVar[str] = "Alibaba Cloud (ECS, mainland China)"
    source_urls: ClassVar[tuple[str, ...]] = (api.ENDPOINT,)
    pricings: ClassVar[frozenset[Pricing]] = LIST_PRICINGS | SPOT_PRICINGS
    scopes: ClassVar[tuple[Scope, ...]] = (
        Scope("list", LIST_PRICINGS, 24 * 60),
        Scope("spot", SPOT_PRICINGS, 60),
    )
    billing_increment_s: ClassVar[int] = 1  # pay-as-you-go and spot are billed per second (按秒计费, 按小时出账)
    billing_minimum_s: ClassVar[int] = 0
    deadline_s: ClassVar[float] = 600.0  # signed calls per region and charge type

    def regions(self) -> list[str]:
        return self.settings.regions_for(PROVIDER, list(DEFAULT_REGIONS))

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        calls = _Calls(http, resolve_credentials(self.settings), asyncio.Semaphore(CONCURRENCY))
        regions = self.regions()
        params = [("MinimumGPUAmount", "1"), ("MaxResults", PAGE_SIZE)]
        fetched = Fetched(
            await api.call_pages(http, calls.credentials, regions[0], "DescribeInstanceTypes", params, "types:gpu")
        )
        catalogue = responses.instance_types(fetched.responses)
        if not catalogue.types:
            raise ParseError(
                "DescribeInstanceTypes described no GPU instance type the card table knows"
                + (f" ({'; '.join(catalogue.notes())})" if catalogue.skipped else "")
            )
        fetched.notes += catalogue.notes()
        pricings = [p for p in CHARGES if p in scope.pricings]
        stocks = await _all(self._stock(calls, region, pricings) for region in regions)
        asks: list[tuple[str, list[tuple[str, str]], str]] = []
        for region, answers in zip(regions, stocks, strict=True):
            fetched.responses += answers
            asks += self._price_asks(region, pricings, answers, catalogue, fetched.notes)
        if len(asks) > MAX_PRICE_CALLS:
            raise FetchError(
                f"Alibaba Cloud: {len(asks)} DescribePrice calls needed for {len(regions)} regions, more than the "
                f"{MAX_PRICE_CALLS} one run may make; list fewer regions in GPUPRICE_ALIYUN_REGIONS"
            )
        fetched.responses += await _all(calls.one(region, "DescribePrice", p, label) for region, p, label in asks)
        fetched.notes = list(dict.fromkeys(fetched.notes))  # a type undescribed in two charge types: one note
        return fetched

    async def _stock(self, calls: _Calls, region: str, pricings: list[Pricing]) -> list[RawResponse]:
        base = [("RegionId", region), ("DestinationResource", "InstanceType")]
        return await _all(
            calls.one(region, "DescribeAvailableResource", base + CHARGES[p][1], f"stock:{region}:{CHARGES[p][0]}")
            for p in pricings
        )

    def _price_asks(
        self,
        region: str,
        pricings: list[Pricing],
        stocks: list[RawResponse],
        catalogue: Catalogue,
        notes: list[str],
    ) -> list[tuple[str, list[tuple[str, str]], str]]:
        """(region, DescribePrice parameters, label) for every whole-card GPU type the region lists."""
        asks: list[tuple[str, list[tuple[str, str]], str]] = []
        none_for: list[str] = []
        for pricing, raw in zip(pricings, stocks, strict=True):
            listed = responses.stock(raw)
            gpu = sorted(sku for sku in listed if sku in catalogue.types)
            undescribed = sorted(
                s for s in listed if GPU_FAMILY.match(s) and s not in catalogue.types | catalogue.skipped
            )
            notes += [
                f"{region}: {sku} is listed for sale but DescribeInstanceTypes does not describe it"
                for sku in undescribed
            ]
            if not gpu:
                none_for.append(CHARGES[pricing][0])
            for sku in gpu:
                head = [("RegionId", region), ("ResourceType", "instance"), ("InstanceType", sku)]
                if pricing is Pricing.SPOT:  # spot prices differ by zone: each zone with stock, else one
                    zones = sorted({z.zone for z in listed[sku] if z.in_stock}) or [min(z.zone for z in listed[sku])]
                    for zone in zones:
                        label = f"price:{region}:{pricing.value}:{sku}:{zone}"
                        asks.append((region, head + PRICE_PARAMS[pricing] + [("ZoneId", zone)], label))
                else:
                    asks.append((region, head + PRICE_PARAMS[pricing], f"price:{region}:{pricing.value}:{sku}"))
        if none_for:
            notes.append(f"{region}: DescribeAvailableResource lists no GPU instance type ({', '.join(none_for)})")
        return asks

    def parse(self, fetched: Fetched) -> list[Quote]:
        type_pages: list[RawResponse] = []
        stocks: dict[tuple[str, str], dict[str, list[ZoneStock]]] = {}
        prices: list[tuple[list[str], RawResponse]] = []
        for raw in fetched.responses:
            kind, *rest = raw.label.split(":")
            if kind == "types":
                type_pages.append(raw)
            elif kind == "stock" and len(rest) == 2:
                stocks[(rest[0], rest[1])] = responses.stock(raw)
            elif kind == "price" and len(rest) in (3, 4):
                prices.append((rest, raw))
            else:
                raise ParseError(f"{raw.url}: unexpected response label {raw.label!r}")
        types = responses.instance_types(type_pages).types
        quotes: list[Quote] = []
        spot: dict[tuple[str, str], list[tuple[str, Price, RawResponse]]] = {}
        for rest, raw in prices:
            region, pricing_name, sku = rest[:3]
            if sku not in types:
                raise ParseError(f"{raw.url}: a price for {sku}, which DescribeInstanceTypes did not describe")
            pricing = Pricing(pricing_name)
            figures = responses.price(raw)
            if pricing is Pricing.SPOT:
                if len(rest) != 4:
                    raise ParseError(f"{raw.url}: spot price without its zone in label {raw.label!r}")
                spot.setdefault((region, sku), []).append((rest[3], figures, raw))
                continue
            zones = stocks.get((region, CHARGES[pricing][0]), {}).get(sku)
            quotes.append(self._quote(types[sku], region, pricing, figures, raw, zones))
        for (region, sku), options in sorted(spot.items()):
            quotes.append(self._spot_quote(types[sku], region, options, stocks.get((region, "Spot"), {}).get(sku)))
        return quotes

    def _spot_quote(
        self,
        spec: InstanceType,
        region: str,
        options: list[tuple[str, Price, RawResponse]],
        zones: list[ZoneStock] | None,
    ) -> Quote:
        with_stock = {z.zone for z in zones or () if z.in_stock}
        pool = [o for o in options if o[0] in with_stock] or options
        zone, figures, raw = min(pool, key=lambda o: (o[1].price, o[0]))
        if not with_stock:
            where = f"no zone has spot stock; cheapest listed zone: {zone}"
        elif len(pool) == 1:
            where = f"only zone with stock: {zone}"
        else:
            where = f"cheapest of {len(pool)} zones with stock: {zone}"
        return self._quote(spec, region, Pricing.SPOT, figures, raw, zones, [f"SpotAsPriceGo market price, {where}"])

    def _quote(
        self,
        spec: InstanceType,
        region: str,
        pricing: Pricing,
        figures: Price,
        raw: RawResponse,
        zones: list[ZoneStock] | None,
        extra: list[str] | None = None,
    ) -> Quote:
        notes = [FIXTURE_NOTE] if self.settings.offline else []
        notes += extra or []
        if pricing is Pricing.MONTHLY:
            notes.append("1-month subscription (包月), paid upfront")
        if figures.instance_only:
            notes.append(f"instance only; the order with the default system disk is {figures.total:g}")
        else:
            notes.append("whole order incl. the default system disk (no InstanceType detail in the answer)")
        if figures.rules:
            notes.append("discount rules: " + "; ".join(figures.rules))
        if zones is None:
            availability = Availability.UNKNOWN
        else:
            availability = Availability.AVAILABLE if any(z.in_stock for z in zones) else Availability.SOLD_OUT
            notes.append("stock: " + ", ".join(f"{z.zone} {z.status}" for z in sorted(zones, key=lambda z: z.zone)))
        return self.quote(
            raw,
            f"{spec.sku} {region} {pricing.value}",
            region=region,
            sku=spec.sku,
            **spec.quote_fields(),
            pricing=pricing,
            price=figures.price,
            currency=figures.currency,
            unit=Unit.MONTH if pricing is Pricing.MONTHLY else Unit.HOUR,
            availability=availability,
            list_price=figures.list_price,
            tax_included=True if figures.currency == "CNY" else None,  # mainland list prices include VAT
            notes="; ".join(notes),
        )
