"""A plain `/offers/history` question read by api.history_query_fast is the `HistoryParams` the model
makes of it, and whatever it does not read (or reads as wrong) is left to the model: random query
strings, valid and invalid, with repeated, empty, encoded and unknown parameters."""

from __future__ import annotations

import random

import pytest

from api.history_query_fast import plain_history_params
from api.query import HistoryParams
from pricedb.settings import Settings
from tests.helpers import read_both_ways, written_query

SETTINGS = Settings()
VALUES = {
    "provider": ("aws", "AWS,azure", "nowhere", "", "aws,aws", "verda"),
    "region": ("us-east-1", "US East 1,eastus", "bad/region", "", "x" * 70, "global"),
    "sku": ("p4d.24xlarge", "a,b", " p5.48xlarge ", "", ",", "Standard_NC24ads_A100_v4"),
    "pricing": ("spot", "ON_DEMAND,spot", "monthly, reserved_1y", "cheap", ""),
    "since": (
        "2026-06-03",
        "2026-06-03T10:00:00Z",
        "2026-06-03T10:00+08:00",
        "2026-13-01",
        "yesterday",
        "",
        "2026-12-02",
        "0001-01-01",
        "2026-06-03T10:00:00.5",
    ),
    "until": (
        "2026-12-02",
        "2026-06-03",
        "2026-12-02T00:00:00Z",
        "2026-06-02T23:59:59-05:00",
        "tomorrow",
        "",
        "9999-12-31",
        "2026-06-03T10:00:00",
    ),
    "gpu": ("A100", ""),
    "include_unavailable": ("false",),
    "include_stale": ("true",),
    "limit": ("1", "0"),
    "offset": ("2",),
}
PLAIN = ("provider", "region", "sku", "pricing", "since", "until")


def random_query(rng: random.Random) -> bytes:
    names = rng.sample(PLAIN, rng.randint(0, 6))
    if rng.random() < 0.2:
        names += rng.sample(list(VALUES), rng.randint(1, 2))
    if rng.random() < 0.1 and names:
        names.append(rng.choice(names))  # a parameter given twice: the last one counts
    return written_query(rng, names, VALUES, safe=",:")


@pytest.mark.parametrize("seed", range(3))
def test_plain_history_questions_read_as_the_model_reads_them(seed: int) -> None:
    rng = random.Random(seed)
    read_here = 0
    queries = (random_query(rng) for _ in range(1500))
    for query, fast, model in read_both_ways(queries, plain_history_params, HistoryParams, SETTINGS):
        read_here += 1
        assert fast.model_dump() == model.model_dump(), query
        assert fast.model_dump_json() == model.model_dump_json(), query  # the answer cache's key
        assert fast.model_fields_set == model.model_fields_set, query
        assert fast.offer_filter() == model.offer_filter(), query
    assert read_here > 100  # the plain path was exercised, not only the fallback
