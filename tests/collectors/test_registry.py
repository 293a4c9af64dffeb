"""Every registered collector is complete: fixtures with a replay manifest, a provenance section in
fixtures/README.md, its own tests, a module docstring naming its sources, and a consistent contract.
A collector added to the registry without these fails here."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from collectors.registry import COLLECTORS
from pricedb.models import Pricing

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(COLLECTORS)


def test_registry_is_not_empty_and_keys_match_names() -> None:
    assert NAMES
    for key, collector in COLLECTORS.items():
        assert collector.name == key
        assert re.fullmatch(r"[a-z][a-z0-9]*", key), key


@pytest.mark.parametrize("name", NAMES)
def test_collector_has_fixtures_with_a_replay_manifest(name: str) -> None:
    folder = ROOT / "fixtures" / name
    manifest = json.loads((folder / "replay.json").read_text())
    assert manifest["routes"], f"{name}: replay.json lists no routes"
    for route in manifest["routes"]:
        assert (folder / route["file"]).is_file(), f"{name}: {route['file']} is missing"


@pytest.mark.parametrize("name", NAMES)
def test_collector_fixtures_are_documented(name: str) -> None:
    readme = (ROOT / "fixtures" / "README.md").read_text()
    assert re.search(rf"^##\s+`?{name}`?\b", readme, re.MULTILINE), f"fixtures/README.md has no '## {name}' section"


@pytest.mark.parametrize("name", NAMES)
def test_collector_has_tests(name: str) -> None:
    package = COLLECTORS[name].__module__.split(".")[1]  # collectors/<package>/collector.py
    folder = "e2e_networks" if package == "e2e" else package  # "e2e" alone would read as end-to-end
    tests = list((ROOT / "tests" / "collectors" / folder).glob("test_*.py"))
    assert tests, f"no tests/collectors/{folder}/test_*.py"
    assert any("def test_" in t.read_text() for t in tests)


@pytest.mark.parametrize("name", NAMES)
def test_collector_contract(name: str) -> None:
    collector = COLLECTORS[name]
    module = inspect.getmodule(collector)
    assert module is not None and module.__doc__ and "http" in module.__doc__, f"{name}: document the sources"
    assert collector.title and (collector.source_urls or collector.local_source), f"{name}: name its source"
    assert all(url.startswith("https://") for url in collector.source_urls)
    assert collector.pricings and collector.pricings <= set(Pricing)
    covered = set().union(*(scope.pricings for scope in collector.scopes))
    assert covered == set(collector.pricings), f"{name}: scopes must cover exactly its pricings"
    assert len({scope.name for scope in collector.scopes}) == len(collector.scopes)
    assert inspect.iscoroutinefunction(collector.fetch)
    assert not inspect.iscoroutinefunction(collector.parse)
