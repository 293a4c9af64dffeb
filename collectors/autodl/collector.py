"""`AutodlCollector`: the console API walk (collectors.autodl.api), its machines
(collectors.autodl.machines) per instance size, grouped like a marketplace (collectors.market).

Source: AutoDL's console API, https://fe-config-backend.autodl.com/api/v1/autodl/region/tag and
https://api.autodl.com/api/v1/machine/region/gpu_type, .../user/machine/list (the package docstring
has the details)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, ClassVar

from collectors.autodl.api import GPU_TYPE_URL, MACHINE_LIST_URL, OK_CODES, REGION_TAG_URL, call, machine_pages
from collectors.autodl.machines import (
    INSTANCE_SIZES,
    PRICE_UNIT_CNY,
    Machine,
    RegionGroup,
    gpu_types,
    read_machine,
    region_groups,
)
from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import FetchError, MissingCredentials, ParseError
from collectors.http import Http
from collectors.market import amount, summarize
from collectors.skipped import UNKNOWN_GPU, counted_notes
from pricedb.models import Availability, Pricing, Quote, Unit

OFFLINE_TOKEN = "gpuprice-offline-replay"  # offline replays need no real token
REGIONS, GPU_TYPES, MACHINES = "regions", "gpu types ", "machines "  # response labels


@dataclass(frozen=True)
class _Listing:
    machine: Machine
    size: int
    price: float  # CNY per instance, per hour or per month
    available: bool


class AutodlCollector(Collector):
    name = "autodl"
    title = "AutoDL"
    source_urls = (REGION_TAG_URL, GPU_TYPE_URL, MACHINE_LIST_URL)
    pricings = frozenset({Pricing.ON_DEMAND, Pricing.MONTHLY})
    scopes = (Scope("all", pricings, 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0

    def _token(self) -> str:
        if self.settings.autodl_token is not None and self.settings.autodl_token.get_secret_value().strip():
            return self.settings.autodl_token.get_secret_value().strip()
        if self.settings.offline:
            return OFFLINE_TOKEN
        raise MissingCredentials(
            "AutoDL prices need your autodl.com login token: log in at autodl.com, copy the Authorization "
            "header of any console request and set GPUPRICE_AUTODL_TOKEN to it"
        )

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        token = self._token()
        raw, data = await call(http, "GET", REGION_TAG_URL, token, REGIONS)
        groups = self._chosen(region_groups(data, raw.url))
        responses, notes = [raw], []
        unknown: Counter[str] = Counter()  # per name, the region groups listing GPUs of it
        for group in groups:
            body = {"region_sign_list": list(group.signs)}
            raw, data = await call(http, "POST", GPU_TYPE_URL, token, GPU_TYPES + group.label, body)
            responses.append(raw)
            known, others = gpu_types(data, raw.url)
            unknown.update(f"{UNKNOWN_GPU}: {name}" for name in others)
            names = [name for name, (_, total) in known.items() if total > 0]
            if names:
                responses.extend(await machine_pages(http, token, list(group.signs), names, MACHINES + group.label))
        if not any(r.label.startswith(MACHINES) for r in responses):
            notes.append(f"no GPU type the card table knows in any of the {len(groups)} region groups")
        return Fetched(responses, notes=notes + counted_notes(unknown))

    def _chosen(self, groups: list[RegionGroup]) -> list[RegionGroup]:
        wanted = self.settings.regions_for(self.name, [])
        if not wanted:
            return groups
        known = {sign for group in groups for sign in group.signs}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise FetchError(f"GPUPRICE_AUTODL_REGIONS names unknown region signs {unknown}; known: {sorted(known)}")
        chosen = [RegionGroup(tuple(s for s in g.signs if s in wanted), g.name) for g in groups]
        return [group for group in chosen if group.signs]

    def parse(self, fetched: Fetched) -> list[Quote]:
        names: dict[str, str] = {}
        idle: dict[tuple[str, str], int] = {}  # (region sign, GPU type) → idle GPUs in its group
        machines: dict[str, tuple[Machine, RawResponse]] = {}
        skipped: dict[str, int] = defaultdict(int)
        for raw in fetched.responses:
            data = _data(raw)
            if raw.label == REGIONS:
                names.update({sign: g.name for g in region_groups(data, raw.url) for sign in g.signs})
            elif raw.label.startswith(GPU_TYPES):
                for gpu, (free, _) in gpu_types(data, raw.url)[0].items():
                    idle.update({(sign, gpu): free for sign in raw.label[len(GPU_TYPES) :].split(",")})
            elif raw.label.startswith(MACHINES):
                items = data.get("list") if isinstance(data, dict) else None
                if not isinstance(items, list):
                    raise ParseError(f"{raw.url}: the {raw.label} answer has no data.list")
                for number, item in enumerate(items, 1):
                    if not isinstance(item, dict):
                        raise ParseError(f"{raw.url}: {raw.label} item {number} is not an object")
                    machine = read_machine(item, names, f"{raw.url} ({raw.label}) item {number}")
                    if isinstance(machine, str):
                        skipped[machine] += 1
                    else:
                        machines.setdefault(machine.machine_id, (machine, raw))
        groups: dict[tuple[str, int, str, Pricing], list[_Listing]] = defaultdict(list)
        for machine, _ in machines.values():
            region_idle = idle.get((machine.region, machine.gpu_name))
            for size in (n for n in INSTANCE_SIZES if n <= machine.gpu_number):
                free = machine.free >= size and region_idle != 0
                prices = {Pricing.ON_DEMAND: machine.payg, Pricing.MONTHLY: machine.packages.get("monthly")}
                for pricing, per_gpu in prices.items():
                    if per_gpu is not None:
                        key = (machine.gpu_name, size, machine.region, pricing)
                        groups[key].append(_Listing(machine, size, per_gpu * size, free))
        if not groups:
            reasons = "; ".join(f"{n} × {why}" for why, n in sorted(skipped.items())) or "no machines listed"
            raise ParseError(f"no GPU machine with a price in the AutoDL answers ({reasons})")
        sources = {machine.machine_id: raw for machine, raw in machines.values()}
        ordered = sorted(groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][1], kv[0][3]))
        return [self._quote(key, listings, sources, idle) for key, listings in ordered]

    def _quote(
        self,
        key: tuple[str, int, str, Pricing],
        listings: list[_Listing],
        sources: dict[str, RawResponse],
        idle: dict[tuple[str, str], int],
    ) -> Quote:
        gpu, size, region, pricing = key
        free = [x for x in listings if x.available]
        market = summarize(free or listings, lambda x: x.price)
        best = market.cheapest.machine
        raw = sources[best.machine_id]
        unit = Unit.HOUR if pricing is Pricing.ON_DEMAND else Unit.MONTH
        money = "CNY/h" if unit is Unit.HOUR else "CNY/month"
        gpus = "1 GPU" if size == 1 else f"{size} GPUs"
        if free:
            notes = [market.note("machine", money, f" with {gpus} free ({len(listings)} have {size}+ GPUs)")]
        else:
            why = f"the region reports 0 idle {gpu}" if idle.get((region, gpu)) == 0 else "by the machines' idle counts"
            notes = [
                f"sold out: no machine has {gpus} free ({why})",
                market.note("machine", money, f" with {size}+ GPUs"),
            ]
        per_gpu = market.cheapest_price / size
        if pricing is Pricing.ON_DEMAND:
            notes.append(f"{amount(per_gpu)} CNY per GPU-hour (payg_price {round(per_gpu / PRICE_UNIT_CNY)}) × {size}")
            others = {k: v for k, v in best.packages.items() if k in ("daily", "weekly")}
            if others:
                extra = ", ".join(f"{kind} {amount(price)}" for kind, price in sorted(others.items()))
                notes.append(f"{extra} CNY per GPU packages published too, not collected (no such pricing)")
        else:
            notes.append(f"monthly package (包月) {amount(per_gpu)} CNY per GPU × {size}; its length is not stated")
        notes.append(f"machine {best.machine_id} ({best.alias or 'no alias'}) in {best.region_name or region}")
        if best.host(size):
            notes.append("host shape: that machine's cpu_per_gpu and mem_per_gpu × GPUs")
        notes.append(f"AutoDL's integer prices read as {PRICE_UNIT_CNY:g} CNY each (the unit is not stated)")
        listed = best.payg_list * size if pricing is Pricing.ON_DEMAND and best.payg_list else None
        return self.quote(
            raw,
            f"{gpu} x{size} {region} {pricing.value}",
            region=region,
            sku=f"{gpu} x{size}",
            **best.spec.quote_fields(),
            gpu_count=size,
            pricing=pricing,
            price=round(market.cheapest_price, 6),
            currency="CNY",
            unit=unit,
            availability=Availability.AVAILABLE if free else Availability.SOLD_OUT,
            list_price=round(listed, 6) if listed else None,
            notes="; ".join(notes),
            **best.host(size),
        )


def _data(raw: RawResponse) -> Any:
    answer = raw.json()
    if not isinstance(answer, dict) or answer.get("code") not in OK_CODES:
        raise ParseError(f"{raw.url}: the {raw.label} answer is not a successful AutoDL envelope")
    return answer.get("data")
