"""The Parquet sheet inserts all its rows in one statement, a list per column (DuckDB's executemany
costs a statement per row); the file must be exactly the one the plain row-by-row insert writes."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pricedb.formats import sheet
from pricedb.queries import current_offers
from pricedb.store import PriceStore, utc_naive
from tests.conftest import OBSERVED


def plain_parquet(rows: list[tuple], path: Path) -> None:
    """The reference: one INSERT per row, each value cast on its own into its column's type."""
    conn = duckdb.connect()
    try:
        conn.execute("SET TimeZone = 'UTC'")
        definition = ", ".join(f'"{c}" {t}' for c, t in zip(sheet.SHEET_COLUMNS, sheet._SHEET_TYPES, strict=True))
        conn.execute(f"CREATE TABLE sheet ({definition})")
        placeholders = ", ".join("?" for _ in sheet.SHEET_COLUMNS)
        if rows:
            aware = [[sheet._aware(v) for v in r] for r in rows]
            conn.executemany(f"INSERT INTO sheet VALUES ({placeholders})", aware)
        conn.execute(f"COPY sheet TO '{path}' (FORMAT parquet)")
    finally:
        conn.close()


def test_parquet_of_every_recorded_offer_is_the_plain_inserts_file(offline_store: PriceStore, tmp_path: Path) -> None:
    offers = current_offers(offline_store.cursor(), utc_naive(OBSERVED)).offers
    rows = [sheet.sheet_row(o) for o in offers][::3]  # a third: the row-by-row reference costs ~2 ms a row
    assert len(rows) > 200
    assert any(v is None for row in rows for v in row)  # empty cells go through as well
    price = sheet.SHEET_COLUMNS.index("price")  # a whole price given as int beside floats (a column of both)
    rows[1] = (*rows[1][:price], round(rows[1][price]), *rows[1][price + 1 :])
    for count in (len(rows), 1, 0):
        sheet.write_parquet(rows[:count], tmp_path / "fast.parquet")
        plain_parquet(rows[:count], tmp_path / "plain.parquet")
        assert (tmp_path / "fast.parquet").read_bytes() == (tmp_path / "plain.parquet").read_bytes()
        read = duckdb.connect().execute(f"SELECT * FROM '{tmp_path / 'fast.parquet'}'").fetchall()
        assert len(read) == count
