"""The vocabulary of CONTRACT.md §1 as types: what a collector hands to the store.

A `Quote` is one offer's price as published, at one moment, from one URL. It carries no CNY
figures: normalization (pricedb.normalize) adds those when the quote is stored.
"""

from __future__ import annotations

from datetime import date as Date
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Pricing(StrEnum):
    ON_DEMAND = "on_demand"
    SPOT = "spot"
    MONTHLY = "monthly"
    RESERVED_1Y = "reserved_1y"
    RESERVED_3Y = "reserved_3y"

    @property
    def interruptible(self) -> bool:
        return self is Pricing.SPOT

    @property
    def is_reserved(self) -> bool:
        return self in (Pricing.RESERVED_1Y, Pricing.RESERVED_3Y)


class Unit(StrEnum):
    """What the native price covers. `term` (an extension of the contract's hour/month/year) is a
    price for a whole commitment whose length is the quote's `term_hours` (Azure reservations,
    committed plans)."""

    HOUR = "hour"
    MONTH = "month"
    YEAR = "year"
    TERM = "term"


class Availability(StrEnum):
    AVAILABLE = "available"
    SOLD_OUT = "sold_out"
    UNKNOWN = "unknown"


class RunStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


class PriceStep(BaseModel):
    """A stepped hourly price: from `after_hours` of continuous use on, the price is `price`
    (same currency and unit as the quote). Tencent's UnitPriceSecondStep/ThirdStep."""

    model_config = ConfigDict(frozen=True)

    after_hours: float = Field(gt=0)
    price: float = Field(gt=0)


class Quote(BaseModel):
    """One offer's native price (CONTRACT §1–2), exactly as the provider published it."""

    model_config = ConfigDict(frozen=True)

    provider: str
    region: str
    sku: str
    gpu_model: str
    gpu_memory_gb: float = Field(gt=0)
    gpu_count: int = Field(ge=1)
    form_factor: str | None = None
    interconnect: str | None = None
    pricing: Pricing
    price: float
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    unit: Unit
    term_hours: float | None = Field(default=None, gt=0)
    billing_increment_s: int = Field(default=1, ge=1)
    billing_minimum_s: int = Field(default=0, ge=0)
    availability: Availability = Availability.UNKNOWN
    source_url: str
    observed_at: datetime
    list_price: float | None = None
    tax_included: bool | None = None
    price_steps: tuple[PriceStep, ...] = ()
    notes: str | None = None
    # The host around the GPUs, where the source publishes it (Lambda `specs`, Aliyun `CpuCoreCount`,
    # …); None where it does not (pricedb.shapes has the fallback table for the big clouds).
    vcpus: int | None = Field(default=None, ge=1)
    memory_gib: float | None = Field(default=None, gt=0)
    # A slice of one physical GPU (a MIG instance, a vGPU share) instead of whole cards: the share of
    # one GPU's compute each of the `gpu_count` slices gets (MIG 1g = 1/7 of an A100), and what the
    # provider calls it ("MIG 1g.10gb", "1/6 GPU (vGPU)"). `gpu_memory_gb` is then the slice's memory.
    # Both None: whole GPUs.
    gpu_fraction: float | None = Field(default=None, gt=0, le=1)
    gpu_partition: str | None = Field(default=None, min_length=1)

    @field_validator("currency", mode="before")
    @classmethod
    def _upper_currency(cls, value: str) -> str:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _term_needs_length(self) -> Quote:
        if self.unit is Unit.TERM and self.term_hours is None:
            raise ValueError("a price per term needs term_hours")
        return self

    @model_validator(mode="after")
    def _slice_says_what_it_is(self) -> Quote:
        if (self.gpu_fraction is None) != (self.gpu_partition is None):
            raise ValueError("a GPU slice needs both gpu_fraction and gpu_partition")
        return self

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.sku, self.pricing.value)


class FxRate(BaseModel):
    """Units of `currency` per one EUR on `date` (ECB convention)."""

    model_config = ConfigDict(frozen=True)

    date: Date
    currency: str
    rate: float = Field(gt=0)
    source: str


class InstanceZone(NamedTuple):
    """An instance type is sold in this zone of this region (AWS: the zone ID, `use1-az1`)."""

    region: str
    sku: str
    zone: str
