"""A run's quotes go into `observations` many rows to a statement (DuckDB's executemany costs a
statement per row): each stored row must be exactly its quote's row, in the run's order, ids counting
up, across statement boundaries — what the plain row-by-row insert stored."""

from __future__ import annotations

from pricedb.models import Pricing
from pricedb.schema import QUOTE_COLUMNS
from pricedb.store import PriceStore
from tests.helpers import make_quote, make_run, seed_fx


def test_every_quote_is_stored_as_its_own_row_in_order(store: PriceStore) -> None:
    seed_fx(store)
    quotes = [
        make_quote(sku=f"g{n}.xlarge", price=n if n % 7 == 0 else n + 0.25,  # whole prices beside fractions
                   pricing=Pricing.SPOT if n % 3 else Pricing.ON_DEMAND,
                   currency="USD" if n % 5 else "XXX",  # no FX known: the CNY figures stay empty
                   notes=None if n % 2 else f"note {n}")
        for n in range(1, 251)
    ]  # fmt: skip
    run_id = store.record_run(make_run("aws", quotes))
    stored = store.cursor().execute("SELECT * FROM observations WHERE run_id = ? ORDER BY observation_id", [run_id])
    rows = stored.fetchall()
    fx = store.fx_table()
    expected = [store._observation_row(quote, False, fx) for quote in quotes]
    cny = QUOTE_COLUMNS.index("cny_per_gb_hour")
    assert {row[cny] is None for row in expected} == {True, False}
    assert [row[2:] for row in rows] == [tuple(row) for row in expected]
    ids = [row[0] for row in rows]
    assert ids == list(range(ids[0], ids[0] + len(quotes)))
    assert {row[1] for row in rows} == {run_id}
