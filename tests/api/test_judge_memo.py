"""A judge's memo (api.cheapest_estimate.JudgeMemo) keeps per job only what answers read — verdicts
on a whole list of configurations, the estimate's JSON, each plan's pieces of the viability block,
each kind of option's members — and a judge that reads them says what a judge working everything
out says."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from api.cheapest_estimate import EstimateJudge, JudgeMemo
from api.cheapest_write import members
from api.query import CheapestParams
from api.state import dumps
from tests.api.test_cheapest_fast import random_offer

HEADROOM = 0.9


def configurations_and_offers(seed: int) -> tuple[list[tuple[int, float]], list]:
    """One offer of each configuration (gpu_count, gpu_memory_gb) among random offers, as the columns list them."""
    rng = random.Random(seed)
    first = {}
    for index in range(300):
        offer = random_offer(rng, index)
        first.setdefault((offer.gpu_count, offer.gpu_memory_gb), offer)
    return list(first), list(first.values())


@pytest.mark.parametrize(
    "question",
    [
        {"model": "llama-2-70b", "workload": "inference"},
        {"model": "llama-2-7b", "workload": "lora", "gpus": "2"},  # only machines with two GPUs are judged
        {"model": "qwen2.5-14b", "workload": "qlora", "single_gpu": "true"},
    ],
)
def test_judges_sharing_a_memo_say_what_a_judge_alone_says(question: dict[str, str]) -> None:
    """The first judge works the verdicts out and the memo keeps them with the configurations it
    recorded; later judges read them: each records the same configurations, gives the same verdicts,
    and writes the same estimate, viability block and options as a judge with no memo of its own."""
    params = CheapestParams.model_validate(question)
    assert params.estimate is not None
    gpus = params.estimate.gpus if "gpus" in question else None

    def judge(memo: JudgeMemo, written: bool) -> EstimateJudge:
        return EstimateJudge(params.estimate, headroom=HEADROOM, single_gpu=params.single_gpu, gpus=gpus,
                             memo=memo, written=written)  # fmt: skip

    configurations, offers = configurations_and_offers(len(question))
    alone = judge(JudgeMemo(), written=False)
    expected = [alone.fits(offer) for offer in offers]
    summary = alone.summary()
    recorded = summary["viability"]["configurations"]
    if gpus is not None:
        assert 0 < len(recorded) < len(configurations)  # the list's other configurations were not asked about
    shared = JudgeMemo()
    for _ in range(3):
        reading = judge(shared, written=True)
        assert reading.fits_each(configurations) == expected
        written = reading.summary()
        assert written["estimate"] == dumps(summary["estimate"])
        assert written["viability"] == dumps(summary["viability"])
        for offer in offers:
            assert reading.option_members(offer) == members(alone.option_fields(offer))
            for price in (0.37, offer.cny_per_hour, 12.5):  # its kind's members, written once, at other prices
                other = replace(offer, cny_per_hour=price)
                assert reading.option_members(other) == members(alone.option_fields(other))
    assert len(shared.verdicts) == 1
    assert set(shared.plan_pieces) == {line["gpus_used"] for line in recorded}  # the block's pieces, per GPU count
    assert shared.cache_size > sum(pieces.cache_size for pieces in shared.plan_pieces.values())
