"""Settings read from the environment exactly as pydantic-settings' own sources read them (pricedb.settings
asks the environment source only when a variable could be a setting)."""

from __future__ import annotations

import pytest
from pydantic_settings import BaseSettings

from pricedb.settings import DEFAULT_MEMORY_BUDGET_MB, Settings, memory_shares


class PlainSettings(Settings):
    """Settings read by every one of pydantic-settings' default sources, unfiltered."""

    settings_customise_sources = classmethod(BaseSettings.settings_customise_sources.__func__)


ENVIRONMENTS = [
    {},
    {"HOME_OF_SOMETHING_ELSE": "1", "GPUPRICE": "no underscore: not the prefix"},
    {"GPUPRICE_DB": "/srv/prices.duckdb", "GPUPRICE_OFFLINE": "true", "GPUPRICE_HTTP_TIMEOUT_S": "7.5"},
    {"gpuprice_offline": "1", "Gpuprice_Retry_Attempts": "2"},  # names are read whatever their case
    {"GPUPRICE_AWS_REGIONS": "us-east-1, eu-west-1", "GPUPRICE_AWS_SPOT_INTERVAL_MINUTES": "30"},
    {"AWS_PROFILE": "prices"},  # a provider's own name, outside the prefix
    {"vast_api_key": "k-1", "TENCENTCLOUD_SECRET_ID": "id", "TENCENTCLOUD_SECRET_KEY": "key"},
    {"GPUPRICE_RUNPOD_API_KEY": "ours", "RUNPOD_API_KEY": "theirs"},
    {"GPUPRICE_BASE_URLS": '{"lambda": "http://127.0.0.1:9/"}'},  # a dict field as JSON
    {"GPUPRICE_MEMORY_BUDGET_MB": "300", "GPUPRICE_QUESTION_MEMO_MB": "64"},  # shared, one bound given
]


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_settings_are_what_every_default_source_reads(environment: dict[str, str], monkeypatch) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert Settings().model_dump() == PlainSettings().model_dump()
    assert (
        Settings(offline=False, retry_attempts=9).model_dump()
        == PlainSettings(offline=False, retry_attempts=9).model_dump()
    )


def test_a_setting_in_the_environment_is_read() -> None:
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("GPUPRICE_HTTP_TIMEOUT_S", "7.5")
        patched.setenv("VAST_API_KEY", "k-1")
        read = Settings()
    assert read.http_timeout_s == 7.5 and read.vast_api_key is not None
    assert read.vast_api_key.get_secret_value() == "k-1"
    assert Settings().http_timeout_s == 30.0 and Settings().vast_api_key is None


def test_the_caches_share_one_memory_budget(monkeypatch) -> None:
    """Each cache's bound not given on its own is its share of GPUPRICE_MEMORY_BUDGET_MB; one given on
    its own (environment or argument) is honoured, and the others keep their shares."""
    bounds = ("db_memory_mb", "question_memo_mb", "answer_cache_mb", "offer_pieces_mb")
    default = Settings()
    assert sum(getattr(default, name) for name in bounds) == default.memory_budget_mb == DEFAULT_MEMORY_BUDGET_MB
    assert {name: getattr(default, name) for name in bounds} == memory_shares(DEFAULT_MEMORY_BUDGET_MB)
    monkeypatch.setenv("GPUPRICE_MEMORY_BUDGET_MB", str(DEFAULT_MEMORY_BUDGET_MB / 2))
    halved = Settings()
    assert [getattr(halved, name) for name in bounds] == [getattr(default, name) / 2 for name in bounds]
    monkeypatch.setenv("GPUPRICE_ANSWER_CACHE_MB", "10")
    assert (Settings().answer_cache_mb, Settings().question_memo_mb) == (10.0, halved.question_memo_mb)
    given = Settings(question_memo_mb=7, db_memory_mb=0)  # 0: DuckDB's own default, as before
    assert (given.question_memo_mb, given.db_memory_mb, given.answer_cache_mb) == (7.0, 0, 10.0)
    assert Settings(memory_budget_mb=2).db_memory_mb == 1  # never 0 from a share: that is DuckDB's 80% of RAM
    with pytest.raises(ValueError, match="memory_budget_mb"):
        Settings(memory_budget_mb=0)
