"""`VastCollector`: one marketplace search per pricing (collectors.vast.query), its offers read
(collectors.vast.offers) and grouped, one quote per group (collectors.market).

Source: https://console.vast.ai/api/v0/bundles/ (the package docstring has the details)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any, ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import ParseError
from collectors.http import Http
from collectors.market import amount, summarize
from collectors.skipped import UNKNOWN_GPU, counted_notes
from collectors.vast.offers import SKIP_UNKNOWN, Group, Listing, card_of, plausible, read_offer
from collectors.vast.query import BUNDLES_URL, LIMIT, SEARCH_TYPE, search
from pricedb.cards import MODEL_FACTS
from pricedb.models import Availability, Pricing, Quote, Unit
from pricedb.redact import get_logger

log = get_logger("gpuprice.collectors.vast")

PRICING_OF_LABEL = {label: pricing for pricing, label in SEARCH_TYPE.items()}


class VastCollector(Collector):
    name = "vast"
    title = "Vast.ai"
    source_urls = (BUNDLES_URL,)
    pricings = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
    scopes = (Scope("all", pricings, 60),)
    billing_increment_s: ClassVar[int] = 1
    billing_minimum_s: ClassVar[int] = 0

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        countries = self.settings.regions_for(self.name, [])
        key = self.settings.vast_api_key.get_secret_value() if self.settings.vast_api_key else None
        responses: list[RawResponse] = []
        notes: list[str] = []
        unknown: dict[object, str] = {}  # offer id → the gpu_name the card table does not know
        for pricing in sorted(scope.pricings & self.pricings):
            raw = await search(http, pricing, countries, key)
            offers = raw.json().get("offers")
            if isinstance(offers, list) and len(offers) >= LIMIT:
                notes.append(f"the {raw.label} search returned {len(offers)} offers, its limit: the answer may be cut")
            unknown.update(unknown_cards(offers if isinstance(offers, list) else []))
            responses.append(raw)
        notes += counted_notes(Counter(f"{UNKNOWN_GPU}: {name}" for name in unknown.values()))
        return Fetched(responses, notes=notes)

    def parse(self, fetched: Fetched) -> list[Quote]:
        quotes: list[Quote] = []
        skipped: dict[str, int] = defaultdict(int)
        total = 0
        for raw in fetched.responses:
            pricing = PRICING_OF_LABEL.get(raw.label)
            if pricing is None:
                raise ParseError(f"{raw.url}: a response labelled {raw.label!r}, not a known search")
            offers = raw.json_list("offers", "Vast.ai search API")
            total += len(offers)
            groups: dict[Group, list[Listing]] = defaultdict(list)
            for number, offer in enumerate(offers, 1):
                listing = read_offer(offer, pricing, f"{raw.url} ({raw.label}) offer {number}")
                if isinstance(listing, str):
                    skipped[listing] += 1
                else:
                    groups[listing.group].append(listing)
            for group, listings in groups.items():
                quote = self._quote(raw, pricing, group, listings)
                if quote is not None:
                    quotes.append(quote)
        log.debug("vast: %d offers read, %d quotes, skipped %s", total, len(quotes), dict(skipped))
        if not quotes:
            reasons = "; ".join(f"{n} × {why}" for why, n in sorted(skipped.items())) or "the answers were empty"
            raise ParseError(f"{total} offers read but no GPU offer could be priced ({reasons})")
        return sorted(quotes, key=lambda q: q.key)

    def _quote(self, raw: RawResponse, pricing: Pricing, group: Group, listings: list[Listing]) -> Quote | None:
        kept = [listing for listing in listings if plausible(listing)]
        if not kept:
            return None
        market = summarize(kept, lambda listing: listing.price)
        best = market.cheapest
        notes = [market.note("offer", "USD/h")]
        if best.host:
            notes.append(
                f"host shape {best.host['vcpus']} vCPUs, {best.host['memory_gib']:g} GiB RAM: the cheapest offer's "
                "(cpu_cores_effective, cpu_ram); other hosts in the group may differ"
            )
        notes.append(best.describe(pricing))
        if len(kept) < len(listings):
            low, high = MODEL_FACTS[best.spec.model].usd_per_gpu_hour
            odd = [x for x in listings if x not in kept]
            asks = ", ".join(f"offer {x.offer_id} at {amount(x.per_gpu)}" for x in odd)
            notes.append(f"left out, outside the plausible {low:g}–{high:g} USD per GPU-hour: {asks}")
        if pricing is Pricing.SPOT:
            notes.append("interruptible: the minimum bid, outbid hosts stop the instance")
        return self.quote(
            raw,
            f"{group.sku} {group.region} {pricing.value}",
            region=group.region,
            sku=group.sku,
            **best.spec.quote_fields(),
            gpu_count=group.gpu_count,
            pricing=pricing,
            price=round(market.cheapest_price, 6),
            currency="USD",
            unit=Unit.HOUR,
            availability=Availability.AVAILABLE,  # the search lists rentable, unrented offers only
            notes="; ".join(notes),
            **best.host,
        )


def unknown_cards(offers: list[Any]) -> dict[object, str]:
    """Offer id → gpu_name, for the offers whose card the table does not know (counted once per
    offer in the run's notes, though both searches list it)."""
    found: dict[object, str] = {}
    for offer in offers:
        if not isinstance(offer, Mapping) or not isinstance(offer.get("gpu_ram"), int | float):
            continue
        name = str(offer.get("gpu_name", "")).strip()
        if card_of(name, float(offer["gpu_ram"])) == SKIP_UNKNOWN:
            found[offer.get("id")] = name
    return found
