"""The explicit list of collectors. A provider exists for gpuprice when, and only when, it is
listed here; tests/test_registry.py fails for any listed collector without fixtures and tests."""

from __future__ import annotations

from collectors.autodl import AutodlCollector
from collectors.aws import AwsCollector
from collectors.azure import AzureCollector
from collectors.base import Collector
from collectors.vast import VastCollector

COLLECTORS: dict[str, type[Collector]] = {
    collector.name: collector
    for collector in (
        AwsCollector,
        AzureCollector,
        VastCollector,
        AutodlCollector,
    )
}
