"""What the AWS modules share: the A100 instance types, the billing rule, and how a quote is made."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pricedb.card_names import identify
from pricedb.models import Pricing, Quote, Unit

PROVIDER = "aws"

# Instance type -> GPUs per instance. p4d = 8 x A100 40GB SXM4; p4de = 8 x A100 80GB SXM4 (AWS's own
# DescribeInstanceTypes misreports p4de's memory; the GPU table in pricedb.card_names knows better).
A100_INSTANCE_TYPES: dict[str, int] = {"p4d.24xlarge": 8, "p4de.24xlarge": 8}

# Linux instances are billed per second with a 60-second minimum (on-demand, spot and reserved alike).
BILLING_INCREMENT_S = 1
BILLING_MINIMUM_S = 60


def make_quote(
    *,
    region: str,
    sku: str,
    pricing: Pricing,
    price: float,
    source_url: str,
    observed_at: datetime,
    notes: str | None = None,
    host: Mapping[str, object] | None = None,
) -> Quote:
    return Quote(
        provider=PROVIDER,
        region=region,
        sku=sku,
        **identify(sku).quote_fields(),
        gpu_count=A100_INSTANCE_TYPES[sku],
        pricing=pricing,
        price=price,
        currency="USD",
        unit=Unit.HOUR,
        billing_increment_s=BILLING_INCREMENT_S,
        billing_minimum_s=BILLING_MINIMUM_S,
        source_url=source_url,
        observed_at=observed_at,
        notes=notes,
        **(host or {}),
    )
