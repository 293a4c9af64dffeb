"""gpuhunt 0.1.34 reads the gpuhunt catalogs gpuprice writes from the offline round of every
collector, with no network, the way README.md tells users to: `GPUHUNT_CATALOG_DIR` pointed at the
folder, `Catalog(balance_resources=False, auto_reload=False)` and the provider named in each query.

Table-driven over every provider with offers: gpuhunt's offline providers answer through its
`Catalog` API (every item, its filters by GPU name and count), equal to gpuprice's offers (fresh and
available, as exported); the others are read by gpuhunt's file reader (`storage.load`), and `Catalog`
refuses them as README.md says (`vastai` is live-only in gpuhunt; aliyun, autodl, e2e, … are no
gpuhunt providers). Plus gpuhunt's own provider-independent integrity checks on every row."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gpuhunt
import pytest
from gpuhunt._internal.catalog import OFFLINE_PROVIDERS, ONLINE_PROVIDERS
from gpuhunt._internal.storage import load

from pricedb import clock
from pricedb.formats.foreign import UsdPricer
from pricedb.formats.gpuhunt import gpuhunt_gpu_name, gpuhunt_name, gpuhunt_vendor
from pricedb.queries import current_offers
from pricedb.shapes import host_shape
from tests.conftest import OfflineRound
from tests.formats.readback import exported_offline_round

Key = tuple[str, str, bool]  # (instance_name, location, spot)
Figures = tuple[float, int, float, int, str, float, str]  # price, cpu, memory, GPUs, GPU name, GB, vendor


@dataclass
class Exported:
    folder: Path  # <gpuhunt name>.csv per provider
    expected: dict[str, dict[Key, Figures]]  # gpuhunt name → what gpuprice offers


@pytest.fixture(scope="module")
def exported(offline_round: OfflineRound, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    folder = tmp_path_factory.mktemp("gpuhunt-readback")
    with exported_offline_round(offline_round, folder) as (store, settings):
        offers = current_offers(store.cursor(), clock.now_naive()).offers
        usd = UsdPricer(store.fx_table())
        expected: dict[str, dict[Key, Figures]] = {}
        for o in offers:
            expected.setdefault(gpuhunt_name(o.provider), {})
            shape, price = host_shape(o), usd(o) if o.pricing in ("on_demand", "spot") else None
            if o.stale or o.availability == "sold_out" or shape is None or price is None:
                continue  # what the export leaves out: stale, sold out, not hourly, no host shape
            expected[gpuhunt_name(o.provider)][(o.sku, o.region, o.pricing == "spot")] = (
                price, shape.vcpus, shape.memory_gib, o.gpu_count, gpuhunt_gpu_name(o), o.gpu_memory_gb,
                gpuhunt_vendor(o),
            )  # fmt: skip
    yield Exported(settings.export_path / "gpuhunt", expected)


@pytest.fixture
def catalog(exported: Exported, monkeypatch: pytest.MonkeyPatch) -> gpuhunt.Catalog:
    monkeypatch.setenv("GPUHUNT_CATALOG_DIR", str(exported.folder))
    return gpuhunt.Catalog(balance_resources=False, auto_reload=False)  # auto_reload=True downloads first


def figures(item: gpuhunt.CatalogItem) -> Figures:
    vendor = item.gpu_vendor.value if item.gpu_vendor is not None else ""
    return (item.price, item.cpu, item.memory, item.gpu_count, item.gpu_name, item.gpu_memory, vendor)


def key(item: gpuhunt.CatalogItem) -> Key:
    return (item.instance_name, item.location, item.spot)


def test_every_provider_with_offers_has_its_file(exported: Exported) -> None:
    assert {p.stem for p in exported.folder.glob("*.csv")} == set(exported.expected)
    read_from_files = set(exported.expected) & set(OFFLINE_PROVIDERS)
    assert read_from_files >= {"aws", "azure", "lambdalabs", "runpod", "verda"}  # the offline data holds them


def test_gpuhunts_catalog_reads_each_offline_provider_equal_to_the_offers(
    exported: Exported, catalog: gpuhunt.Catalog
) -> None:
    for provider in sorted(set(exported.expected) & set(OFFLINE_PROVIDERS)):
        items = catalog.query(provider=provider)
        assert {key(i): figures(i) for i in items} == exported.expected[provider], provider
        assert len(items) == len(exported.expected[provider]), f"{provider}: a row twice"


def test_gpuhunts_filters_find_every_card_and_count(exported: Exported, catalog: gpuhunt.Catalog) -> None:
    for provider in sorted(set(exported.expected) & set(OFFLINE_PROVIDERS)):
        for (sku, location, spot), (_, _, _, count, name, memory, _) in exported.expected[provider].items():
            found = catalog.query(
                provider=provider, gpu_name=name, min_gpu_count=count, max_gpu_count=count,
                min_gpu_memory=memory, max_gpu_memory=memory, spot=spot,
            )  # fmt: skip
            assert (sku, location, spot) in {key(i) for i in found}, (provider, sku, location)


def test_providers_gpuhunt_does_not_read_from_files_are_read_by_its_file_reader(
    exported: Exported, catalog: gpuhunt.Catalog
) -> None:
    others = sorted(set(exported.expected) - set(OFFLINE_PROVIDERS))
    assert "vastai" in others and "aliyun" in others
    for provider in others:
        refusal = "Provider is not loaded" if provider in ONLINE_PROVIDERS else "Unknown provider"
        with pytest.raises(ValueError, match=refusal):
            catalog.query(provider=provider)
        with (exported.folder / f"{provider}.csv").open(encoding="utf-8") as handle:
            items = list(load(handle, provider=provider))
        assert {key(i): figures(i) for i in items} == exported.expected[provider], provider
    with pytest.raises(ValueError, match="Unknown provider: datacrunch"):  # Verda's old name: gpuhunt 0.1.34 says verda
        catalog.query(provider="datacrunch")


def test_every_row_passes_gpuhunts_provider_independent_integrity_checks(exported: Exported) -> None:
    """The checks of gpuhunt's src/integrity_tests/base.py (0.1.34 sdist) that hold for any provider."""
    for provider in sorted(exported.expected):
        with (exported.folder / f"{provider}.csv").open(encoding="utf-8") as handle:
            items = list(load(handle, provider=provider))
        for item in items:
            assert item.instance_name and item.location and item.price > 0, item
            assert item.cpu > 0 and item.memory > 0 and (item.disk_size is None or item.disk_size > 0), item
            assert item.spot in (True, False)
            assert (item.gpu_count > 0) == bool(item.gpu_name and item.gpu_memory and item.gpu_vendor), item
