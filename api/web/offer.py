"""The offer page: one offer's price history as charts (native and ¥/GB·h), the points exactly as
`/offers/history` gives them (history_answer), beside the offer as `/offers` gives it now
(offers_answer), the FX rate its CNY figures used and the record of the run that observed it.

The offer is named by its short id (`id`, api.web.offer_id: the links the pages write) or by its
key (`provider`, `region`, `sku`, `pricing`, as links did before); an id that names no offer ever
observed is a 404 page saying so, and one that several offers share (a 12-digit id written before
they did) a 300 page listing them, each with its own link."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import partial
from typing import Any

from api.answers import offers_answer, run_json
from api.history import history_answer
from api.query import HistoryParams, OffersParams
from api.state import AppState
from api.web.html import Page, query_string
from api.web.offer_id import OfferKey, is_offer_id, link_ids, offer_keys_of
from api.web.params import Problems, given, parse
from pricedb.runs import run_by_id

KEY = ("provider", "region", "sku", "pricing")
WINDOWS = (7, 30, 90, 365)  # days, offered as links


@dataclass
class OfferView:
    page: Page
    problems: Problems
    key: dict[str, str] = field(default_factory=dict)
    offer: dict[str, Any] | None = None
    history: dict[str, Any] = field(default_factory=dict)
    series: dict[str, Any] | None = None
    series_count: int = 0
    run: dict[str, Any] | None = None
    windows: list[tuple[int, str]] = field(default_factory=list)
    status: int = 200
    choices: list[tuple[OfferKey, str]] = field(default_factory=list)  # the offers a shared id names, linked

    def history_query(self) -> str:
        return query_string(given(self.page, HistoryParams).items())


def _same(row: dict[str, Any], key: dict[str, str]) -> bool:
    return all(str(row.get(name, "")).lower() == key[name].lower() for name in KEY)


def offer_view(state: AppState, page: Page) -> OfferView:
    asked = page.values().get("id", [""])[-1].strip().lower()
    return _by_id(state, page, asked) if asked else _by_key(state, page, page)


def _by_id(state: AppState, page: Page, short: str) -> OfferView:
    """The offer a short id names, as its key would show it (its links keep the id); a 404 if none,
    the offers it names, each with its own link, if several."""
    keys = offer_keys_of(state, short) if is_offer_id(short) else []
    if not keys:
        message = "no offer gpuprice has observed has this id: the link is mistyped or from other data"
        problems = [{"parameter": "id", "message": message, "value": short}]
        return OfferView(page, problems, dict.fromkeys(KEY, ""), status=404)
    if len(keys) > 1:
        linking = replace(page, link_source=partial(link_ids, state))  # whole ids: these keys share 12 digits
        choices = [(key, linking.offer_link(dict(zip(KEY, key, strict=True)))) for key in keys]
        return OfferView(page, [], dict.fromkeys(KEY, ""), status=300, choices=choices)
    (key,) = keys
    named = [*zip(KEY, key, strict=True), *((k, v) for k, v in page.items if k not in ("id", *KEY, "gpu"))]
    return _by_key(state, Page(page.path, named, page.lang, page.lang_given, page.offline, page.link_source), page)


def _by_key(state: AppState, page: Page, shown: Page) -> OfferView:
    """The offer `page` names by its key; `shown`: the page as asked, which its window links keep."""
    last = {name: texts[-1] for name, texts in page.values().items()}
    key = {name: last.get(name, "").strip() for name in KEY}
    missing = [name for name in KEY if not key[name]]
    if missing:
        problems = [{"parameter": n, "message": "name the offer: provider, region, sku and pricing", "value": None}
                    for n in missing]  # fmt: skip
        return OfferView(page, problems, key)
    history_params, problems = parse(HistoryParams, {**given(page, HistoryParams), "limit": "10"})
    filters = {n: v for n, v in given(page, OffersParams).items() if n in ("provider", "region", "pricing", "gpu")}
    offers_params, more = parse(OffersParams, {**filters, "limit": str(state.settings.max_page_limit)})
    found = OfferView(page, problems + more, key)
    if history_params is None or offers_params is None:
        return found
    current = json.loads(offers_answer(state, offers_params))["offers"]
    found.offer = next((row for row in current if _same(row, key)), None)
    found.history = json.loads(history_answer(state, history_params))
    matching = [s for s in found.history["series"] if _same(s, key)]
    found.series_count = len(matching)
    found.series = matching[0] if matching else None
    if found.offer is not None and found.offer.get("run_id") is not None:
        run = run_by_id(state.cursor(), found.offer["run_id"])
        found.run = run_json(run) if run is not None else None
    now = state.clock()
    found.windows = [(days, shown.here(since=(now - timedelta(days=days)).date().isoformat(), until=None))
                     for days in WINDOWS]  # fmt: skip
    return found
