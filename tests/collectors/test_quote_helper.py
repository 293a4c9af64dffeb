"""`Collector.quote`, the one place every collector's quotes are made: what it fills in, what a
collector may override, and a refused value reported as `InvalidQuote` naming the source record."""

from __future__ import annotations

from datetime import timedelta

import pytest

from collectors.aws import AwsCollector
from collectors.base import RawResponse
from collectors.errors import InvalidQuote, ParseError
from collectors.lambda_ import LambdaCollector
from pricedb.models import Pricing, Unit
from tests.conftest import OBSERVED

RAW = RawResponse(url="https://prices.example/a100.json", fetched_at=OBSERVED)
FIELDS = dict(
    region="us-east-1",
    sku="p4d.24xlarge",
    gpu_model="A100",
    gpu_memory_gb=40.0,
    gpu_count=8,
    pricing=Pricing.ON_DEMAND,
    price=21.96,
    currency="USD",
    unit=Unit.HOUR,
)


def test_provider_billing_rule_source_and_time_come_from_the_collector_and_the_response() -> None:
    aws, lam = AwsCollector.quote(RAW, "row", **FIELDS), LambdaCollector.quote(RAW, "row", **FIELDS)
    assert (aws.provider, aws.billing_increment_s, aws.billing_minimum_s) == ("aws", 1, 60)
    assert (lam.provider, lam.billing_increment_s, lam.billing_minimum_s) == ("lambda", 60, 0)
    assert (aws.source_url, aws.observed_at) == ("https://prices.example/a100.json", OBSERVED)


def test_a_collector_may_override_what_is_filled_in() -> None:
    earlier = OBSERVED - timedelta(hours=1)
    quote = AwsCollector.quote(
        RAW, "row", **FIELDS, source_url="https://other.example/", observed_at=earlier, billing_minimum_s=0
    )
    assert (quote.source_url, quote.observed_at, quote.billing_minimum_s) == ("https://other.example/", earlier, 0)


def test_a_refused_value_names_the_record_the_field_and_why() -> None:
    with pytest.raises(InvalidQuote) as caught:
        AwsCollector.quote(RAW, "p4d.24xlarge us-east-1 on_demand", **{**FIELDS, "gpu_count": 0, "currency": "usd$"})
    error = caught.value
    assert isinstance(error, ParseError)  # a source that answers nonsense fails its run like any parse error
    assert error.row == "p4d.24xlarge us-east-1 on_demand"
    assert error.reason.startswith("gpu_count: Input should be greater than or equal to 1; currency: ")
    assert str(error).startswith(
        "https://prices.example/a100.json: p4d.24xlarge us-east-1 on_demand is not a valid quote: gpu_count:"
    )


def test_a_rule_across_fields_is_reported_without_a_field_name() -> None:
    with pytest.raises(InvalidQuote, match=r"is not a valid quote: Value error, a price per term needs term_hours$"):
        AwsCollector.quote(RAW, "row", **{**FIELDS, "unit": Unit.TERM})
