"""What the AWS modules share: the A100 instance types and what a quote of one holds."""

from __future__ import annotations

from typing import Any

from collectors.base import QuoteMaker, RawResponse
from pricedb.card_names import identify
from pricedb.models import Pricing, Quote, Unit

PROVIDER = "aws"

# Instance type -> GPUs per instance. p4d = 8 x A100 40GB SXM4; p4de = 8 x A100 80GB SXM4 (AWS's own
# DescribeInstanceTypes misreports p4de's memory; the GPU table in pricedb.card_names knows better).
A100_INSTANCE_TYPES: dict[str, int] = {"p4d.24xlarge": 8, "p4de.24xlarge": 8}


def instance_quote(
    quote: QuoteMaker, raw: RawResponse, *, region: str, sku: str, pricing: Pricing, price: float, **fields: Any
) -> Quote:
    """One A100 instance type's price in USD per instance-hour, its GPUs from the table above."""
    return quote(
        raw,
        f"{sku} {region} {pricing.value}",
        region=region,
        sku=sku,
        **identify(sku).quote_fields(),
        gpu_count=A100_INSTANCE_TYPES[sku],
        pricing=pricing,
        price=price,
        currency="USD",
        unit=Unit.HOUR,
        **fields,
    )
