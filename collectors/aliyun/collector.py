"""The Alibaba Cloud collector: which calls to make, and how the answers become quotes.

Source: the ECS OpenAPI at https://ecs.{region}.aliyuncs.com/ (see the package docstring). Per run:
DescribeInstanceTypes for each A100 family (at the first region's endpoint; the catalogue is the same
everywhere), then per region DescribeAvailableResource for each charge type the scope needs,
then DescribePrice for every A100 type that region lists — whatever its stock, so a sold-out offer
is kept and marked `sold_out` rather than dropped. Spot prices differ by zone, so spot is priced per
zone listed and the cheapest zone with stock is taken.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from collectors.aliyun import api, responses
from collectors.aliyun.responses import A100_FAMILIES, InstanceType, Price, ZoneStock
from collectors.aliyun.signing import Credentials, resolve_credentials
from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from pricedb.models import Availability, Pricing, Quote, Unit

T = TypeVar("T")
PROVIDER = "aliyun"

# Mainland regions with A100 (gn7/gn7e) capacity: Beijing (华北2), Hangzhou (华东1) and Shanghai
# (华东2), the three largest mainland regions and the ones public deployment guides name for gn7e.
# Not checked against a published availability table (Alibaba Cloud publishes none as data):
# DescribeAvailableResource decides what is sold, and a region that lists no A100 type yields no
# offers and a note. Add others (cn-zhangjiakou, cn-wulanchabu, cn-shenzhen, …) with
# GPUPRICE_ALIYUN_REGIONS. Each region costs 2 stock calls + 2 price calls per A100 type a day, and
# 1 stock call + 1 price call per (type, zone) an hour for spot.
DEFAULT_REGIONS = ("cn-beijing", "cn-hangzhou", "cn-shanghai")
CONCURRENCY = 4  # requests in flight at once; the ECS API rate-limits per account (Throttling.User)
PAGE_SIZE = "100"

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
        fetched = Fetched([])
        for family in A100_FAMILIES:
            params = [("InstanceTypeFamily", family), ("MaxResults", PAGE_SIZE)]
            fetched.responses += await api.call_pages(
                http, calls.credentials, regions[0], "DescribeInstanceTypes", params, f"types:{family}"
            )
        types = responses.instance_types(fetched.responses)
        if not types:
            raise ParseError("DescribeInstanceTypes described no instance type of " + " or ".join(A100_FAMILIES))
        pricings = [p for p in CHARGES if p in scope.pricings]
        for found in await _all(self._region(calls, region, pricings, types, fetched.notes) for region in regions):
            fetched.responses += found
        return fetched

    async def _region(
        self, calls: _Calls, region: str, pricings: list[Pricing], types: dict[str, InstanceType], notes: list[str]
    ) -> list[RawResponse]:
        base = [("RegionId", region), ("DestinationResource", "InstanceType")]
        stocks = await _all(
            calls.one(region, "DescribeAvailableResource", base + CHARGES[p][1], f"stock:{region}:{CHARGES[p][0]}")
            for p in pricings
        )
        asks: list[tuple[list[tuple[str, str]], str]] = []
        none_for: list[str] = []
        for pricing, raw in zip(pricings, stocks, strict=True):
            listed = responses.stock(raw)
            a100 = sorted(sku for sku in listed if _family(sku) in A100_FAMILIES)
            if not a100:
                none_for.append(CHARGES[pricing][0])
            for sku in a100:
                if sku not in types:
                    notes.append(f"{region}: {sku} is listed for sale but DescribeInstanceTypes does not describe it")
                    continue
                head = [("RegionId", region), ("ResourceType", "instance"), ("InstanceType", sku)]
                if pricing is Pricing.SPOT:  # spot prices differ by zone
                    for zone in sorted({z.zone for z in listed[sku]}):
                        label = f"price:{region}:{pricing.value}:{sku}:{zone}"
                        asks.append((head + PRICE_PARAMS[pricing] + [("ZoneId", zone)], label))
                else:
                    label = f"price:{region}:{pricing.value}:{sku}"
                    asks.append((head + PRICE_PARAMS[pricing], label))
        if none_for:
            notes.append(f"{region}: DescribeAvailableResource lists no A100 instance type ({', '.join(none_for)})")
        prices = await _all(calls.one(region, "DescribePrice", params, label) for params, label in asks)
        return [*stocks, *prices]

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
        types = responses.instance_types(type_pages)
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


def _family(sku: str) -> str:
    """`ecs.gn7e-c16g1.4xlarge` -> `ecs.gn7e`."""
    return sku.split("-", 1)[0]
