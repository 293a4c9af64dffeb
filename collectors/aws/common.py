"""What the AWS modules share: what a quote of one GPU instance type holds."""

from __future__ import annotations

from typing import Any

from collectors.aws.instance_types import InstanceGpus
from collectors.base import QuoteMaker, RawResponse
from pricedb.models import Pricing, Quote, Unit

PROVIDER = "aws"


def instance_quote(
    quote: QuoteMaker,
    raw: RawResponse,
    *,
    region: str,
    sku: str,
    gpus: InstanceGpus,
    pricing: Pricing,
    price: float,
    notes: str | None = None,
    **fields: Any,
) -> Quote:
    """One instance type's price in USD per instance-hour, with its GPUs (collectors.aws.instance_types)."""
    said = "; ".join(n for n in (notes, gpus.note) if n) or None
    return quote(
        raw,
        f"{sku} {region} {pricing.value}",
        region=region,
        sku=sku,
        **gpus.spec.quote_fields(),
        gpu_count=gpus.count,
        pricing=pricing,
        price=price,
        currency="USD",
        unit=Unit.HOUR,
        notes=said,
        **fields,
    )
