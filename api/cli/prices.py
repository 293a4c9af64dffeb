"""`gpuprice cheapest`, `estimate`, `offers` and `providers`: the same answers as `/cheapest`,
`/estimate`, `/offers` and `/providers`, as tables or (`--json`) as the API's JSON. Each command
imports its answer when it runs (api/cli/entry.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from api import exits
from api.cli.options import estimator_options, flag, offer_filters, parameter, parameters, snapshot_date


def cmd_cheapest(args: argparse.Namespace) -> int:
    from api import render
    from api.answers import cheapest_answer
    from api.cli.runner import Question, answer_command
    from api.query import CheapestParams

    return answer_command(args, Question("/cheapest", CheapestParams, cheapest_answer), render.cheapest_table)


def cmd_offers(args: argparse.Namespace) -> int:
    from api import render
    from api.answers import offers_answer
    from api.cli.runner import Question, answer_command
    from api.query import OffersParams

    return answer_command(args, Question("/offers", OffersParams, offers_answer), render.offers_table)


def cmd_providers(args: argparse.Namespace) -> int:
    from api import render
    from api.answers import providers_answer
    from api.cli.runner import Question, answer_command

    question = Question("/providers", None, lambda state, _: providers_answer(state))
    return answer_command(args, question, render.providers_table)


def cmd_estimate(args: argparse.Namespace) -> int:
    """Needs no prices, so no database."""
    from api import render
    from api.answers import estimate_answer
    from api.cli.runner import emit, parse
    from api.query import EstimateParams

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
    cheapest.set_defaults(handler=cmd_cheapest)

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
    offers.set_defaults(handler=cmd_offers)

    providers = commands.add_parser("providers", parents=[common], help="each provider's last run")
    providers.set_defaults(handler=cmd_providers)
