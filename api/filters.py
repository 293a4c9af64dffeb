"""Query parameters as pydantic models, shared by the HTTP API and the CLI.

FastAPI reads each model from the query string (`Annotated[CheapestParams, Query()]`); the CLI
builds the same model from its options. Unknown parameters are refused (a typo such as `memory=60`
must not silently answer a different question). Every value arrives as text and is parsed by
api.params, whose messages say what was wrong."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from api.cheapest import CheapestQuery
from api.params import parse_bool, parse_choices, parse_hours, parse_mem_gb, parse_pricings, parse_regions
from collectors.registry import COLLECTORS
from pricedb.gpus import MODEL_FACTS

def known_providers() -> list[str]:
    return list(COLLECTORS)


def _bool_field(value: Any) -> Any:
    return None if value is None else parse_bool(value, default=False)


class OfferFilters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pricing: str | None = None
    provider: str | None = None
    region: str | None = None
    gpu: str = "A100"
    include_unavailable: bool | None = None
    include_stale: bool | None = None

    @field_validator("pricing")
    @classmethod
    def _pricing(cls, value: str | None) -> str | None:
        return ",".join(parse_pricings(value)) if value else None

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: str | None) -> str | None:
        return ",".join(parse_choices(value, known_providers(), "provider")) if value else None

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        return ",".join(parse_regions(value)) if value else None

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, value: str) -> str:
        return parse_choices(value, MODEL_FACTS, "gpu")[0] if value.strip() else "A100"

    @field_validator("include_unavailable", "include_stale", mode="before")
    @classmethod
    def _bools(cls, value: Any) -> Any:
        return _bool_field(value)


class CheapestParams(OfferFilters):
    mem: str
    hours: str = "1"
    single_gpu: bool | None = None
    interruptible: bool | None = None
    rank_by: Literal["total", "per_mtoken"] = "total"
    limit: int = 10

    @field_validator("mem")
    @classmethod
    def _mem(cls, value: str) -> str:
        return f"{parse_mem_gb(value):g}"

    @field_validator("hours")
    @classmethod
    def _hours(cls, value: str) -> str:
        return f"{parse_hours(value):g}"

    @field_validator("single_gpu", "interruptible", mode="before")
    @classmethod
    def _more_bools(cls, value: Any) -> Any:
        return _bool_field(value)

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        if not 1 <= value <= 500:
            raise ValueError("must be between 1 and 500")
        return value

    @field_validator("rank_by")
    @classmethod
    def _rank_by(cls, value: str) -> str:
        if value == "per_mtoken":
            raise ValueError("per_mtoken ranks inference estimates: give model or params with workload=inference")
        return value

    def to_query(self) -> CheapestQuery:
        return CheapestQuery(
            mem_gb=float(self.mem),
            hours=float(self.hours),
            pricing=parse_pricings(self.pricing),
            provider=parse_choices(self.provider, known_providers(), "provider"),
            region=parse_regions(self.region),
            gpu=self.gpu,
            single_gpu=bool(self.single_gpu),
            interruptible=True if self.interruptible is None else self.interruptible,
            include_unavailable=bool(self.include_unavailable),
            include_stale=bool(self.include_stale),
            rank_by=self.rank_by,
            limit=self.limit,
        )


SortKey = Literal["cny_per_gb_hour", "cny_per_hour", "cny_per_gpu_hour", "price", "provider", "observed_at"]


class OffersParams(OfferFilters):
    sort: SortKey = "cny_per_gb_hour"
    desc: bool | None = None
    limit: int = 500
    offset: int = 0

    @field_validator("desc", mode="before")
    @classmethod
    def _desc(cls, value: Any) -> Any:
        return _bool_field(value)

    @field_validator("limit")
    @classmethod
    def _limit(cls, value: int) -> int:
        if not 1 <= value <= 5000:
            raise ValueError("must be between 1 and 5000")
        return value

    @field_validator("offset")
    @classmethod
    def _offset(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value
