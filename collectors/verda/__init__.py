"""Verda (formerly DataCrunch): A100 instances from the Verda Cloud API.

Sources, all under `https://api.verda.com/v1` (the base URL of Verda's own Python SDK; the old
`https://api.datacrunch.io/v1` host, still SkyPilot's default, is not used; `GPUPRICE_VERDA_BASE_URL`
replaces the host):

- `POST /oauth2/token` with JSON `{"grant_type": "client_credentials", "client_id", "client_secret"}`
  (`GPUPRICE_VERDA_CLIENT_ID` / `GPUPRICE_VERDA_CLIENT_SECRET`, or Verda's own `VERDA_CLIENT_ID` /
  `VERDA_CLIENT_SECRET`; without them the run is skipped) → `{"access_token", "refresh_token",
  "scope", "token_type", "expires_in"}`. The token is sent as `Authorization: Bearer` on the calls
  below and kept in memory only: the token answer is never stored, logged or put in an error.
- `GET /instance-types?currency=usd` → a list of `{instance_type ("1A100.22V"), price_per_hour and
  spot_price as **strings** ("1.16"), currency ("usd"), gpu {description "1x A100 SXM4 80GB",
  number_of_gpus}, gpu_memory {size_in_gigabytes, the instance's total}, cpu, memory, …}`.
  Prices are per **instance**-hour. The GPU comes from `gpu.description` (count checked against
  `number_of_gpus`, memory against `gpu_memory`); CPU types and other GPUs are skipped. The host
  shape is `cpu.number_of_cores` (vCPUs) and `memory.size_in_gigabytes` (RAM, stored as GiB, as
  SkyPilot's Verda catalog and gpuhunt take it).
- `GET /instance-availability?isSpot=false` and `?isSpot=true` (the SDK's parameter name) →
  `[{location_code ("FIN-01"), availabilities: ["1A100.22V", …]}]`: what can be deployed where now.
- `GET /long-term/periods/instances` → `[{code ("12_MONTHS"), name, is_enabled, unit_name ("month"),
  unit_value, discount_percentage}]`: contracts paid up front, a discount off the on-demand rate.

Offers: per A100 type and location — every location the availability answers name, or only
`GPUPRICE_VERDA_REGIONS` when set — one `on_demand` and, where the type has a spot price, one
`spot` offer (the price is the same in every location). A type missing from a location's list is
`sold_out` there, with a note that the list cannot tell "sold out" from "not offered there".
Long-term periods of 1 month → `monthly`, 12 months → `reserved_1y`, 36 → `reserved_3y`, priced
per hour at the discounted rate (`list_price` keeps the on-demand rate; reserved terms carry their
length, and the whole term is what a job pays); other lengths (3, 6, 24 months) have no pricing
model in the contract and are listed in the on-demand offers' notes. If the periods call fails or
its answer cannot be read, those pricings are reported as not collected and the rest stands.

Errors are `{"code", "message"}` (`unauthorized_request`, `invalid_request`, …) and end the run
with Verda's words. Billing granularity is not stated in Verda's public docs: quotes keep the
default per-second rule, so very short jobs may be under-costed.
"""

from __future__ import annotations

import json
from typing import ClassVar

from collectors.base import Collector, Fetched, RawResponse, Scope
from collectors.errors import CollectorError, MissingCredentials, ParseError
from collectors.http import Http
from collectors.jsonapi import fetch_explained
from collectors.verda.offers import PROVIDER, a100_types, availability, build_quotes, periods
from pricedb import redact
from pricedb.models import Pricing, Quote

__all__ = ["VerdaCollector"]

API = "https://api.verda.com/v1"
TOKEN_URL = f"{API}/oauth2/token"
INSTANCE_TYPES_URL = f"{API}/instance-types?currency=usd"
AVAILABILITY_URL = f"{API}/instance-availability?isSpot={{spot}}"
LONG_TERM_URL = f"{API}/long-term/periods/instances"
LONG_TERM_PRICINGS = frozenset({Pricing.MONTHLY, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})
OFFLINE_CREDENTIALS = ("offline-replay-client-id", "offline-replay-client-secret")
CREDENTIALS_HINT = (
    "check GPUPRICE_VERDA_CLIENT_ID / GPUPRICE_VERDA_CLIENT_SECRET (or VERDA_CLIENT_ID / VERDA_CLIENT_SECRET)"
)
LABEL_TYPES, LABEL_ON_DEMAND, LABEL_SPOT, LABEL_LONG_TERM = (
    "instance-types",
    "available:on_demand",
    "available:spot",
    "long-term",
)


class VerdaCollector(Collector):
    name: ClassVar[str] = PROVIDER
    title: ClassVar[str] = "Verda (DataCrunch)"
    source_urls: ClassVar[tuple[str, ...]] = (TOKEN_URL, INSTANCE_TYPES_URL, LONG_TERM_URL)
    pricings: ClassVar[frozenset[Pricing]] = frozenset({Pricing.ON_DEMAND, Pricing.SPOT}) | LONG_TERM_PRICINGS
    scopes: ClassVar[tuple[Scope, ...]] = (Scope("all", pricings, 60),)

    def credentials(self) -> tuple[str, str]:
        if self.settings.offline:
            return OFFLINE_CREDENTIALS
        client_id, secret = self.settings.verda_client_id, self.settings.verda_client_secret
        if client_id is None or secret is None or not client_id.get_secret_value() or not secret.get_secret_value():
            raise MissingCredentials(
                "Verda's API needs OAuth2 client credentials: set GPUPRICE_VERDA_CLIENT_ID and "
                "GPUPRICE_VERDA_CLIENT_SECRET (or VERDA_CLIENT_ID / VERDA_CLIENT_SECRET), "
                "from the Verda cloud console"
            )
        return client_id.get_secret_value().strip(), secret.get_secret_value().strip()

    async def _get(self, http: Http, url: str, label: str, token: str) -> RawResponse:
        return await fetch_explained(
            http, "GET", url, source="Verda API", auth_hint=CREDENTIALS_HINT, label=label,
            headers={"Authorization": f"Bearer {token}"},
        )  # fmt: skip

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        token = await access_token(http, *self.credentials())
        fetched = Fetched([await self._get(http, INSTANCE_TYPES_URL, LABEL_TYPES, token)])
        for label, spot in ((LABEL_ON_DEMAND, "false"), (LABEL_SPOT, "true")):
            fetched.responses.append(await self._get(http, AVAILABILITY_URL.format(spot=spot), label, token))
        if scope.pricings & LONG_TERM_PRICINGS:
            try:
                raw = await self._get(http, LONG_TERM_URL, LABEL_LONG_TERM, token)
                periods(raw)  # an answer that cannot be read costs these pricings only, not the run
                fetched.responses.append(raw)
            except CollectorError as exc:
                for pricing in scope.pricings & LONG_TERM_PRICINGS:
                    fetched.not_covered[pricing] = f"long-term periods could not be read: {exc}"
        return fetched

    def parse(self, fetched: Fetched) -> list[Quote]:
        by_label = {raw.label: raw for raw in fetched.responses}
        missing = [label for label in (LABEL_TYPES, LABEL_ON_DEMAND, LABEL_SPOT) if label not in by_label]
        if missing:
            raise ParseError(f"Verda answers missing from the run: {', '.join(missing)}")
        raw_types = by_label[LABEL_TYPES]
        terms = periods(by_label[LABEL_LONG_TERM]) if LABEL_LONG_TERM in by_label else None
        return build_quotes(
            self.settings,
            raw_types,
            a100_types(raw_types),
            availability(by_label[LABEL_ON_DEMAND]),
            availability(by_label[LABEL_SPOT]),
            terms,
        )


async def access_token(http: Http, client_id: str, client_secret: str) -> str:
    """The client-credentials grant. The answer holds the token: it is read here and dropped."""
    body = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret}
    raw = await fetch_explained(
        http,
        "POST",
        TOKEN_URL,
        source="Verda OAuth2 token endpoint",
        auth_hint=CREDENTIALS_HINT,
        label="token",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        answer = json.loads(raw.body)
    except ValueError:
        raise ParseError(f"{TOKEN_URL}: the token answer is not JSON") from None  # never echo the body
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if not isinstance(token, str) or not token:
        keys = ", ".join(sorted(answer)) if isinstance(answer, dict) else type(answer).__name__
        raise ParseError(f"{TOKEN_URL}: no access_token in the token answer (fields: {keys})")
    kind = answer.get("token_type", "Bearer")
    if str(kind).lower() != "bearer":
        raise ParseError(f"{TOKEN_URL}: token_type {kind!r}, expected Bearer")
    redact.learn(token)  # a credential no setting holds: an error body echoing it must not leak it
    return token
