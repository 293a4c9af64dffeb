"""The explicit list of collectors. A provider exists for gpuprice when, and only when, it is
listed here; tests/collectors/test_registry.py fails for any listed collector without fixtures and tests."""

from __future__ import annotations

from collectors.aliyun import AliyunCollector
from collectors.autodl import AutodlCollector
from collectors.aws import AwsCollector
from collectors.azure import AzureCollector
from collectors.base import Collector
from collectors.e2e import E2eCollector
from collectors.gcp import GcpCollector
from collectors.lambda_ import LambdaCollector
from collectors.manual import ManualCollector
from collectors.oci import OciCollector
from collectors.runpod import RunpodCollector
from collectors.tencent import TencentCollector
from collectors.vast import VastCollector
from collectors.verda import VerdaCollector

COLLECTORS: dict[str, type[Collector]] = {
    collector.name: collector
    for collector in (
        AwsCollector,
        AzureCollector,
        AliyunCollector,
        TencentCollector,
        E2eCollector,
        ManualCollector,
        GcpCollector,
        OciCollector,
        VastCollector,
        AutodlCollector,
        LambdaCollector,
        RunpodCollector,
        VerdaCollector,
    )
}
