"""The columnar fast path (api/cheapest_fast.py) answers `/cheapest` exactly as the plain reference
(api/cheapest.py's `select`): the whole JSON, byte for byte, on a few thousand random questions
over random offers — by `mem` and by model and workload, every filter, flag, billing rule (per
second/minute/hour with minimums, monthly, fixed terms, reserved, stepped prices), unpriced offers,
ties in price, one, several or every GPU model, an amount of work (`tokens`, `epochs` ×
`dataset_tokens`) instead of hours, and `rank_by=per_mtoken` / `job_total`."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import date, datetime

import numpy as np
import pytest
from pydantic import ValidationError

from api.answers import cheapest_json
from api.cheapest_fast import OfferColumns
from api.query import CheapestParams
from pricedb.models import Availability, PriceStep, Pricing, Unit
from pricedb.queries import CurrentOffers, Offer
from pricedb.settings import Settings
from tests.helpers import freeze_survivors

SETTINGS = Settings()
OBSERVED = datetime(2026, 11, 29, 8, 0)
GPUS = {"A100": (40.0, 80.0), "H100": (80.0, 94.0), "L4": (24.0,)}
PROVIDERS = ("aws", "azure", "tencent", "e2e", "vast")
REGIONS = ("us-east-1", "US-East-1", "eastus", "ap-guangzhou", "in-mum")
CARDS = ((None, None), ("SXM4", "NVLink"), ("PCIe", "PCIe"))
RULES = ((1, 0), (1, 60), (60, 0), (3600, 0), (3600, 3600 * 24))


def random_offer(rng: random.Random, index: int) -> Offer:
    gpu = rng.choice(list(GPUS))
    memory = rng.choice(GPUS[gpu])
    count = rng.choice((1, 1, 2, 4, 8))
    pricing = rng.choice(list(Pricing))
    unit, term_hours = Unit.HOUR, None
    if pricing is Pricing.MONTHLY:
        unit, term_hours = rng.choice(((Unit.MONTH, None), (Unit.TERM, 720.0), (Unit.TERM, None)))
    elif pricing.is_reserved:
        unit, term_hours = rng.choice(((Unit.HOUR, None), (Unit.YEAR, None), (Unit.TERM, 8760.0)))
    price = rng.choice((1.5, 2.0, 3.25, round(rng.uniform(0.2, 40), 3)))  # repeated prices make ties
    fx_rate = None if rng.random() < 0.05 else rng.choice((1.0, 7.1, 0.086))
    per_unit = {Unit.HOUR: 1.0, Unit.MONTH: SETTINGS.hours_per_month, Unit.YEAR: SETTINGS.hours_per_year}
    cny_per_hour = None if fx_rate is None else price * fx_rate / (per_unit.get(unit) or term_hours or 730.0)
    steps = ()
    if pricing in (Pricing.ON_DEMAND, Pricing.SPOT) and unit is Unit.HOUR and rng.random() < 0.1:
        steps = (PriceStep(after_hours=rng.choice((24.0, 100.0)), price=price * 0.8),)
    increment, minimum = rng.choice(RULES)
    form_factor, interconnect = rng.choice(CARDS)
    return Offer(
        observation_id=index,
        run_id=1,
        provider=rng.choice(PROVIDERS),
        region=rng.choice(REGIONS),
        sku=f"sku-{rng.randrange(40)}",
        gpu_model=gpu,
        gpu_memory_gb=memory,
        gpu_count=count,
        form_factor=form_factor,
        interconnect=interconnect,
        pricing=pricing.value,
        price=price,
        currency="USD",
        unit=unit.value,
        term_hours=term_hours,
        billing_increment_s=increment,
        billing_minimum_s=minimum,
        availability=rng.choice(list(Availability)).value,
        list_price=None,
        tax_included=None,
        price_steps=steps,
        notes=None,
        source_url="https://example.test/prices",
        observed_at=OBSERVED,
        offline=False,
        fx_rate=fx_rate,
        fx_date=None if fx_rate is None else date(2026, 11, 27),
        fx_note="no USD→CNY reference rate" if fx_rate is None else None,
        cny_per_hour=cny_per_hour,
        cny_per_gpu_hour=None if cny_per_hour is None else cny_per_hour / count,
        cny_per_gb_hour=None if cny_per_hour is None else cny_per_hour / (count * memory),
        vcpus=None,
        memory_gib=None,
        gpu_partition=None,
        gpu_fraction=None,
        stale=rng.random() < 0.2,
    )


def some(rng: random.Random, values: tuple[str, ...]) -> str:
    return ",".join(rng.sample(values, rng.randint(1, 2)))


def random_question(rng: random.Random) -> dict[str, str]:
    hours = rng.choice(("1", "0.01", "24", "100", "200", "731", str(rng.uniform(0, 9000))))
    question: dict[str, str] = {"hours": hours}
    if rng.random() < 0.25:  # by model and workload
        workload = rng.choice(("inference", "inference", "lora", "full_finetune"))
        model = rng.choice(("llama-2-7b", "llama-2-13b", "llama-2-70b", "qwen2.5-14b"))
        question.update(model=model, workload=workload)
        if rng.random() < 0.3:
            question["precision"] = rng.choice(("int4", "int8", "bf16"))
        if rng.random() < 0.2:
            question["gpus"] = rng.choice(("1", "2", "8"))
        if workload == "inference" and rng.random() < 0.4:
            question["rank_by"] = "per_mtoken"
        if rng.random() < 0.25:  # an amount of work instead of hours: each option timed on its card
            question.pop("hours")
            if workload != "inference" and rng.random() < 0.5:
                question.update(epochs=rng.choice(("1", "2.5")), dataset_tokens=rng.choice(("100M", "2B")))
            else:
                question["tokens"] = rng.choice(("1M", "500M", "3B"))
            if rng.random() < 0.5:
                question["rank_by"] = "job_total"
    else:
        question["mem"] = rng.choice(("24", "40GB", "60", "80", "160", "320", "641", str(rng.uniform(1, 700))))
    if rng.random() < 0.6:  # otherwise every card
        question["gpu"] = ",".join(rng.sample(list(GPUS), rng.randint(1, 2)))
    for name, values in (("provider", PROVIDERS), ("region", REGIONS), ("pricing", tuple(p.value for p in Pricing))):
        if rng.random() < 0.2:
            question[name] = some(rng, values)
    for flag in ("include_stale", "include_unavailable", "interruptible", "single_gpu"):
        if rng.random() < 0.3:
            question[flag] = rng.choice(("true", "false"))
    if question.get("single_gpu") == "true" and "gpus" in question:
        del question["single_gpu"]
    question["limit"] = rng.choice(("1", "3", "10", "10", "50"))
    return question


@pytest.mark.parametrize("seed", range(8))
def test_fast_path_answers_as_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    drawn = {o.key: o for o in (random_offer(rng, i) for i in range(rng.choice((0, 40, 300))))}  # keys unique
    offers = sorted(drawn.values(), key=lambda o: o.key)  # as the store reads them
    current = CurrentOffers(offers, OBSERVED, None)
    columns = OfferColumns.build(offers, SETTINGS)
    asked = shown = 0
    while asked < 300:
        try:
            params = CheapestParams.model_validate(random_question(rng))
        except ValidationError:  # a combination the parameters refuse (a 422): draw another
            continue
        reference = cheapest_json(params, current, SETTINGS, None)
        fast = cheapest_json(params, current, SETTINGS, columns)
        assert fast == reference, params
        asked += 1
        shown += reference.count(b'"rank":')
    assert shown > 0 or not offers  # the questions found options to compare, not only empty answers


@pytest.mark.parametrize("seed", range(3))
def test_by_model_questions_without_filters_answer_as_the_reference_asked_again_with_other_hours(seed: int) -> None:
    """A question by model and workload with no selecting rule reads its configurations' rows
    (api.cheapest_fast.Unfiltered); asked again with other hours (api.query_fast) it reuses its
    judge's verdicts and written JSON (JudgeMemo): each answer is still the reference's."""
    rng = random.Random(100 + seed)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(400))}.values(), key=lambda o: o.key)
    current = CurrentOffers(offers, OBSERVED, None)
    columns = OfferColumns.build(offers, SETTINGS)
    for _ in range(12):
        question = {"model": rng.choice(("llama-2-7b", "llama-2-70b", "qwen2.5-14b")),
                    "workload": rng.choice(("inference", "lora", "qlora", "full_finetune"))}  # fmt: skip
        for flag in ("include_stale", "include_unavailable", "interruptible", "single_gpu"):
            if rng.random() < 0.3:
                question[flag] = rng.choice(("true", "false"))
        if rng.random() < 0.3:
            question["limit"] = rng.choice(("1", "50"))
        asked = CheapestParams.model_validate(question)
        for hours in ("1", "24", "1", str(rng.uniform(0, 9000))):  # the same hours again too
            params = asked.model_copy(update={"hours": float(hours)})  # as api.query_fast copies them
            fast = cheapest_json(params, current, SETTINGS, columns)
            assert fast == cheapest_json(
                CheapestParams.model_validate({**question, "hours": hours}), current, SETTINGS, None
            )
            assert fast == cheapest_json(params, current, SETTINGS, columns)  # from the memo's verdicts and JSON


HOURS = ("1", "0.01", "24", "23.9999", "100", "731", "1e-12")  # 1e-12: every per-second rule bills 0 h (all tie)


@pytest.mark.parametrize("seed", range(3))
def test_mem_questions_asked_again_with_other_hours_answer_as_the_reference(seed: int, monkeypatch) -> None:
    """A `mem` question's rows kept per billing rule by price (api.cheapest_rules) serve its copies with
    other hours: each answer is the reference's, with runs of one price in one rule longer than the rows
    kept as Python values (read on from the arrays), stepped prices and hours that bill nothing."""
    from api.cheapest_rules import MemOptions

    rng = random.Random(200 + seed)
    drawn = [random_offer(rng, i) for i in range(300)]
    twins = [replace(drawn[k], sku=f"twin-{k}-{copy}", stale=False) for k in range(3) for copy in range(30)]
    offers = sorted({o.key: o for o in drawn + twins}.values(), key=lambda o: o.key)
    current = CurrentOffers(offers, OBSERVED, None)
    columns = OfferColumns.build(offers, SETTINGS)
    tied = []
    read_on = MemOptions._tied
    monkeypatch.setattr(MemOptions, "_tied", lambda self, *args: tied.append(1) or read_on(self, *args))
    for _ in range(60):
        question = random_question(rng)
        if "mem" not in question:
            continue
        if rng.random() < 0.3:  # a twin's machine, so its long run of one price is among the rows
            question.update(gpu=twins[0].gpu_model, mem=str(twins[0].gpu_count * twins[0].gpu_memory_gb))
        try:
            asked = CheapestParams.model_validate(question)
        except ValidationError:
            continue
        for hours in (*HOURS, str(rng.uniform(0, 9000))):
            params = asked.model_copy(update={"hours": float(hours)})  # as api.query_fast copies them
            reference = CheapestParams.model_validate({**question, "hours": hours})
            assert cheapest_json(params, current, SETTINGS, columns) == cheapest_json(
                reference, current, SETTINGS, None
            )
    assert tied  # some answers read a run of one price past the rows kept


def test_a_mem_question_kept_across_a_data_change_answers_from_the_new_offers() -> None:
    """What a question keeps for any hours belongs to one data version: asked again (a copy with other
    hours) over new offers, it answers from them."""
    rng = random.Random(7)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(300))}.values(), key=lambda o: o.key)
    asked = CheapestParams.model_validate({"mem": "40", "hours": "3", "include_stale": "true"})
    before = cheapest_json(asked, CurrentOffers(offers, OBSERVED, None), SETTINGS, OfferColumns.build(offers, SETTINGS))
    cheaper = [replace(o, cny_per_hour=o.cny_per_hour / 3) if o.cny_per_hour else o for o in offers]
    current = CurrentOffers(cheaper, OBSERVED, None)
    params = asked.model_copy(update={"hours": 5.0})
    after = cheapest_json(params, current, SETTINGS, OfferColumns.build(cheaper, SETTINGS))
    reference = cheapest_json(CheapestParams.model_validate({"mem": "40", "hours": "5", "include_stale": "true"}),
                              current, SETTINGS, None)  # fmt: skip
    assert after == reference and after != before


@pytest.mark.parametrize("few", [0, 10_000])
def test_a_mem_questions_stepped_totals_are_job_costs_own_figures(few: int, monkeypatch) -> None:
    """A question's stepped rows are priced in Python when few, by numpy (SteppedPrices) when many:
    either way `job_cost`'s totals exactly."""
    from api import cheapest_rules
    from api.cheapest import job_cost
    from api.cheapest_fast import candidates

    monkeypatch.setattr(cheapest_rules, "FEW_STEPPED", few)
    rng = random.Random(9)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(400))}.values(), key=lambda o: o.key)
    columns = OfferColumns.build(offers, SETTINGS)
    query = CheapestParams.model_validate(
        {"mem": "1", "include_stale": "true", "include_unavailable": "true"}
    ).to_query()
    kept = cheapest_rules.MemOptions(columns, candidates(columns, query, None).rows, query, SETTINGS)
    assert len(kept.stepped) > 5
    for hours in (0.01, 1.0, 23.999, 24.0, 99.5, 100.0, 731.0, rng.uniform(0, 9000)):
        expected = [job_cost(offers[row], hours, SETTINGS).total_cny for row, *_ in kept.stepped]
        assert kept._stepped_totals(hours) == expected


def test_tie_order_is_the_order_by_total_gives_one_total() -> None:
    """`OfferColumns.tie_order` places offers as (¥/GB·h or 0, key) sorts them, whatever order they come in."""
    rng = random.Random(3)
    offers = [random_offer(rng, i) for i in range(300)]
    offers += [replace(o, cny_per_gb_hour=None, sku=o.sku + "-unpriced") for o in offers[:20]]
    rng.shuffle(offers)
    expected = sorted(range(len(offers)), key=lambda row: (offers[row].cny_per_gb_hour or 0.0, offers[row].key))
    assert np.argsort(OfferColumns.build(offers, SETTINGS).tie_order).tolist() == expected


def test_mem_options_are_charged_at_least_what_they_hold() -> None:
    """A question's kept rows (`MemOptions.nbytes`, in its memo's charge) cover what they allocate."""
    import gc
    import tracemalloc

    from api.cheapest_fast import candidates
    from api.cheapest_rules import MemOptions

    rng = random.Random(5)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(2000))}.values(), key=lambda o: o.key)
    columns = OfferColumns.build(offers, SETTINGS)
    for question in ({"mem": "40"}, {"mem": "16", "limit": "50"}, {"mem": "80", "gpu": "H100", "limit": "1"}):
        query = CheapestParams.model_validate(question).to_query()
        rows = candidates(columns, query, None).rows
        freeze_survivors()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = MemOptions(columns, rows, query, SETTINGS)
        gc.collect()
        allocated = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert allocated <= kept.nbytes <= 2 * allocated, question


def test_offer_pieces_stay_within_their_bound_and_answers_do_not_change() -> None:
    """With room for a few offers' pieces, the first written go first and are written again when
    shown again; each kept piece is charged its bytes and PIECE_BYTES, at least what it allocates."""
    import gc
    import tracemalloc

    from api.cheapest_write import OfferPieces

    rng = random.Random(11)
    offers = sorted({o.key: o for o in (random_offer(rng, i) for i in range(300))}.values(), key=lambda o: o.key)
    current = CurrentOffers(offers, OBSERVED, None)
    tight = Settings(offer_pieces_mb=20_000 / 2**20)  # about a dozen options
    columns = OfferColumns.build(offers, tight)
    asked = 0
    while asked < 200:
        try:
            params = CheapestParams.model_validate(random_question(rng))
        except ValidationError:
            continue
        assert cheapest_json(params, current, tight, columns) == cheapest_json(params, current, tight, None)
        assert 0 < columns.pieces.bytes <= columns.pieces.max_bytes or not len(columns.pieces)
        asked += 1
    assert 0 < len(columns.pieces) < len(offers)

    roomy = OfferPieces(offers, 2**30)
    freeze_survivors()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for row in range(len(offers)):
        roomy.option(row, 1, cost_of(offers[row]), b"")
        roomy.unpriced(row)
    gc.collect()
    allocated = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert allocated <= roomy.bytes <= 2 * allocated


def cost_of(offer: Offer):
    from api.cheapest import JobCost

    return JobCost(1.0, offer.cny_per_hour or 0.0, "1 h")


# ----- new questions answered before routing (api/answer_cache.py) -------------------------------
ROUTED_ALIKE = [
    b"mem=60&hours=200",
    b"mem=60GB&hours=200&provider=aws,azure&limit=3",
    b"mem=60&provider=aws&provider=azure",  # a list parameter repeated: the last one counts
    b"mem=40&mem=80",  # any other parameter repeated: the last one counts
    b"mem=60%20GB&region=US-EAST-1&include_stale=true&include_unavailable=1",
    b"mem=80&single_gpu=true&interruptible=false&pricing=on_demand,spot&hours=0.5",
    b"model=llama-2-13b&workload=lora&context=4096&hours=100",
    b"model=llama-2-70b&workload=inference&precision=int4&batch=16&rank_by=per_mtoken",
]
REFUSED = [b"mem=abc", b"mem=60&bogus=1", b"mem=60&model=llama-2-7b", b"", b"mem=60&limit=0",
           b"rank_by=per_mtoken&mem=60"]  # fmt: skip


def test_new_questions_are_answered_before_routing_as_the_route_answers(store) -> None:
    from fastapi.testclient import TestClient

    from api.answer_cache import answer_from_memory
    from api.app import create_app
    from tests.helpers import NOW, make_quote, make_run, seed_fx

    seed_fx(store)
    for provider, region in (("aws", "us-east-1"), ("azure", "eastus")):
        quotes = [
            make_quote(provider=provider, region=region, sku=f"{provider}-{count}x{memory:g}", gpu_count=count,
                       gpu_memory_gb=memory, price=1.7 * count, pricing=pricing)
            for count in (1, 2, 8) for memory in (40.0, 80.0) for pricing in (Pricing.ON_DEMAND, Pricing.SPOT)
        ]  # fmt: skip
        store.record_run(make_run(provider, quotes))
    app = create_app(Settings(db=store.path), store=store, schedule=False)
    with TestClient(app) as client:
        state = app.state.gpuprice
        state.clock = lambda: NOW.replace(tzinfo=None)
        client.get("/cheapest?mem=1")  # the route loads the offers and builds their columns
        assert state.answers_from_memory()
        for query in ROUTED_ALIKE:
            computed = answer_from_memory(state, query)
            state.in_memory = lambda: None  # the AnswerCache lets it through: the route answers
            try:
                routed = client.get("/cheapest?" + query.decode())
            finally:
                del state.in_memory
            assert routed.status_code == 200 and "x-gpuprice-cache" not in routed.headers
            assert computed is not None and routed.content == computed, query
            assert b'"rank":1' in computed
        fresh = client.get("/cheapest?mem=61&hours=7")
        assert fresh.headers["x-gpuprice-cache"] == "computed" and fresh.json()["options"]
        for query in REFUSED:
            assert answer_from_memory(state, query) is None
            assert client.get("/cheapest?" + query.decode()).status_code == 422, query


@pytest.mark.parametrize("seed", range(3))
def test_column_totals_are_job_costs_own_figures(seed: int) -> None:
    """What the ranking cuts on is `job_cost`'s total exactly, stepped prices included (a figure one
    ulp off could leave out an option that ties)."""
    from api.cheapest import job_cost

    rng = random.Random(seed)
    offers = [random_offer(rng, i) for i in range(400)]
    columns = OfferColumns.build(offers, SETTINGS)
    rows = np.flatnonzero(columns.priced)
    assert columns.stepped.position.max() >= 0  # some stepped offers were drawn
    for hours in (0.01, 1.0, 23.999, 24.0, 99.5, 100.0, 731.0, rng.uniform(0, 9000)):
        expected = [job_cost(offers[row], hours, SETTINGS).total_cny for row in rows]
        assert columns.totals(rows, hours).tolist() == expected
        assert columns.few_totals(rows.tolist(), hours) == expected  # the few rows' way
