"""Short offer links: `/offer?id=<12 hex digits>`, the first 48 bits of the MD5 of the offer's key
(provider, region, sku, pricing, joined by U+001F). The key alone decides it, so an offer keeps its
id in every run, in every gpuprice over the same data, and after it is withdrawn (a digest's line,
an old bookmark): the id is looked up among the current offers, then among every offer ever
observed (`history_series`, laid out at the last compaction, and the observations since).

The market page writes one link per row: its old form (`/offer?provider=…&region=…&sku=…&pricing=…
&gpu=…`, still served) was a fifth of the 37-column page of 2,000 offers, 1.88 MB, which every
compressor reads through. Two of the 2**48 ids are alike for one offer pair in ~10**5 at 100,000
offers ever seen; a current offer is then preferred, then the first key in order."""

from __future__ import annotations

import hashlib
import re

from api.state import AppState

OfferKey = tuple[str, str, str, str]
ID_DIGITS = 12
SEPARATOR = "\x1f"  # in no provider, region, sku or pricing (the key's texts are single-line names)
_ID = re.compile(f"[0-9a-f]{{{ID_DIGITS}}}")
ID_SQL = f"left(md5(concat_ws(chr(31), provider, region, sku, pricing)), {ID_DIGITS})"  # offer_id in DuckDB


def offer_id(provider: str, region: str, sku: str, pricing: str) -> str:
    """The short id of the offer with this key."""
    key = SEPARATOR.join((provider, region, sku, pricing)).encode()
    return hashlib.md5(key, usedforsecurity=False).hexdigest()[:ID_DIGITS]


def is_offer_id(text: str) -> bool:
    return _ID.fullmatch(text) is not None


def current_ids(state: AppState) -> dict[str, OfferKey]:
    """The current offers' keys by id (once per set of current offers; the first key in order of alike ids)."""
    current = state.current()
    found: dict[str, OfferKey] | None = current.derived.get("offer_ids")
    if found is None:
        by_id: dict[str, OfferKey] = {}
        for key in sorted(offer.key for offer in current.offers):
            by_id.setdefault(offer_id(*key), key)
        found = current.derived.setdefault("offer_ids", by_id)
    return found


def offer_key_of(state: AppState, short: str) -> OfferKey | None:
    """The offer this id names: a current one, else any ever observed (None: none has it)."""
    found = current_ids(state).get(short)
    if found is not None:
        return found
    row = (
        state.cursor()
        .execute(
            f"""
            WITH laid_out AS (SELECT coalesce(max(compacted_upto), 0) AS upto FROM history_layout),
            ever AS (
                SELECT provider, region, sku, pricing FROM history_series
                UNION
                SELECT provider, region, sku, pricing FROM observations
                WHERE observation_id > (SELECT upto FROM laid_out)
            )
            SELECT provider, region, sku, pricing FROM ever
            WHERE {ID_SQL} = ?
            ORDER BY provider, region, sku, pricing LIMIT 1
            """,
            [short],
        )
        .fetchone()
    )
    return (str(row[0]), str(row[1]), str(row[2]), str(row[3])) if row is not None else None
