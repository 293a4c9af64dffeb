"""How much one answer may hold: GPUPRICE_MAX_LIMIT and GPUPRICE_MAX_PAGE_LIMIT bound `limit` in the
422, in the OpenAPI document and in the CLI alike (api/limits.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from api.app import create_app
from api.cli import main as cli
from pricedb.settings import Settings
from pricedb.store import PriceStore
from tests.conftest import make_settings


def _maximum(document: dict, path: str) -> int:
    (limit,) = [p for p in document["paths"][path]["get"]["parameters"] if p["name"] == "limit"]
    return limit["schema"]["maximum"]


@pytest.mark.parametrize(
    ("overrides", "cheapest", "page"),
    [({}, 500, 5000), ({"max_limit": 20, "max_page_limit": 600}, 20, 600)],
)
def test_limits_are_the_settings(tmp_path: Path, overrides: dict, cheapest: int, page: int) -> None:
    settings = make_settings(tmp_path, **overrides)
    store = PriceStore(settings)
    try:
        app = create_app(settings, store=store, schedule=False)
        assert _maximum(app.openapi(), "/cheapest") == cheapest
        with TestClient(app) as client:
            served = client.get("/openapi.json").json()
            assert (_maximum(served, "/cheapest"), _maximum(served, "/offers")) == (cheapest, page)
            assert _maximum(served, "/offers/history") == page
            assert client.get(f"/cheapest?mem=60&limit={cheapest}").status_code == 200
            assert client.get(f"/offers?limit={page}").status_code == 200
            too_many = [
                (f"/cheapest?mem=60&limit={cheapest + 1}", cheapest),
                (f"/offers?limit={page + 1}", page),
                (f"/offers/history?limit={page + 1}", page),
            ]
            for path, most in too_many:
                problem = {"parameter": "limit", "message": f"must be between 1 and {most}", "value": str(most + 1)}
                assert client.get(path).json()["errors"] == [problem], path
    finally:
        store.close()


def test_the_cli_reads_them_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    PriceStore(make_settings(tmp_path)).close()
    monkeypatch.setenv("GPUPRICE_MAX_LIMIT", "20")
    assert cli(["cheapest", "--db", str(tmp_path / "test.duckdb"), "--mem", "60", "--limit", "21"]) == 2
    assert capsys.readouterr().err.strip() == "error: --limit: must be between 1 and 20"
    assert cli(["cheapest", "--db", str(tmp_path / "test.duckdb"), "--mem", "60", "--limit", "20", "--json"]) == 0
    assert '"limit":20' in capsys.readouterr().out


def test_a_limit_below_the_default_answer_is_refused() -> None:
    with pytest.raises(ValidationError, match="max_limit"):
        Settings(max_limit=9)
    with pytest.raises(ValidationError, match="max_page_limit"):
        Settings(max_page_limit=499)
