"""The explicit list of collectors. A provider exists for gpuprice when, and only when, it is
listed here; tests/collectors/test_registry.py fails for any listed collector without fixtures and tests.

A collector's module is imported the first time its class is asked for, not when the registry is:
the names alone (what the API and the CLI validate `provider=` against) cost nothing, and a command
that collects or answers about one provider does not import every provider's SDK (botocore, the
signing libraries: about half a second of each `gpuprice` start)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from collectors.base import Collector

# provider name → (module, class); the order is the order a round collects them in
_WHERE: dict[str, tuple[str, str]] = {
    "aws": ("collectors.aws", "AwsCollector"),
    "azure": ("collectors.azure", "AzureCollector"),
    "aliyun": ("collectors.aliyun", "AliyunCollector"),
    "tencent": ("collectors.tencent", "TencentCollector"),
    "e2e": ("collectors.e2e", "E2eCollector"),
    "manual": ("collectors.manual", "ManualCollector"),
    "gcp": ("collectors.gcp", "GcpCollector"),
    "oci": ("collectors.oci", "OciCollector"),
    "vast": ("collectors.vast", "VastCollector"),
    "autodl": ("collectors.autodl", "AutodlCollector"),
    "lambda": ("collectors.lambda_", "LambdaCollector"),
    "runpod": ("collectors.runpod", "RunpodCollector"),
    "verda": ("collectors.verda", "VerdaCollector"),
}


class Registry(Mapping[str, type[Collector]]):
    """Provider name → collector class, each class imported when first asked for."""

    def __init__(self, where: dict[str, tuple[str, str]]) -> None:
        self._where = where

    def __getitem__(self, name: str) -> type[Collector]:
        module, attribute = self._where[name]
        collector: type[Collector] = getattr(importlib.import_module(module), attribute)
        return collector

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


COLLECTORS: Mapping[str, type[Collector]] = Registry(_WHERE)
