"""`VerdaCollector`: the token, instance types (every GPU type), availability and long-term periods
(collectors.verda.api), read into quotes (collectors.verda.offers).

Source: the Verda Cloud API under https://api.verda.com/v1 (the package docstring has the details)."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from collectors.base import Collector, Fetched, Scope
from collectors.errors import CollectorError, MissingCredentials, ParseError
from collectors.http import Http
from collectors.skipped import counted_notes
from collectors.verda import api
from collectors.verda.api import (
    AVAILABILITY_URL,
    INSTANCE_TYPES_URL,
    LABEL_LONG_TERM,
    LABEL_ON_DEMAND,
    LABEL_SPOT,
    LABEL_TYPES,
    LONG_TERM_URL,
    OFFLINE_CREDENTIALS,
    TOKEN_URL,
    access_token,
)
from collectors.verda.offers import PROVIDER, availability, build_quotes, gpu_types, periods
from pricedb.models import Pricing, Quote

LONG_TERM_PRICINGS = frozenset({Pricing.MONTHLY, Pricing.RESERVED_1Y, Pricing.RESERVED_3Y})


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

    async def fetch(self, http: Http, scope: Scope) -> Fetched:
        token = await access_token(http, *self.credentials())
        raw_types = await api.get(http, INSTANCE_TYPES_URL, LABEL_TYPES, token)
        fetched = Fetched([raw_types])
        with contextlib.suppress(ParseError):  # parse() reports it
            fetched.notes = counted_notes(gpu_types(raw_types)[1])
        for label, spot in ((LABEL_ON_DEMAND, "false"), (LABEL_SPOT, "true")):
            fetched.responses.append(await api.get(http, AVAILABILITY_URL.format(spot=spot), label, token))
        if scope.pricings & LONG_TERM_PRICINGS:
            try:
                raw = await api.get(http, LONG_TERM_URL, LABEL_LONG_TERM, token)
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
        types, _ = gpu_types(raw_types)  # what is left out is in the run's notes (fetch)
        return build_quotes(
            self.settings,
            self.quote,
            raw_types,
            types,
            availability(by_label[LABEL_ON_DEMAND]),
            availability(by_label[LABEL_SPOT]),
            terms,
        )
