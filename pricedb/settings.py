"""All settings in one place (CONTRACT §7), read from the environment with the `GPUPRICE_` prefix.

Per-provider settings follow one naming pattern so that a new collector needs no new field here:
`GPUPRICE_<PROVIDER>_BASE_URL`, `GPUPRICE_<PROVIDER>_REGIONS` (comma list),
`GPUPRICE_<PROVIDER>_INTERVAL_MINUTES` (or `_<SCOPE>_INTERVAL_MINUTES` for a provider with several
schedules, e.g. `GPUPRICE_AWS_SPOT_INTERVAL_MINUTES`), `GPUPRICE_<PROVIDER>_STALE_AFTER_MINUTES` and
`GPUPRICE_<PROVIDER>_DEADLINE_S` (the whole run's time limit; default: the collector's `deadline_s`).
They are gathered from the environment into the dict fields below, which tests may also pass directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AliasChoices, AliasPath, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

import fixtures
from pricedb import redact

# The share of a card a job may use (GPUPRICE_GPU_MEMORY_HEADROOM's default); the estimator's library
# functions take it as their default when a caller has no settings.
DEFAULT_GPU_MEMORY_HEADROOM = 0.90
# The share of the cards' dense tensor peak a training job's model FLOPs achieve (GPUPRICE_TRAINING_MFU):
# PaLM's "model FLOPs utilization" (Chowdhery et al. 2022, Table 3: 46.2% for PaLM 540B, 21–33% for
# GPT-3, Gopher, MT-NLG); docs/estimator.md "The cost of the whole job" gives the evidence.
DEFAULT_TRAINING_MFU = 0.40

_PER_PROVIDER_SUFFIXES = {
    "_BASE_URL": "base_urls",
    "_REGIONS": "regions",
    "_INTERVAL_MINUTES": "intervals",
    "_STALE_AFTER_MINUTES": "stale_after",
    "_DEADLINE_S": "deadlines",
}


def _split_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _names_read(settings_cls: type[BaseSettings]) -> frozenset[str]:
    """The lower-cased environment names outside the prefix that fields read (their aliases)."""
    names: set[str] = set()
    for field in settings_cls.model_fields.values():
        for alias in (field.alias, field.validation_alias):
            choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
            for choice in choices:
                if isinstance(choice, AliasPath):
                    choice = choice.path[0]
                if isinstance(choice, str):
                    names.add(choice.lower())
    return frozenset(names)


class _EnvironmentWhenItNamesOne(PydanticBaseSettingsSource):
    """pydantic-settings' environment source, asked only when some variable could be a setting (the
    prefix, or a provider's own name): it inspects every field's type on each read, ~3 ms for these
    fields, while most processes, and every test, set none. Nothing named: it would read nothing."""

    def __init__(self, settings_cls: type[BaseSettings], environment: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self.environment = environment
        self.prefix = str(settings_cls.model_config.get("env_prefix", "")).lower()
        self.names = _names_read(settings_cls)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.environment.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        for name in os.environ:
            lowered = name.lower()
            if lowered.startswith(self.prefix) or lowered in self.names:
                return self.environment()
        return {}


# Each cache's bound at the default budget; another budget scales them all (MEMORY_SHARES).
# DuckDB: 48 MB loads 50,000 current offers (32 does not); reading a day of runs held since the
# compaction (56-64 MB at 50,000 offers), by the warm-up or a history question, lifts the limit while it
# runs (PriceStore.memory_lifted; what it reads is bounded by GPUPRICE_HISTORY_RECENT_MB),
# and 96 would leave ~35 MB more of the file's blocks in memory after a day's snapshot built on demand.
# The reused questions: the benchmark's 768 jobs by model hold ~25 KB each at 50,000 offers with their
# estimate (charged ~32 KB), so all of them fit in ~26 MB of the 30 left beside the estimator's memos;
# a question asked again is then a reused one (~1.2 ms CPU in process, not ~2.5 as a new one:
# benchmarks/question_memo.py).
DEFAULT_BOUNDS_MB = {"db_memory_mb": 48, "question_memo_mb": 32, "answer_cache_mb": 40, "offer_pieces_mb": 8}
DEFAULT_MEMORY_BUDGET_MB = float(sum(DEFAULT_BOUNDS_MB.values()))  # 128
# How the memory budget is shared among the caches, when a cache's own bound is not given.
MEMORY_SHARES = {name: bound / DEFAULT_MEMORY_BUDGET_MB for name, bound in DEFAULT_BOUNDS_MB.items()}


def memory_shares(budget_mb: float) -> dict[str, float | int]:
    """Each cache's bound from a memory budget (DuckDB's in whole MB, at least 1: 0 would mean DuckDB's
    own default, 80% of RAM)."""
    shares: dict[str, float | int] = {name: budget_mb * share for name, share in MEMORY_SHARES.items()}
    shares["db_memory_mb"] = max(1, int(shares["db_memory_mb"]))
    return shares


DEFAULT_SHARES = memory_shares(DEFAULT_MEMORY_BUDGET_MB)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPUPRICE_", extra="ignore", populate_by_name=True)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # No `.env` file is configured, so the dotenv source read nothing (at the same cost per field).
        return init_settings, _EnvironmentWhenItNamesOne(settings_cls, env_settings), file_secret_settings

    db: Path = Path("gpuprice.duckdb")
    export_dir: Path | None = None  # default: "exports" beside the database file
    fixtures_dir: Path = fixtures.FOLDER  # the recordings shipped with the package (offline mode)
    offline: bool = False

    hours_per_month: float = 730.0
    hours_per_year: float = 8760.0

    # HTTP behaviour shared by every collector.
    http_timeout_s: float = 30.0
    http_max_connections: int = 10
    retry_attempts: int = 4
    retry_base_delay_s: float = 1.0
    retry_max_delay_s: float = 60.0
    # A body read whole (not streamed to a file) larger than this fails the run: memory stays bounded.
    http_max_body_mb: float = Field(default=64.0, gt=0)

    # Scheduling defaults; per-provider values live in `intervals`.
    default_interval_minutes: int = 24 * 60
    fx_interval_minutes: int = 24 * 60
    schedule_jitter_s: int = 120
    misfire_grace_s: int = 15 * 60

    # Per-provider settings, keyed by provider slug (or "provider:scope" for intervals).
    base_urls: dict[str, str] = Field(default_factory=dict)
    regions: dict[str, list[str]] = Field(default_factory=dict)
    intervals: dict[str, int] = Field(default_factory=dict)
    stale_after: dict[str, int] = Field(default_factory=dict)
    deadlines: dict[str, float] = Field(default_factory=dict)  # seconds, for the whole run

    # Credentials (providers' own standard variables are honoured as well).
    aws_access_key_id: SecretStr | None = None  # botocore's chain also reads AWS_* and ~/.aws
    aws_secret_access_key: SecretStr | None = None
    aws_profile: str | None = Field(default=None, validation_alias=AliasChoices("GPUPRICE_AWS_PROFILE", "AWS_PROFILE"))
    aliyun_access_key_id: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_ALIYUN_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_ID")
    )
    aliyun_access_key_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GPUPRICE_ALIYUN_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
    )
    aliyun_security_token: SecretStr | None = Field(  # STS temporary credentials only
        default=None, validation_alias=AliasChoices("GPUPRICE_ALIYUN_SECURITY_TOKEN", "ALIBABA_CLOUD_SECURITY_TOKEN")
    )
    tencent_secret_id: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_TENCENT_SECRET_ID", "TENCENTCLOUD_SECRET_ID")
    )
    tencent_secret_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_TENCENT_SECRET_KEY", "TENCENTCLOUD_SECRET_KEY")
    )
    # The manual quotes sheet (collectors.manual), like a credential: without the file the
    # `manual` run is skipped, not failed. Relative paths are read from the working directory.
    manual_sheet: Path = Path("manual_quotes.csv")
    # Google has no standard variable for an API key (ADC is OAuth, not a key): only GPUPRICE_GCP_API_KEY.
    gcp_api_key: SecretStr | None = None
    vast_api_key: SecretStr | None = Field(  # optional: the offer search answers without one
        default=None, validation_alias=AliasChoices("GPUPRICE_VAST_API_KEY", "VAST_API_KEY")
    )
    autodl_token: SecretStr | None = None  # the Authorization value of a logged-in autodl.com session
    # Lambda documents no environment variable of its own (LAMBDA_API_KEY is a community habit that
    # AWS Lambda set-ups also use for unrelated secrets), so only the GPUPRICE_ name is read.
    lambda_api_key: SecretStr | None = None
    runpod_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_RUNPOD_API_KEY", "RUNPOD_API_KEY")
    )
    verda_client_id: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_VERDA_CLIENT_ID", "VERDA_CLIENT_ID")
    )
    verda_client_secret: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GPUPRICE_VERDA_CLIENT_SECRET", "VERDA_CLIENT_SECRET")
    )
    # E2E Networks' MyAccount API (the plan list its CLI reads): an API key and a bearer token from the
    # MyAccount console, and the project they belong to. E2E documents no environment variables of its
    # own. Without all three the public pricing page is read instead.
    e2e_api_key: SecretStr | None = None
    e2e_auth_token: SecretStr | None = None
    e2e_project_id: SecretStr | None = None  # an account identifier, masked like the credentials

    # Daily digest: built at `digest_time` in `digest_time_zone` for the day before (in that zone).
    digest_time: str = "09:00"
    digest_time_zone: str = "Asia/Shanghai"
    digest_feed_entries: int = 30  # days in /digest.atom
    # Digest delivery (all optional). Webhook URLs carry tokens, so they are secrets too.
    digest_webhook_url: SecretStr | None = None  # generic: the digest JSON, POSTed as is
    digest_slack_webhook_url: SecretStr | None = None
    digest_feishu_webhook_url: SecretStr | None = None
    digest_feishu_secret: SecretStr | None = None  # Feishu/Lark "signature verification" secret
    digest_dingtalk_webhook_url: SecretStr | None = None
    digest_dingtalk_secret: SecretStr | None = None  # DingTalk "加签" secret (SEC…)
    public_url: str | None = None  # base URL used for links in the Atom feed (default: the request's)

    # API
    host: str = "127.0.0.1"
    port: int = 8000
    # How much one answer may hold (api/limits.py); at least what the answer holds by default.
    max_limit: int = Field(default=500, ge=10)  # options in one /cheapest answer (default 10)
    max_page_limit: int = Field(default=5000, ge=500)  # one page: offers of /offers, series of /offers/history
    # /cheapest with estimator inputs: a job fits a GPU when its per-GPU need ≤ this share of the card.
    gpu_memory_headroom: float = Field(default=DEFAULT_GPU_MEMORY_HEADROOM, gt=0.0, le=1.0)
    # /cheapest with tokens= for training: hours = FLOPs / (dense TFLOPS × GPUs × this share).
    training_mfu: float = Field(default=DEFAULT_TRAINING_MFU, gt=0.0, le=1.0)
    # Memory the serving process's caches may hold together (README "Memory"): DuckDB's, the cached
    # answers, the reused questions and the offer pieces, each bounded in bytes by a share of it
    # (MEMORY_SHARES) unless its own setting below is given. With the interpreter, the current offers
    # and their arrays (~230 MB at 50,000 offers) a server then stays under ~400 MB.
    memory_budget_mb: float = Field(default=DEFAULT_MEMORY_BUDGET_MB, gt=0.0)
    # Answers that must neither freeze the server nor grow its memory (README "API under load").
    # Memory the cached answers may hold (share: 40 of 128).
    answer_cache_mb: float = Field(default=DEFAULT_SHARES["answer_cache_mb"], ge=0.0)
    # DuckDB's memory (its buffer pool of the file's blocks, and what queries hold) while serving; 0:
    # DuckDB's default, 80% of RAM. Compaction lifts it while it runs (a 10M-row sort would not fit).
    # Share: 48 of 128 (DEFAULT_BOUNDS_MB says why).
    db_memory_mb: int = Field(default=int(DEFAULT_SHARES["db_memory_mb"]), ge=0)
    # Disk the answers about past days built ahead may take (<database>.answers/): the newest days
    # first; older days are built on demand. 0: none kept.
    day_answers_mb: float = Field(default=1024.0, ge=0.0)
    # Disk the compacted history's files may take (<database>.history/, pricedb.history_files): 36 bytes
    # per observation laid out. A layout needing more keeps none (history is then read from DuckDB). 0: none.
    history_files_mb: float = Field(default=2048.0, ge=0.0)
    # Memory the observations since the last compaction may take, held per data version beside those
    # files (pricedb.history_recent): 44 bytes per observation, ~100 MB past 2M. A longer tail: DuckDB.
    history_recent_mb: float = Field(default=128.0, ge=0.0)
    # What new /cheapest questions reuse (api.query_fast, api.cheapest_write), each bounded in bytes too.
    # Questions by model asked again with other hours: ~960 at 50,000 offers in 32 MB, 2 of which bound the
    # estimator's memos (share: 32 of 128).
    question_memo_mb: float = Field(default=DEFAULT_SHARES["question_memo_mb"], ge=0.0)
    # Each shown offer's option JSON, written once (share: 8 of 128).
    offer_pieces_mb: float = Field(default=DEFAULT_SHARES["offer_pieces_mb"], ge=0.0)
    api_budget_s: float = Field(default=10.0, gt=0.0)  # per heavy request: waiting for a slot + work
    api_max_points: int = Field(default=100_000, ge=1)  # observations one /offers/history answer may hold
    api_heavy_concurrency: int = Field(default=1, ge=1)  # heavy answers computed at once

    # Publishing (pricedb.replication): after every run that lands, a snapshot of what the API reads
    # goes to each target, a folder or s3://bucket/prefix (comma list); replicas serve it.
    publish_to: str | None = None
    publish_retention_minutes: int = Field(default=1440, ge=0)  # older snapshots are pruned (never the current)
    # S3-compatible object storage (AWS S3, Cloudflare R2, MinIO, SeaweedFS, Alibaba OSS, Tencent COS),
    # for publish targets and replica sources alike. Without keys, botocore's chain (AWS_*, profiles).
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    s3_access_key_id: SecretStr | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_session_token: SecretStr | None = None
    s3_addressing_style: Literal["auto", "path", "virtual"] = "auto"
    # Replica (`serve --replica-of SOURCE`): no collectors; the published snapshot, polled.
    replica_of: str | None = None
    replica_dir: Path | None = None  # default: "<db name>-replica" beside the database file
    replica_poll_s: float = Field(default=30.0, gt=0.0)
    replica_stale_after_s: float = Field(default=7200.0, gt=0.0)  # /healthz degraded past this snapshot age

    @field_validator("digest_time")
    @classmethod
    def _digest_time(cls, value: str) -> str:
        match = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", value.strip())
        if not match:
            raise ValueError(f"{value!r} is not a time of day; write it as HH:MM (24-hour), e.g. 09:00")
        return f"{int(match[1]):02d}:{match[2]}"

    @field_validator("digest_time_zone")
    @classmethod
    def _digest_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA time zone (e.g. Asia/Shanghai, UTC)") from None
        return value

    @field_validator("regions", mode="before")
    @classmethod
    def _regions_from_strings(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _split_list(v) if isinstance(v, str) else v for k, v in value.items()}
        return value

    @model_validator(mode="before")
    @classmethod
    def _share_the_memory_budget(cls, data: Any) -> Any:
        """Each cache's bound not given on its own: its share of `memory_budget_mb`."""
        if not isinstance(data, dict):
            return data
        try:
            budget = float(data.get("memory_budget_mb", DEFAULT_MEMORY_BUDGET_MB))
        except (TypeError, ValueError):
            return data  # the field's own validation names it
        if not budget > 0:
            return data
        given = {name: data[name] for name in MEMORY_SHARES if data.get(name) is not None}
        return {**data, **memory_shares(budget), **given}

    @model_validator(mode="before")
    @classmethod
    def _gather_per_provider(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        gathered: dict[str, dict[str, Any]] = {field: {} for field in _PER_PROVIDER_SUFFIXES.values()}
        for name, value in os.environ.items():
            if not name.startswith("GPUPRICE_"):
                continue
            body = name[len("GPUPRICE_") :]
            for suffix, field in _PER_PROVIDER_SUFFIXES.items():
                if body.endswith(suffix) and len(body) > len(suffix):
                    key = body[: -len(suffix)].lower()
                    if field == "intervals" and "_" in key:
                        key = key.replace("_", ":", 1)  # AWS_SPOT -> aws:spot
                    gathered[field][key] = value
                    break
        for field, found in gathered.items():
            if found:
                data = {**data, field: {**found, **(data.get(field) or {})}}
        return data

    def model_post_init(self, context: Any) -> None:
        redact.learn_settings(self)  # every credential held here is masked wherever text leaves

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Settings:
        copy = super().model_copy(update=update, deep=deep)
        redact.learn_settings(copy)  # a copy skips model_post_init, and may bring new credentials
        return copy

    # ----- derived values -------------------------------------------------------------------
    @property
    def export_path(self) -> Path:
        return self.export_dir if self.export_dir is not None else self.db.resolve().parent / "exports"

    @property
    def publish_targets(self) -> list[str]:
        return _split_list(self.publish_to or "")

    @property
    def replica_path(self) -> Path:
        """The replica's own copy of the published snapshot: its database and downloaded files."""
        if self.replica_dir is not None:
            return self.replica_dir
        return self.db.resolve().parent / f"{self.db.stem}-replica"

    @property
    def digest_zone(self) -> ZoneInfo:
        return ZoneInfo(self.digest_time_zone)

    def base_url_for(self, provider: str) -> str | None:
        return self.base_urls.get(provider) or None

    def regions_for(self, provider: str, default: list[str]) -> list[str]:
        return self.regions.get(provider) or list(default)

    def interval_for(self, provider: str, scope: str, default_minutes: int) -> int:
        for key in (f"{provider}:{scope}", provider):
            if key in self.intervals:
                return int(self.intervals[key])
        return default_minutes

    @property
    def http_max_body_bytes(self) -> int:
        return int(self.http_max_body_mb * 1024 * 1024)

    def deadline_for(self, provider: str, default_s: float) -> float:
        """The time one run of `provider` may take, fetch and parse together."""
        return float(self.deadlines.get(provider, default_s))

    def stale_after_minutes(self, provider: str, interval_minutes: int) -> int:
        """A provider's offers go stale when its last success is older than this (default 2×)."""
        return int(self.stale_after.get(provider, 2 * interval_minutes))
