"""Query parameters as typed pydantic models, shared by the HTTP API and the CLI.

FastAPI reads each model from the query string (`Annotated[CheapestParams, Query()]`); the CLI
builds the same model from its options. Every value arrives as text and is parsed once, by
api.parsing (whose messages say what was wrong), into what it means: pricing models, provider
slugs, GB, hours, moments. Unknown parameters are refused (a typo such as `memory=60` must not
silently answer a different question). The OpenAPI document describes the text each parameter
accepts (api.query_schema), and each model's defaults are its endpoint's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from starlette.datastructures import QueryParams

from api import query_schema as qs
from api.cheapest import CheapestQuery, JobWork
from api.estimator import Estimate, EstimateQuery, EstimatorError, Workload
from api.estimator.estimate import cached_estimate
from api.estimator.models import (
    _ALIASES,
    MAX_BATCH,
    MAX_CONTEXT,
    MAX_GPUS,
    Attention,
    Engine,
    Logits,
    Optimizer,
    Precision,
)
from api.limits import limit_parameter
from api.parsing import (
    MAX_EPOCHS,
    MAX_HOURS,
    MAX_MEM_GB,
    MAX_TOKENS,
    REGION,
    Choices,
    parse_bool,
    parse_choices,
    parse_day,
    parse_epochs,
    parse_hours,
    parse_mem_gb,
    parse_moment,
    parse_pricings,
    parse_regions,
    parse_tokens,
    split_list,
)
from collectors.registry import COLLECTORS
from pricedb.cards import MODEL_FACTS
from pricedb.models import Pricing
from pricedb.offer_filter import OfferFilter
from pricedb.settings import DEFAULT_GPU_MEMORY_HEADROOM


def known_providers() -> list[str]:
    return list(COLLECTORS)


def _comma_list(item: type, parse: Callable[[Any], list[Any]], document: WithJsonSchema) -> Any:
    """A comma list parsed into a tuple of `item`; give it `Field(default_factory=tuple)`, so that the
    OpenAPI document states no `[]` default for a text parameter (empty means all, as it says)."""
    return Annotated[tuple[item, ...], BeforeValidator(parse), document]  # type: ignore[valid-type]


Pricings = _comma_list(Pricing, parse_pricings, qs.choice_list([p.value for p in Pricing], "pricing models"))


def parse_providers(text: Any) -> list[str]:
    return parse_choices(text, known_providers(), "provider")


def parse_gpus(text: Any) -> list[str]:
    return parse_choices(text, GPU_MODELS, "gpu")


GPU_MODELS = Choices(MODEL_FACTS)  # the card table is fixed while the program runs


Providers = _comma_list(str, parse_providers, qs.choice_list(known_providers(), "providers"))
Regions = _comma_list(str, parse_regions, qs.region_list(REGION.pattern.strip("^$")))
Skus = _comma_list(str, split_list, qs.schema({"type": "string"}, "comma list of instance types / SKUs"))


Gpus = _comma_list(str, parse_gpus, qs.choice_list(MODEL_FACTS, "GPU models (pricedb/cards.py)"))
Flag = Annotated[bool, BeforeValidator(lambda text: parse_bool(text, default=False)), qs.FLAG]
OptionsLimit = Annotated[int, *limit_parameter("max_limit")]
PageLimit = Annotated[int, *limit_parameter("max_page_limit")]
Day = Annotated[date | None, BeforeValidator(lambda text: parse_day(text) if text else None)]
LISTS = ("gpu", "pricing", "provider", "region", "sku")


def as_routed(query_string: bytes) -> dict[str, Any]:
    """The query as FastAPI hands it to a parameter model (Starlette's parsing)."""
    params = QueryParams(query_string)
    return {key: params.getlist(key) if key in LISTS else params[key] for key in params}


COUNT_PATTERN = r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*[kKmMbBtT]?\s*$|^$"  # 7B, 2e9, 500M
Tokens = Annotated[int | None, BeforeValidator(lambda text: parse_tokens(text) if text not in (None, "") else None)]


class BaseFilters(BaseModel):
    """The filters every offer question takes."""

    model_config = ConfigDict(extra="forbid")

    pricing: Pricings = Field(default_factory=tuple)
    provider: Providers = Field(default_factory=tuple)
    region: Regions = Field(default_factory=tuple)
    gpu: Gpus = Field(default_factory=tuple)  # empty: every card
    include_unavailable: Flag = True

    @model_validator(mode="before")
    @classmethod
    def _one_text_each(cls, data: Any) -> Any:
        """FastAPI hands a parameter typed as a list over with all its repetitions; each of these is
        one text (a comma list), and as for every other parameter the last one given counts."""
        if isinstance(data, dict):
            return {k: v[-1] if k in LISTS and isinstance(v, list) and v else v for k, v in data.items()}
        return data

    def offer_filter(self) -> OfferFilter:
        """Which offers (or observations) the question is about (pricedb.offer_filter)."""
        return OfferFilter(
            gpus=self.gpu,
            pricings=tuple(p.value for p in self.pricing),
            providers=self.provider,
            regions=self.region,
            include_unavailable=self.include_unavailable,
        )


class OfferFilters(BaseFilters):
    """Filters over current offers (or a day's), which may be stale."""

    include_stale: Flag = True

    def offer_filter(self) -> OfferFilter:
        return replace(super().offer_filter(), include_stale=self.include_stale)


def _invalid(problems: list[tuple[str, str, Any]]) -> ValidationError:
    """A ValidationError naming each (parameter, message, value), raised from a model validator so
    that the 422 body (and the CLI's error line) still names the parameter."""
    return ValidationError.from_exception_data(
        "query",
        [
            InitErrorDetails(type=PydanticCustomError("invalid", "{message}", {"message": m}), loc=(p,), input=v)
            for p, m, v in problems
        ],
    )


def _enum_names(field: str, enum: Any) -> list[str]:
    return [*(member.value for member in enum), *_ALIASES.get(field, {})]


class EstimatorFields(BaseModel):
    """The memory estimator's inputs (CONTRACT §4 `/estimate`), as text, validated by the estimator:
    `EstimateQuery` for each value, `estimate()` for the query as a whole (unknown model, impossible
    combinations). Empty values count as not given."""

    model_config = ConfigDict(extra="forbid")

    model: Annotated[str | None, qs.schema({"type": "string", "maxLength": 200}, "catalog name or Hugging Face id")] = (
        None
    )
    params: Annotated[
        str | None,
        qs.schema(
            {"type": "string", "pattern": r"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*[kKmMbBtT]?\s*$|^$"},
            "parameter count: 7B, 13e9, 1.5b (a million to 10T)",
        ),
    ] = None
    layers: Annotated[str | None, qs.integer_or_empty(1, 1000)] = None
    hidden: Annotated[str | None, qs.integer_or_empty(1, 1_000_000)] = None
    heads: Annotated[str | None, qs.integer_or_empty(1, 10_000)] = None
    kv_heads: Annotated[str | None, qs.integer_or_empty(1, 10_000)] = None
    head_dim: Annotated[str | None, qs.integer_or_empty(1, 10_000)] = None
    vocab: Annotated[str | None, qs.integer_or_empty(1, 10_000_000)] = None
    intermediate: Annotated[str | None, qs.integer_or_empty(1, 10_000_000)] = None
    workload: Annotated[str | None, qs.enum_or_empty(_enum_names("workload", Workload))] = None
    precision: Annotated[str | None, qs.enum_or_empty(_enum_names("precision", Precision))] = None
    context: Annotated[str | None, qs.integer_or_empty(1, MAX_CONTEXT, "tokens per sequence")] = None
    batch: Annotated[str | None, qs.integer_or_empty(1, MAX_BATCH, "concurrent sequences")] = None
    gpus: Annotated[str | None, qs.integer_or_empty(1, MAX_GPUS)] = None
    zero: Annotated[str | None, qs.integer_or_empty(0, 3, "ZeRO stage")] = None
    gradient_checkpointing: Annotated[str | None, qs.schema({"anyOf": [{"type": "boolean"}, qs.EMPTY]})] = None
    optimizer: Annotated[str | None, qs.enum_or_empty(_enum_names("optimizer", Optimizer))] = None
    lora_rank: Annotated[str | None, qs.integer_or_empty(1, 8192)] = None
    engine: Annotated[str | None, qs.enum_or_empty(_enum_names("engine", Engine))] = None
    attention: Annotated[str | None, qs.enum_or_empty(_enum_names("attention", Attention))] = None
    logits: Annotated[str | None, qs.enum_or_empty(_enum_names("logits", Logits))] = None

    _estimate: Estimate | None = PrivateAttr(None)

    def estimator_values(self) -> dict[str, str]:
        values = self.__dict__  # the fields' values, read without an attribute look-up each
        return {name: values[name] for name in ESTIMATOR_FIELDS if values[name]}

    def _run_estimator(self, gpu_models: tuple[str, ...] = ()) -> Estimate:
        """The estimate, with `borderline` judged against the sizes of `gpu_models` (none: the A100's)."""
        values = self.estimator_values()
        try:
            # Shared from the estimator's cache, read only (estimate() would hand out a deep copy).
            result = cached_estimate(EstimateQuery(**values), DEFAULT_GPU_MEMORY_HEADROOM, gpu_models)
        except ValidationError as exc:
            raise _invalid(
                [(str(e["loc"][-1]), str(e["msg"]).removeprefix("Value error, "), e["input"]) for e in exc.errors()]
            ) from None
        except EstimatorError as exc:
            raise _invalid([(exc.param, exc.message, values.get(exc.param))]) from None
        self._estimate = result
        return result

    @property
    def estimate(self) -> Estimate | None:
        """The estimate of the given inputs (computed once, when the parameters were validated)."""
        return self.__pydantic_private__["_estimate"]  # type: ignore[index]  # as `self._estimate`, without its miss first (~4 µs)


ESTIMATOR_FIELDS = tuple(EstimatorFields.model_fields)


BorderlineCards = _comma_list(
    str,
    parse_gpus,
    qs.choice_list(
        MODEL_FACTS, "GPU models whose sizes borderline is judged against", "empty: the A100's 40 and 80 GiB"
    ),
)


class EstimateParams(EstimatorFields):
    """`/estimate` and `gpuprice estimate`. `gpu` names the cards `borderline` is judged against
    (default: the A100's 40 and 80 GiB)."""

    gpu: BorderlineCards = Field(default_factory=tuple)

    @model_validator(mode="before")
    @classmethod
    def _one_gpu_text(cls, data: Any) -> Any:
        return BaseFilters._one_text_each(data)

    @model_validator(mode="after")
    def _estimated(self) -> EstimateParams:
        self._run_estimator(self.gpu)
        return self


class CheapestParams(OfferFilters, EstimatorFields):
    """`/cheapest`: `mem`, or the estimator's inputs (then each option is judged on its own GPU count).
    Stale and sold-out offers are left out unless asked for; spot is in unless `interruptible=false`.
    With the estimator's inputs, `tokens` (or `epochs` × `dataset_tokens`) gives the amount of work
    instead of `hours`: each option's hours then come from its own cards' speed (the whole job's cost)."""

    include_unavailable: Flag = False
    include_stale: Flag = False
    mem: Annotated[
        float | None,
        BeforeValidator(lambda text: None if text is None else parse_mem_gb(text)),
        qs.number(0, MAX_MEM_GB, 60, "GPU memory needed in GB: 60, or with a unit: 60GB, 60 GiB, 1TB"),
    ] = None
    hours: Annotated[float, BeforeValidator(parse_hours), qs.number(0, MAX_HOURS, 1, "wall-clock hours of the job")] = (
        1.0
    )
    tokens: Annotated[
        Tokens,
        qs.schema(
            {"type": "string", "pattern": COUNT_PATTERN},
            "the amount of work instead of hours: training tokens (training), or tokens to generate "
            "(inference): 2e9, 2B, 500M",
        ),
    ] = None
    epochs: Annotated[
        float | None,
        BeforeValidator(lambda text: parse_epochs(text) if text not in (None, "") else None),
        qs.schema(
            {"anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": MAX_EPOCHS}, qs.EMPTY]},
            "training: passes over the dataset (with dataset_tokens), instead of tokens",
        ),
    ] = None
    dataset_tokens: Annotated[
        Tokens, qs.schema({"type": "string", "pattern": COUNT_PATTERN}, "training: tokens in one pass over the data")
    ] = None
    single_gpu: Flag = False
    interruptible: Flag = True
    rank_by: Literal["total", "per_mtoken", "job_total"] = "total"
    limit: OptionsLimit = 10

    # What answers work out from the question without its hours, shared by its copies with other
    # hours (api.query_fast): the estimator judge's memo (api.answers).
    _shared: dict[Any, Any] = PrivateAttr(default_factory=dict)

    @property
    def shared(self) -> dict[Any, Any]:
        return self.__pydantic_private__["_shared"]  # type: ignore[index]  # as `self._shared`, without its miss first (~4 µs)

    @model_validator(mode="after")
    def _mem_or_estimate(self) -> CheapestParams:
        given = self.estimator_values()
        if self.mem is not None and given:
            raise _invalid(
                [("mem", f"give mem or the estimator's inputs ({', '.join(given)}), not both", f"{self.mem:g}")]
            )
        if self.mem is None and not given:
            raise _invalid(
                [("mem", "give mem (e.g. 60GB), or the job to estimate: model (e.g. llama-2-13b) or params "
                  "(e.g. 7B) with workload, precision, context, …", None)]
            )  # fmt: skip
        result = self._run_estimator(self.gpu) if given else None
        if result is not None and self.single_gpu and result.gpus > 1:
            raise _invalid([("single_gpu", f"contradicts gpus={result.gpus}: give one of them", "true")])
        self._check_work(result)
        work = self.work
        if self.rank_by == "per_mtoken" and (result is None or result.workload is not Workload.INFERENCE):
            what = "mem gives no throughput" if result is None else f"workload is {result.workload.value}"
            raise _invalid(
                [("rank_by", f"per_mtoken ranks inference estimates ({what}): give model or params "
                  "with workload=inference, or rank_by=total", self.rank_by)]
            )  # fmt: skip
        if self.rank_by == "job_total" and work is None:
            raise _invalid(
                [("rank_by", "job_total ranks by the cost of the whole job: give the amount of work, tokens "
                  "(training tokens, or tokens to generate) or epochs with dataset_tokens", self.rank_by)]
            )  # fmt: skip
        if work is not None and "rank_by" not in self.model_fields_set:
            self.rank_by = "job_total"
        return self

    def _check_work(self, result: Estimate | None) -> None:
        """The amount of work (`tokens`, or `epochs` × `dataset_tokens`), checked against the rest."""
        named = [n for n in ("tokens", "epochs", "dataset_tokens") if getattr(self, n) is not None]
        if not named:
            return
        first = named[0]
        if result is None:
            raise _invalid(
                [(first, "the cost of the whole job needs the job itself: give model or params with workload "
                  "instead of mem (its hours come from the job's FLOPs or decoding speed)", getattr(self, first))]
            )  # fmt: skip
        if "hours" in self.model_fields_set:
            raise _invalid(
                [("hours", f"give hours (wall-clock time) or {first} (the amount of work, from which each "
                  "option's hours are estimated), not both", f"{self.hours:g}")]
            )  # fmt: skip
        if self.tokens is not None and len(named) > 1:
            raise _invalid(
                [(named[1], "give tokens, or epochs with dataset_tokens, not both", getattr(self, named[1]))]
            )
        if self.tokens is not None:
            return
        if self.epochs is None or self.dataset_tokens is None:
            missing, why = (
                ("dataset_tokens", "epochs needs dataset_tokens, the tokens in one pass over the data")
                if self.epochs is not None
                else ("epochs", "dataset_tokens needs epochs, the passes over the data (or give tokens)")
            )
            raise _invalid([(missing, why, None)])
        if not result.workload.training:
            raise _invalid(
                [("epochs", "epochs are passes of training; for inference give tokens (tokens to generate)",
                  f"{self.epochs:g}")]
            )  # fmt: skip
        total = self.epochs * self.dataset_tokens
        if total > MAX_TOKENS:
            raise _invalid(
                [
                    (
                        "epochs",
                        f"epochs × dataset_tokens = {total:g} tokens, more than {MAX_TOKENS:g}",
                        f"{self.epochs:g}",
                    )
                ]
            )

    @property
    def work(self) -> JobWork | None:
        """The amount of work asked about; None when the question is about `hours`."""
        if self.tokens is not None:
            return JobWork(tokens=self.tokens)
        if self.epochs is not None and self.dataset_tokens is not None:
            tokens = max(1, round(self.epochs * self.dataset_tokens))
            return JobWork(tokens=tokens, epochs=self.epochs, dataset_tokens=self.dataset_tokens)
        return None

    def to_query(self) -> CheapestQuery:
        work = self.work
        return CheapestQuery(
            mem_gb=self.mem,
            hours=None if work is not None else self.hours,
            pricing=list(self.pricing),
            provider=list(self.provider),
            region=list(self.region),
            gpu=list(self.gpu),
            single_gpu=self.single_gpu,
            interruptible=self.interruptible,
            include_unavailable=self.include_unavailable,
            include_stale=self.include_stale,
            rank_by=self.rank_by,
            limit=self.limit,
            work=work,
        )


SortKey = Literal["cny_per_gb_hour", "cny_per_hour", "cny_per_gpu_hour", "price", "provider", "observed_at"]


class Paging(BaseModel):
    limit: PageLimit = 500
    offset: Annotated[int, Field(json_schema_extra={"minimum": 0})] = 0

    @field_validator("offset")
    @classmethod
    def _offset(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be 0 or more")
        return value


DAY_DESCRIPTION = "YYYY-MM-DD, from 1970-01-01 to today (UTC): the market at the end of that UTC day"


class SnapshotMixin(BaseModel):
    """`date=YYYY-MM-DD`: the market at the end of that UTC day instead of now."""

    date: Annotated[Day, qs.day(DAY_DESCRIPTION)] = None


class OffersParams(OfferFilters, Paging, SnapshotMixin):
    """`/offers`: current offers, or with `date` the market at the end of that UTC day."""

    sort: SortKey = "cny_per_gb_hour"
    desc: Flag = False


class ExportParams(OfferFilters, SnapshotMixin):
    format: Literal["csv", "json", "ndjson", "parquet"] = "csv"


class ForeignParams(OfferFilters, SnapshotMixin):
    """Filters for the SkyPilot and gpuhunt catalogs. Those tools know nothing of staleness or stock,
    so stale and sold-out offers are left out unless asked for."""

    include_unavailable: Flag = False
    include_stale: Flag = False


class HistoryParams(BaseFilters, Paging):
    since: Annotated[
        datetime | None,
        BeforeValidator(lambda text: parse_moment(text) if text else None),
        qs.moment("an ISO date or date-time (UTC unless an offset is given); default: 30 days before until"),
    ] = None
    until: Annotated[
        datetime | None,
        qs.moment("an ISO date (that whole day) or date-time (UTC unless an offset is given); default: now"),
    ] = None
    sku: Skus = Field(default_factory=tuple)
    limit: PageLimit = 100  # series per page

    @model_validator(mode="before")
    @classmethod
    def _no_stale(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("include_stale") is not None:
            raise _invalid(
                [("include_stale", "has no meaning for history: every observation is shown as it was seen",
                  data["include_stale"])]
            )  # fmt: skip
        return data

    @field_validator("until", mode="before")
    @classmethod
    def _until(cls, value: Any, info: ValidationInfo) -> datetime | None:
        if not value:
            return None
        until = parse_moment(value, end_of_day=True)
        since = info.data.get("since")
        if since is not None and since >= until:
            raise ValueError(f"{value!r} (up to {until.isoformat()}Z) is not after since ({since.isoformat()}Z)")
        return until

    def offer_filter(self) -> OfferFilter:
        return replace(super().offer_filter(), skus=self.sku)


class DigestParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    date: Annotated[
        Day, qs.day("YYYY-MM-DD, from 1970-01-01 to today (default: yesterday in the digest's time zone)")
    ] = None
    format: Literal["json", "md"] = "json"
