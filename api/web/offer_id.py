"""Short offer links: `/offer?id=<12 hex digits>`, the first 48 bits of the MD5 of the offer's key
(provider, region, sku, pricing, joined by U+001F). The key alone decides it, so an offer keeps its
id in every run, in every gpuprice over the same data, and after it is withdrawn (a digest's line,
an old bookmark): the id is looked up among the current offers, then among every offer ever
observed (`history_series`, laid out at the last compaction, and the observations since).

The market page writes one link per row: its old form (`/offer?provider=…&region=…&sku=…&pricing=…
&gpu=…`, still served) was a fifth of the 37-column page of 2,000 offers, 1.88 MB, which every
compressor reads through. Two offers share a 12-digit id with a chance of ~1 in 56,000 at 100,000
offers ever seen, so an id is any start of the MD5 from 12 digits to all 32: an offer whose 12
digits another offer ever observed shares is linked by its whole MD5 (`LinkIds`), and a start that
several offers share names them all (the page lists them, each with its own link), never one of them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from api.state import AppState
from pricedb.queries import CurrentOffers

OfferKey = tuple[str, str, str, str]
ID_DIGITS = 12
LONG_ID_DIGITS = 32  # the whole MD5: the id of an offer whose 12 digits are shared
SEPARATOR = "\x1f"  # in no provider, region, sku or pricing (the key's texts are single-line names)
_ID = re.compile(f"[0-9a-f]{{{ID_DIGITS},{LONG_ID_DIGITS}}}")
ID_SQL = f"left(md5(concat_ws(chr(31), provider, region, sku, pricing)), {ID_DIGITS})"  # offer_id in DuckDB
# Every offer ever observed: laid out by offer at the last compaction, and in the observations since.
EVER_OBSERVED_SQL = """
    WITH laid_out AS (SELECT coalesce(max(compacted_upto), 0) AS upto FROM history_layout)
    SELECT provider, region, sku, pricing FROM history_series
    UNION
    SELECT provider, region, sku, pricing FROM observations WHERE observation_id > (SELECT upto FROM laid_out)
"""


def full_id(provider: str, region: str, sku: str, pricing: str) -> str:
    """The whole MD5 of the offer's key, of which every id of the offer is a start."""
    key = SEPARATOR.join((provider, region, sku, pricing)).encode()
    return hashlib.md5(key, usedforsecurity=False).hexdigest()


def offer_id(provider: str, region: str, sku: str, pricing: str) -> str:
    """The short id of the offer with this key (its link's unless it is shared: `LinkIds`)."""
    return full_id(provider, region, sku, pricing)[:ID_DIGITS]


def is_offer_id(text: str) -> bool:
    return _ID.fullmatch(text) is not None


LinkIds = Callable[[str, str, str, str], str]  # an offer's key -> the id its links give


def link_ids_of(shared: frozenset[str]) -> LinkIds:
    """The id each offer is linked by: its 12 digits, or its whole MD5 when another offer ever
    observed shares those 12 (`shared`), so that every link gpuprice writes names one offer. With
    none shared (nearly always), `offer_id` itself: a market row's link costs what it did."""
    if not shared:
        return offer_id

    def link_id(provider: str, region: str, sku: str, pricing: str) -> str:
        whole = full_id(provider, region, sku, pricing)
        return whole if whole[:ID_DIGITS] in shared else whole[:ID_DIGITS]

    return link_id


def shared_ids(state: AppState) -> frozenset[str]:
    """The 12-digit ids offers ever observed share: read once per set of current offers (a run that
    lands may bring an offer sharing one), as the pages that link offers are."""
    return state.derived(state.current(), "shared_ids", lambda _: _shared_ids(state))


def _shared_ids(state: AppState) -> frozenset[str]:
    rows = (
        state.cursor()
        .execute(f"SELECT {ID_SQL} AS id FROM ({EVER_OBSERVED_SQL}) GROUP BY id HAVING count(*) > 1")
        .fetchall()
    )
    return frozenset(str(row[0]) for row in rows)


def link_ids(state: AppState) -> LinkIds:
    """The links' ids for the state's data (`link_ids_of` its shared ids)."""
    return link_ids_of(shared_ids(state))


def current_ids(state: AppState) -> dict[str, OfferKey]:
    """The current offers' keys by 12-digit id (once per set of current offers; ids not shared only)."""
    shared = shared_ids(state)  # first: a build inside another would wait for the state's lock it holds
    return state.derived(state.current(), "offer_ids", lambda current: _current_ids(current, shared))


def _current_ids(current: CurrentOffers, shared: frozenset[str]) -> dict[str, OfferKey]:
    by_id = {offer_id(*offer.key): offer.key for offer in current.offers}
    return {short: key for short, key in by_id.items() if short not in shared}


def offer_keys_of(state: AppState, asked: str) -> list[OfferKey]:
    """The offers an id (12 to 32 hex digits) names, in key order: a current one by a 12-digit id no
    other offer shares, else every offer ever observed whose MD5 starts with it (none: no offer has it)."""
    found = current_ids(state).get(asked) if len(asked) == ID_DIGITS else None
    if found is not None:
        return [found]
    rows = (
        state.cursor()
        .execute(
            f"""
            SELECT provider, region, sku, pricing FROM ({EVER_OBSERVED_SQL})
            WHERE left(md5(concat_ws(chr(31), provider, region, sku, pricing)), ?) = ?
            ORDER BY provider, region, sku, pricing
            """,
            [len(asked), asked],
        )
        .fetchall()
    )
    return [(str(row[0]), str(row[1]), str(row[2]), str(row[3])) for row in rows]
