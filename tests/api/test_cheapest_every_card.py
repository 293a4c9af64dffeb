"""Every card a provider rents, and the cost of the whole job: `gpu=` as a comma list (default: every
card), each option's card and bandwidth from the card table, ¥ per million tokens at each card's own
bandwidth, and `tokens=` (or `epochs=` × `dataset_tokens=`) giving each option its own hours.

The store holds real public list prices (USD per instance-hour; FX 1 USD = ¥7): Oracle's per-GPU-hour
parts (fixtures/oci/products.json: A100 80GB $4.00, A100 40GB $3.05, H100 $10.00, × 8 GPUs per
bare-metal shape) and Verda's single cards (fixtures/verda/instance_types.json: 1H100.80S.30V $3.95,
1A100.22V $1.16). The one H800 row carries a synthetic price: it is there to show that a card without
figures in the card table is never timed or ranked by a guess, whatever it costs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api import render
from api.cli import main as cli
from pricedb.cards import card
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import SeededStore
from tests.helpers import NOW, assert_422_naming, make_quote, make_run, seed_fx, serving

SXM4 = {"form_factor": "SXM4", "interconnect": "NVLink"}
SXM5 = {"form_factor": "SXM5", "interconnect": "NVLink"}
# sku: (provider, GPU model, GPUs, GB per GPU, card, USD per instance-hour)
MACHINES = {
    "BM.GPU.A100-v2.8": ("oci", "A100", 8, 80.0, SXM4, 8 * 4.00),
    "BM.GPU4.8": ("oci", "A100", 8, 40.0, SXM4, 8 * 3.05),
    "BM.GPU.H100.8": ("oci", "H100", 8, 80.0, SXM5, 8 * 10.00),
    "1H100.80S.30V": ("verda", "H100", 1, 80.0, SXM5, 3.95),
    "1A100.22V": ("verda", "A100", 1, 80.0, SXM4, 1.16),
    "h800-box": ("autodl", "H800", 8, 80.0, SXM5, 8 * 0.75),  # synthetic price (see the docstring)
}
CNY_PER_USD = 7.0
QWEN25_7B = 7_615_616_512  # parameters (catalog), every token goes through them all


def cny_per_hour(sku: str) -> float:
    return MACHINES[sku][5] * CNY_PER_USD


def _seed(store: PriceStore) -> None:
    seed_fx(store)
    for provider in ("oci", "verda", "autodl"):
        quotes = [
            make_quote(provider=provider, region="global", sku=sku, gpu_model=model, gpu_count=count,
                       gpu_memory_gb=memory, price=price, billing_increment_s=1, **form)
            for sku, (owner, model, count, memory, form, price) in MACHINES.items() if owner == provider
        ]  # fmt: skip
        store.record_run(make_run(provider, quotes))


@pytest.fixture
def seeded(store_seeded_by: SeededStore) -> PriceStore:
    return store_seeded_by(_seed)


@pytest.fixture
def client(seeded: PriceStore, settings: Settings) -> Iterator[TestClient]:
    with serving(settings, seeded, NOW + timedelta(minutes=5)) as test_client:
        yield test_client


def by_sku(body: dict) -> dict[str, dict]:
    return {o["sku"]: o for o in body["options"]}


# ----- gpu= ----------------------------------------------------------------------------------------


def test_the_default_considers_every_card_and_gpu_takes_a_list_in_any_case(client: TestClient) -> None:
    every = client.get("/cheapest?mem=60GB&hours=200").json()
    assert every["query"]["gpu"] is None
    assert {o["gpu_model"] for o in every["options"]} == {"A100", "H100", "H800"}
    two = client.get("/cheapest?mem=60GB&hours=200&gpu=a100, h100").json()
    assert two["query"]["gpu"] == "A100,H100"
    assert {o["gpu_model"] for o in two["options"]} == {"A100", "H100"}
    one = client.get("/cheapest?mem=60GB&hours=200&gpu=A100").json()
    assert one["query"]["gpu"] == "A100" and {o["gpu_model"] for o in one["options"]} == {"A100"}
    # the options of the one card are those the default ranks for it, in the same order and figures
    assert one["options"] == [
        {**o, "rank": i + 1} for i, o in enumerate(o for o in every["options"] if o["gpu_model"] == "A100")
    ]


@pytest.mark.parametrize("path", ["/offers", "/export?format=json", "/offers/history"])
def test_offers_exports_and_history_take_the_same_list(client: TestClient, path: str) -> None:
    sep = "&" if "?" in path else "?"
    every = client.get(path).json()
    h100 = client.get(f"{path}{sep}gpu=H100,h200").json()
    rows = {
        "/offers": lambda b: b["offers"],
        "/export?format=json": lambda b: b,
        "/offers/history": lambda b: b["series"],
    }[path]
    assert {r["gpu_model"] for r in rows(every)} == {"A100", "H100", "H800"}
    assert {r["gpu_model"] for r in rows(h100)} == {"H100"} and len(rows(h100)) == 2
    if path == "/offers/history":
        assert h100["query"]["gpu"] == "H100,H200" and every["query"]["gpu"] is None


def test_an_unknown_card_is_a_422_listing_the_known_ones(client: TestClient) -> None:
    response = client.get("/cheapest?mem=60&gpu=A100,RTX9090")
    assert_422_naming(response, "gpu", "unknown gpu 'RTX9090'; choose from B200")
    assert "H100" in response.json()["errors"][0]["message"]


def test_each_option_says_which_card_it_is_with_its_bandwidth(client: TestClient) -> None:
    options = by_sku(client.get("/cheapest?mem=60GB&hours=10").json())
    h100 = options["BM.GPU.H100.8"]
    assert (h100["gpu_model"], h100["gpu_memory_gb"], h100["form_factor"]) == ("H100", 80.0, "SXM5")
    assert h100["bandwidth_gb_s"] == card("H100", 80, "SXM5").bandwidth_gb_s == 3350
    assert options["BM.GPU.A100-v2.8"]["bandwidth_gb_s"] == 2039
    assert options["BM.GPU4.8"]["bandwidth_gb_s"] == 1555
    assert options["h800-box"]["bandwidth_gb_s"] is None  # the card table has no figure: unknown, not zero


def test_a_gpu_slice_is_never_presented_or_timed_as_a_whole_card(
    store: PriceStore, settings: Settings, capsys, monkeypatch, frozen_clock: datetime
) -> None:
    """A MIG 4g.40gb of an A100 80GB has 40 GB like an A100 40GB, but not its bandwidth or compute."""
    seed_fx(store)
    mig = make_quote(provider="verda", region="global", sku="a100-mig-4g", gpu_model="A100", gpu_count=1,
                     gpu_memory_gb=40.0, price=1.0, gpu_fraction=4 / 7, gpu_partition="MIG 4g.40gb",
                     **SXM4)  # fmt: skip
    store.record_run(make_run("verda", [mig]))
    with serving(settings, store, frozen_clock) as client:
        (option,) = client.get("/cheapest?mem=30GB&hours=10").json()["options"]
        per_mtoken = client.get("/cheapest?model=llama-3-8b&engine=vllm&rank_by=per_mtoken").json()
        job = client.get("/cheapest?model=qwen-1.8b&workload=lora&tokens=1e8").json()
    assert (option["gpu_partition"], option["gpu_memory_gb"], option["bandwidth_gb_s"]) == ("MIG 4g.40gb", 40.0, None)
    for body in (per_mtoken, job):
        (unranked,) = body["unranked"]
        assert body["options"] == [] and unranked["gpu_partition"] == "MIG 4g.40gb"
        assert "A100 MIG 4g.40gb SXM4 is a slice of one GPU (0.571 of it)" in unranked["reason"]
    store.close()  # the CLI opens the file itself
    monkeypatch.setattr(render.console, "width", 240)
    assert cli(["cheapest", "--db", str(settings.db), "--mem", "30GB"]) == 0
    assert "1×A100 MIG 4g.40gb (40GB)" in capsys.readouterr().out


# ----- ¥ per million tokens at each card's own bandwidth --------------------------------------------


def test_per_mtoken_uses_each_cards_bandwidth_and_leaves_unknown_cards_unranked(client: TestClient) -> None:
    # vLLM at batch 64: bandwidth-bound, so tokens/s follow each card's bandwidth.
    url = "/cheapest?model=llama-3-8b&engine=vllm&batch=64&context=2048&single_gpu=true&rank_by=per_mtoken"
    body = client.get(url).json()
    options = by_sku(body)
    h100, a100 = options["1H100.80S.30V"], options["1A100.22V"]
    assert h100["throughput"]["bandwidth_gb_s"] == 3350 and a100["throughput"]["bandwidth_gb_s"] == 2039
    assert h100["tokens_per_s"] / a100["tokens_per_s"] == pytest.approx(3350 / 2039, rel=1e-3)
    for option in body["options"]:
        per_mtoken = option["cny_per_hour"] / (option["tokens_per_s"] * 3600) * 1e6
        assert option["cny_per_mtoken"] == pytest.approx(per_mtoken, rel=1e-3)
    ranked = [o["cny_per_mtoken"] for o in body["options"]]
    assert ranked == sorted(ranked)
    assert "h800-box" not in options
    (unranked,) = body["unranked"]
    assert unranked["sku"] == "h800-box" and unranked["gpu_model"] == "H800"
    assert "no memory bandwidth for H800 80GB SXM5 in the card table" in unranked["reason"]
    assert any("H100: its own peak bandwidth (3,350 GB/s" in n for n in h100["throughput"]["notes"])


def test_ranked_by_total_an_unknown_card_stays_listed_without_a_speed(client: TestClient) -> None:
    body = client.get("/cheapest?model=llama-2-13b&hours=10").json()
    h800 = by_sku(body)["h800-box"]
    assert h800["tokens_per_s"] is None and h800["cny_per_mtoken"] is None
    assert "no memory bandwidth for H800" in h800["throughput"]["notes"][0]
    assert "unranked" not in body  # ranked by total, every viable priced option is ranked


# ----- the cost of the whole job ---------------------------------------------------------------------


def training_hours(tokens: float, tflops: float, gpus: int, k: float = 6, mfu: float = 0.4) -> float:
    return k * QWEN25_7B * tokens / (tflops * 1e12 * gpus * mfu) / 3600


def test_full_finetune_by_tokens_times_each_option_and_a_faster_pricier_card_wins(client: TestClient) -> None:
    body = client.get("/cheapest?model=qwen2.5-7b&workload=full_finetune&tokens=2e9&rank_by=job_total").json()
    assert body["query"]["tokens"] == 2_000_000_000 and body["query"]["hours"] is None
    assert body["query"]["rank_by"] == "job_total" and body["query"]["mfu"] == 0.4
    job = body["job"]
    assert job["flops"] == pytest.approx(6 * QWEN25_7B * 2e9) and job["params_per_token"] == QWEN25_7B
    assert job["mfu"] == 0.4 and "6·N·tokens" in job["rule"]
    options = by_sku(body)
    # 8×H100 at $80/h finishes in 8 h; 8×A100 80GB at $32/h needs 25.4 h: the H100 machine costs less.
    h100, a100 = options["BM.GPU.H100.8"], options["BM.GPU.A100-v2.8"]
    assert h100["job"]["hours_needed"] == pytest.approx(training_hours(2e9, 989.4, 8), abs=1e-4)
    assert a100["job"]["hours_needed"] == pytest.approx(training_hours(2e9, 312, 8), abs=1e-4)
    assert h100["job"]["tflops_per_gpu"] == 989.4 and h100["job"]["gpus"] == 8
    for option in (h100, a100):
        assert option["billed_hours"] == pytest.approx(option["job"]["hours_needed"], abs=1 / 3600)
        assert option["total_cny"] == pytest.approx(option["billed_hours"] * option["cny_per_hour"], abs=0.01)
    assert h100["cny_per_hour"] > a100["cny_per_hour"] and h100["total_cny"] < a100["total_cny"]
    order = [o["sku"] for o in body["options"]]
    assert order.index("BM.GPU.H100.8") < order.index("BM.GPU.A100-v2.8")
    # the H800 machine holds the job but the card table has no TFLOPS for it: unranked, with the reason
    assert "h800-box" not in options
    assert [u["sku"] for u in body["unranked"]] == ["h800-box"]
    assert "no dense BF16 TFLOPS for H800 80GB SXM5" in body["unranked"][0]["reason"]


def test_inference_tokens_go_at_each_configurations_decoding_speed(client: TestClient) -> None:
    body = client.get("/cheapest?model=llama-3-8b&workload=inference&tokens=1e9&rank_by=job_total").json()
    assert body["options"] and body["job"]["workload"] == "inference" and "mfu" not in body["query"]
    for option in body["options"]:
        hours = 1e9 / option["tokens_per_s"] / 3600
        assert option["job"]["hours_needed"] == pytest.approx(hours, rel=1e-3)
        assert option["total_cny"] == pytest.approx(option["billed_hours"] * option["cny_per_hour"], abs=0.01)
    totals = [o["total_cny"] for o in body["options"]]
    assert totals == sorted(totals)
    # By hand: hf at batch 1 is bound by its per-layer time, 32 layers × 0.75 ms = 24 ms a token on every
    # card here, so 10^9 tokens take 6,666.67 h; on Verda's one A100 at $1.16/h (¥8.12/h), ¥54,133.33.
    a100 = by_sku(body)["1A100.22V"]
    assert a100["tokens_per_s"] == pytest.approx(1 / (32 * 0.75e-3), rel=1e-4)
    assert a100["job"]["hours_needed"] == pytest.approx(1e9 * 32 * 0.75e-3 / 3600, abs=0.01)
    assert a100["total_cny"] == pytest.approx(6666.6667 * 8.12, abs=0.05)
    assert body["options"][0]["sku"] == "1A100.22V"  # the same speed everywhere: the cheapest hour wins


def test_epochs_times_dataset_tokens_is_the_same_job(client: TestClient) -> None:
    base = "/cheapest?model=qwen2.5-7b&workload=lora"
    by_tokens = client.get(f"{base}&tokens=3e8").json()
    by_epochs = client.get(f"{base}&epochs=3&dataset_tokens=100M").json()
    assert by_epochs["query"]["epochs"] == 3 and by_epochs["query"]["dataset_tokens"] == 100_000_000
    assert by_epochs["job"]["tokens"] == by_tokens["job"]["tokens"] == 300_000_000
    assert by_epochs["options"] == by_tokens["options"]
    # LoRA: 4·N·tokens (no weight gradients for the frozen base)
    one = by_sku(by_tokens)["1H100.80S.30V"]
    assert one["job"]["hours_needed"] == pytest.approx(training_hours(3e8, 989.4, 1, k=4), abs=1e-4)


def test_qlora_pays_for_dequantising_its_base_and_the_mfu_is_a_setting(seeded: PriceStore, settings: Settings) -> None:
    url = "/cheapest?model=qwen2.5-7b&workload=qlora&tokens=1e8&gpu=H100&single_gpu=true"
    with serving(settings, seeded, NOW + timedelta(minutes=5)) as client:
        default = by_sku(client.get(url).json())["1H100.80S.30V"]["job"]
    with serving(settings.model_copy(update={"training_mfu": 0.2}), seeded, NOW + timedelta(minutes=5)) as client:
        body = client.get(url).json()
    halved = by_sku(body)["1H100.80S.30V"]["job"]
    assert default["time_factor"] == 1.25
    assert default["hours_needed"] == pytest.approx(1.25 * training_hours(1e8, 989.4, 1, k=4), abs=1e-4)
    assert halved["mfu"] == body["query"]["mfu"] == body["job"]["mfu"] == 0.2
    assert halved["hours_needed"] == pytest.approx(2 * default["hours_needed"], abs=1e-3)


def test_monthly_terms_bill_the_estimated_hours_in_whole_months(store: PriceStore, settings: Settings) -> None:
    seed_fx(store)
    monthly = make_quote(
        provider="autodl", region="global", sku="h100-month", gpu_model="H100", gpu_count=1, gpu_memory_gb=80.0,
        price=14000.0, currency="CNY", unit="month", pricing="monthly", **SXM5,
    )  # fmt: skip
    store.record_run(make_run("autodl", [monthly]))
    with serving(settings, store, NOW + timedelta(minutes=5)) as client:
        option = client.get("/cheapest?model=qwen2.5-7b&workload=lora&tokens=5e10").json()["options"][0]
    needed = training_hours(5e10, 989.4, 1, k=4)
    assert 730 < needed < 1460 and option["job"]["hours_needed"] == pytest.approx(needed, abs=1e-4)
    assert option["billed_hours"] == 1460 and option["total_cny"] == pytest.approx(28000.0)


BAD = [
    ("/cheapest?model=qwen2.5-7b&workload=lora&tokens=2e9&hours=10", "hours", "give hours (wall-clock time) or tokens"),
    ("/cheapest?mem=60GB&tokens=2e9", "tokens", "give model or params with workload instead of mem"),
    ("/cheapest?model=qwen2.5-7b&rank_by=job_total", "rank_by", "give the amount of work, tokens"),
    ("/cheapest?model=qwen2.5-7b&workload=lora&epochs=2", "dataset_tokens", "epochs needs dataset_tokens"),
    ("/cheapest?model=qwen2.5-7b&workload=lora&dataset_tokens=1e9", "epochs", "dataset_tokens needs epochs"),
    ("/cheapest?model=qwen2.5-7b&workload=lora&tokens=1e9&epochs=2", "epochs", "give tokens, or epochs"),
    ("/cheapest?model=qwen2.5-7b&epochs=2&dataset_tokens=1e9", "epochs", "for inference give tokens"),
    ("/cheapest?model=qwen2.5-7b&tokens=0", "tokens", "at least 1 token"),
    ("/cheapest?model=qwen2.5-7b&tokens=2e17", "tokens", "more than any job"),
    ("/cheapest?model=qwen2.5-7b&tokens=lots", "tokens", "not a number of tokens"),
    ("/cheapest?model=qwen2.5-7b&workload=lora&epochs=0&dataset_tokens=1e9", "epochs", "greater than 0"),
]


@pytest.mark.parametrize(("url", "parameter", "message"), BAD)
def test_bad_amounts_of_work_are_a_422_naming_the_parameter(
    client: TestClient, url: str, parameter: str, message: str
) -> None:
    assert_422_naming(client.get(url), parameter, message)


def test_an_fp32_job_has_no_tensor_figure_to_be_timed_with(client: TestClient) -> None:
    body = client.get("/cheapest?model=qwen2.5-7b&workload=lora&precision=fp32&tokens=1e8").json()
    assert body["options"] == [] and body["unranked"]
    assert all("precision=fp32" in u["reason"] for u in body["unranked"])


# ----- /estimate: the sizes borderline is judged against ------------------------------------------


def test_estimate_borderline_is_judged_against_the_cards_asked_for(client: TestClient) -> None:
    # qwen2.5-32b bf16 inference: ~64 GiB at the point, a band reaching past 72 GiB (90% of 80)
    url = "/estimate?model=qwen2.5-32b&context=2048"
    default = client.get(url).json()
    assert default["borderline"] and default["borderline_cards_gb"] == [80]
    h200 = client.get(f"{url}&gpu=H200").json()
    assert not h200["borderline"] and h200["borderline_cards_gb"] == []
    assert "Borderline judged against the sizes H200 are sold in: 141 GiB." in h200["assumptions"]
    h100 = client.get(f"{url}&gpu=h100").json()
    assert h100["borderline_cards_gb"] == [80]


# ----- the CLI says the same ---------------------------------------------------------------------------


def test_the_cli_takes_gpu_lists_and_tokens(
    seeded: PriceStore, settings: Settings, capsys, monkeypatch, frozen_clock: datetime
) -> None:
    seeded.close()  # the CLI opens the file itself
    argv = ["cheapest", "--db", str(settings.db), "--model", "qwen2.5-7b", "--workload", "full_finetune",
            "--tokens", "2e9", "--gpu", "a100,H100", "--json"]  # fmt: skip
    assert cli(argv) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["query"]["gpu"] == "A100,H100" and answer["query"]["tokens"] == 2_000_000_000
    assert {o["gpu_model"] for o in answer["options"]} == {"A100", "H100"}
    assert all(o["job"]["hours_needed"] > 0 for o in answer["options"])
    monkeypatch.setattr(render.console, "width", 240)
    assert cli(argv[:-1]) == 0
    table = capsys.readouterr().out
    assert "hours needed" in table and "8×H100 80GB" in table and "for 2,000,000,000 tokens" in table


def test_the_cli_takes_a_gpu_list(seeded: PriceStore, settings: Settings, capsys, frozen_clock: datetime) -> None:
    seeded.close()  # the CLI opens the file itself
    argv = ["cheapest", "--db", str(settings.db), "--mem", "60GB", "--hours", "10", "--gpu", "a100,H100"]
    assert cli([*argv, "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["query"]["gpu"] == "A100,H100" and {o["gpu_model"] for o in answer["options"]} == {"A100", "H100"}
    assert {o["sku"]: o["bandwidth_gb_s"] for o in answer["options"]}["BM.GPU.H100.8"] == 3350
    assert cli(argv) == 0
    assert "of A100,H100 memory" in capsys.readouterr().out


def test_the_cli_answers_the_inference_job_as_the_api_does(
    seeded: PriceStore, settings: Settings, capsys, frozen_clock: datetime
) -> None:
    url = "/cheapest?model=llama-3-8b&workload=inference&tokens=1e9&rank_by=job_total"
    with serving(settings, seeded, frozen_clock) as client:
        api_body = client.get(url).json()
    seeded.close()  # the CLI opens the file itself
    argv = ["cheapest", "--db", str(settings.db), "--model", "llama-3-8b", "--workload", "inference",
            "--tokens", "1e9", "--rank-by", "job_total", "--json"]  # fmt: skip
    assert cli(argv) == 0
    cli_body = json.loads(capsys.readouterr().out)
    assert cli_body["options"] == api_body["options"] and cli_body["job"] == api_body["job"]
    assert cli_body["options"] and all(o["job"]["hours_needed"] > 0 and o["total_cny"] > 0 for o in cli_body["options"])
