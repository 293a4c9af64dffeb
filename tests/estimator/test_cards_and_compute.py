"""Each card's own figures in the estimator: decoding speed at the card's bandwidth, and nothing guessed
for a card the table has no figure for.
A test-local card (an L40S row added for the test) shows the code covers a card as soon as
pricedb/cards.py holds it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from api.estimator import EstimateQuery, EstimatorError, decode_throughput, gpu_bandwidth_gb_s
from pricedb import cards
from pricedb.cards import Card
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.helpers import NOW, make_quote, make_run, seed_fx, serving

# Bandwidth-bound: vLLM, Llama-2-70B int4 on one card at batch 32.
BOUND = EstimateQuery(model="llama-2-70b", precision="int4", engine="vllm", batch=32, context=4096)


def test_decoding_speed_follows_each_cards_bandwidth() -> None:
    a100 = decode_throughput(BOUND, gpu_memory_gb=80, form_factor="SXM4")
    h100 = decode_throughput(BOUND, gpu_model="H100", gpu_memory_gb=80, form_factor="SXM5")
    h200 = decode_throughput(BOUND, gpu_model="H200", gpu_memory_gb=141, form_factor="SXM5")
    assert (a100.bandwidth_gb_s, h100.bandwidth_gb_s, h200.bandwidth_gb_s) == (2039, 3350, 4800)
    assert a100.bound == h200.bound == "memory bandwidth"
    assert h100.tokens_per_s / a100.tokens_per_s == pytest.approx(3350 / 2039)
    assert h200.tokens_per_s / a100.tokens_per_s == pytest.approx(4800 / 2039)
    assert "H200: its own peak bandwidth (4,800 GB/s" in h200.notes[-1]
    assert not any("its own peak bandwidth" in n for n in a100.notes)  # the card the efficiency was fitted on


def test_a_card_without_a_bandwidth_is_never_guessed() -> None:
    assert gpu_bandwidth_gb_s(80, "SXM4", gpu_model="A800") is None
    assert gpu_bandwidth_gb_s(10, None, gpu_model="H100") is None  # no such size (a MIG slice is not a card)
    with pytest.raises(EstimatorError) as raised:
        decode_throughput(BOUND, gpu_model="H800", gpu_memory_gb=80, form_factor="SXM5")
    assert raised.value.param == "gpu" and "no memory bandwidth for H800 80GB" in raised.value.message


L40S = Card("L40S", 48.0, "PCIe", "PCIe", 864.0, 362.05, 362.05, (0.2, 10.0), "test-local row (L40S data sheet)")


def test_a_card_added_to_the_table_is_covered_at_once(
    monkeypatch: pytest.MonkeyPatch, store: PriceStore, settings: Settings
) -> None:
    monkeypatch.setattr(cards, "CARDS", (*cards.CARDS, L40S))
    seed_fx(store)
    quote = make_quote(provider="verda", region="global", sku="l40s-box", gpu_model="L40S", gpu_count=1,
                       gpu_memory_gb=48.0, price=1.0, form_factor="PCIe", interconnect="PCIe")  # fmt: skip
    store.record_run(make_run("verda", [quote]))
    with serving(settings, store, NOW + timedelta(minutes=5)) as client:
        infer = client.get("/cheapest?model=llama-3-8b&engine=vllm&batch=32&context=2048&rank_by=per_mtoken").json()
    (option,) = infer["options"]
    assert option["bandwidth_gb_s"] == 864 and option["throughput"]["bandwidth_gb_s"] == 864
