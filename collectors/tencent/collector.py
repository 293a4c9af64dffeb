"""`TencentCollector`: which calls a scope makes, and how their answers become quotes.

Source: CVM API `DescribeZoneInstanceConfigInfos` at https://cvm.tencentcloudapi.com/ (TC3-signed
POST, one call per region and charge type; see collectors.tencent.api). Scope `list` (every 6 h:
stock moves faster than list prices) asks for POSTPAID_BY_HOUR and PREPAID, scope `spot` (hourly)
for SPOTPAID. A call that fails fails the whole run, so that a missing region or charge type never
reads as withdrawn offers; the last good offers stay, marked stale.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import CollectorError, FetchError, ParseError
from collectors.http import Http
from collectors.tencent import api, items
from collectors.tencent.instance_types import FAMILIES
from pricedb.models import Pricing, Quote

# GT4 (A100) is sold in Beijing zone 5, Shanghai zone 4 and Guangzhou zone 4 (Tencent's "GPU 计算型实例"
# page, GT4 configuration table: "广州四区，上海四区，北京五区"); the other GPU families are sold there too
# (and elsewhere: GN10X/GN7 in Nanjing, Chengdu, Chongqing, …). Widen with
# GPUPRICE_TENCENT_REGIONS=ap-beijing,ap-nanjing,… — each region is one call per charge type.
DEFAULT_REGIONS = ("ap-beijing", "ap-shanghai", "ap-guangzhou")

LIST_PRICINGS = frozenset({Pricing.ON_DEMAND, Pricing.MONTHLY, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
SPOT_PRICINGS = frozenset({Pricing.SPOT})


class TencentCollector(Collector):
    name: ClassVar[str] = "tencent"
    title: ClassVar[str] = "Tencent Cloud (CVM)"
    source_urls: ClassVar[tuple[str, ...]] = (api.ENDPOINT,)
    pricings: ClassVar[frozenset[Pricing]] = LIST_PRICINGS | SPOT_PRICINGS
    scopes: ClassVar[tuple[Scope, ...]] = (
        Scope("list", LIST_PRICINGS, 6 * 60),
        Scope("spot", SPOT_PRICINGS, 60),
    )
    # Pay-as-you-go and spot instances are billed per second and settled hourly (CVM "价格总览":
    # "按量计费实例刊例价单位为小时，按秒计费，并按小时结算").
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0
    deadline_s: ClassVar[float] = 600.0  # signed calls per region and charge type

    def regions(self) -> list[str]:
        return self.settings.regions_for(self.name, list(DEFAULT_REGIONS))

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        keys = api.credentials(self.settings)
        charge_types = [ct for ct, pricings in api.CHARGE_TYPES.items() if pricings & scope.pricings]
        calls = [(region, ct) for region in self.regions() for ct in charge_types]
        results = await asyncio.gather(
            *(api.describe(http, region, ct, keys) for region, ct in calls), return_exceptions=True
        )
        failures: list[CollectorError] = []
        responses: list[RawResponse] = []
        for result in results:
            if isinstance(result, CollectorError):
                failures.append(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                responses.append(result)
        if failures:
            # One region or charge type missing would read as offers withdrawn: the run fails instead,
            # and the last good offers stay (marked stale).
            more = f" (and {len(failures) - 1} more of the {len(calls)} calls failed)" if len(failures) > 1 else ""
            raise FetchError(f"{failures[0]}{more}") from failures[0]
        skipped: Counter[str] = Counter()
        for raw in responses:
            with contextlib.suppress(ParseError):  # parse() reports it
                items.priced(raw, self.settings.hours_per_year, skipped)
        notes = [f"{why} ({n} item{'s' if n > 1 else ''})" for why, n in sorted(skipped.items())]
        return Fetched(responses, notes=notes)

    def parse(self, fetched: Fetched) -> list[Quote]:
        offers: dict[tuple[str, str, Pricing], list[items.Priced]] = {}
        read = 0
        for raw in fetched.responses:
            entries = items.priced(raw, self.settings.hours_per_year)
            read += len(items.items_of(raw))
            for entry in entries:
                offers.setdefault((entry.region, entry.sku, entry.pricing), []).append(entry)
        if not offers:
            raise ParseError(
                f"no priced GPU instance type ({', '.join(FAMILIES)} families) in {len(fetched.responses)} "
                f"answer(s) holding {read} item(s)"
            )
        return [items.offer_quote(entries, self.quote) for _, entries in sorted(offers.items())]
