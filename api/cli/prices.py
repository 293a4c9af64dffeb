"""`gpuprice cheapest`, `estimate`, `offers` and `providers`: the same answers as `/cheapest`,
`/estimate`, `/offers` and `/providers`, as tables or (`--json`) as the API's JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from api import exits, render
from api.answers import cheapest_answer, estimate_answer, offers_answer, providers_answer
from api.cli.options import estimator_options, flag, offer_filters, parameter, parameters, snapshot_date
from api.cli.runner import Question, emit, json_command, parse
from api.query import CheapestParams, EstimateParams, OffersParams

CHEAPEST = Question("/cheapest", CheapestParams, cheapest_answer)
OFFERS = Question("/offers", OffersParams, offers_answer)
PROVIDERS = Question("/providers", None, lambda state, _: providers_answer(state))


def cmd_estimate(args: argparse.Namespace) -> int:
    """Needs no prices, so no database."""
    params = parse(EstimateParams, parameters(args))
    emit(args, json.loads(estimate_answer(params)), render.estimate_table)
    return exits.OK


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    cheapest = commands.add_parser("cheapest", parents=[common], help="cheapest viable options for a job")
    parameter(cheapest, "mem", help="GPU memory needed: 60GB, 60 GiB or 60 (or describe the job: --model …)")
    parameter(cheapest, "hours", default=None, help="wall-clock hours (default 1)")
    parameter(
        cheapest,
        "tokens",
        default=None,
        help="the amount of work instead of hours: training tokens, or tokens "
        "to generate (2e9, 2B); each option's hours come from its own cards (needs --model or --params)",
    )
    parameter(cheapest, "epochs", default=None, help="training: passes over the data, with --dataset-tokens")
    parameter(cheapest, "dataset_tokens", default=None, help="training: tokens in one pass over the data")
    offer_filters(cheapest)
    flag(cheapest, "single_gpu", "the whole need on one GPU")
    flag(cheapest, "interruptible", "include spot (default true; --interruptible false drops it)")
    parameter(
        cheapest,
        "rank_by",
        default=None,
        help="total (default), per_mtoken (inference estimates) or job_total (with --tokens)",
    )
    parameter(cheapest, "limit", type=int, default=None)
    estimator_options(cheapest)
    cheapest.set_defaults(handler=json_command(CHEAPEST, render.cheapest_table))

    estimate = commands.add_parser("estimate", parents=[common], help="GPU memory a workload needs")
    estimator_options(estimate)
    parameter(estimate, "gpu", default=None, help="cards whose sizes borderline is judged against (default A100)")
    estimate.set_defaults(handler=cmd_estimate)

    offers = commands.add_parser("offers", parents=[common], help="current offers")
    offer_filters(offers)
    parameter(offers, "sort", default=None, help="cny_per_gb_hour (default), cny_per_hour, price, provider, …")
    flag(offers, "desc", "sort descending")
    parameter(offers, "limit", type=int, default=None)
    snapshot_date(offers)
    offers.set_defaults(handler=json_command(OFFERS, render.offers_table))

    providers = commands.add_parser("providers", parents=[common], help="each provider's last run")
    providers.set_defaults(handler=json_command(PROVIDERS, render.providers_table))
