"""Benchmark: a replica picking up a publish at 10,000,000 observations, and what an incremental
publish costs in bytes.

The database is the one `benchmarks/api_cheapest.py` seeds (2,000 offers, then observations of them),
its observations spread over the last year and split into one successful run per provider and round
(`benchmarks/history.py`'s split), so history is cut into day partitions as a year of collection
would be. Then, measured:

1. the first publish (every partition) to a folder, and a replica's first load of it, read over HTTP
   from the standard library's static file server (bytes counted as served);
2. one more round landing (2,000 quotes through `PriceStore.record_run`), the incremental publish,
   and the replica picking it up: the manifest, the files it did not have, verified and loaded in
   one transaction. A running replica adds its poll interval (`GPUPRICE_REPLICA_POLL_S`) on top.

    python benchmarks/replica_pickup.py [--offers 2000] [--observations 10000000]
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from api_cheapest import seed  # noqa: E402
from history import split_into_runs  # noqa: E402

from pricedb.models import Pricing, Quote, RunStatus, Unit  # noqa: E402
from pricedb.replication.manifest import Manifest  # noqa: E402
from pricedb.replication.publish import publish  # noqa: E402
from pricedb.replication.replica import SnapshotLoader  # noqa: E402
from pricedb.replication.storage import FolderStorage, HttpStorage  # noqa: E402
from pricedb.settings import Settings  # noqa: E402
from pricedb.store import PriceStore, RunRecord, utc_naive  # noqa: E402

RETENTION = timedelta(days=1)


def spread_over_last_year(db: Path, offers: int, observations: int) -> None:
    """api_cheapest's rounds are 525 minutes apart; 10M observations would run years into the future."""
    rounds = observations // offers
    spacing = int(365 * 24 * 60 / rounds)
    start = utc_naive(datetime.now(UTC) - timedelta(days=365, hours=2))
    store = PriceStore(Settings(db=db))
    store.cursor().execute(
        f"""UPDATE observations SET observed_at = TIMESTAMP '{start.isoformat()}'
                + to_minutes(CAST((observation_id - 10000000) // {offers} * {spacing} AS BIGINT))"""
    )
    store.close()


class Counted(SimpleHTTPRequestHandler):
    served = 0
    lock = threading.Lock()

    def log_message(self, format: str, *args: object) -> None:
        return

    def copyfile(self, source, outputfile) -> None:  # type: ignore[no-untyped-def]
        start = source.tell()
        super().copyfile(source, outputfile)
        with Counted.lock:
            Counted.served += source.tell() - start


def _quote(i: int, now: datetime) -> Quote:
    """api_cheapest's offer i, its price moved by 1%."""
    return Quote(
        provider="aws",
        region=f"region-{i % 250}",
        sku=f"sku-{i // 250}",
        gpu_model="A100",
        gpu_memory_gb=40.0 if i % 3 == 0 else 80.0,
        gpu_count=1 if i % 5 == 0 else 8,
        pricing=Pricing.ON_DEMAND if i % 2 == 0 else Pricing.SPOT,
        price=(5.0 + (i % 97) * 0.37) * 1.01,
        currency="USD",
        unit=Unit.HOUR,
        source_url="https://example.test/",
        observed_at=now,
    )


def one_round(offers: int) -> RunRecord:
    now = datetime.now(UTC)
    quotes = [_quote(i, now) for i in range(offers // 2)]  # aws's half of the offers
    pricings = frozenset({Pricing.ON_DEMAND, Pricing.SPOT})
    return RunRecord("aws", "all", pricings, now, now, RunStatus.OK, False, 2880, quotes=quotes)


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size >= 1e5 else f"{size / 1e3:,.1f} kB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=2000)
    parser.add_argument("--observations", type=int, default=10_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        db = base / "collector.duckdb"
        started = time.perf_counter()
        seed(db, args.offers, args.observations)
        spread_over_last_year(db, args.offers, args.observations)
        split_into_runs(db, args.offers)
        print(f"seeded in {time.perf_counter() - started:.0f} s")

        published = base / "published"
        http = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Counted, directory=str(published)))
        threading.Thread(target=http.serve_forever, daemon=True).start()
        settings = Settings(db=db)
        store = PriceStore(settings)
        replica_store = PriceStore(Settings(db=base / "replica" / "replica.duckdb"))
        source = HttpStorage(f"http://127.0.0.1:{http.server_address[1]}", settings)
        loader = SnapshotLoader(replica_store, source, base / "replica")
        try:
            target = FolderStorage(published, writable=True)
            first = publish(store, [target], RETENTION)
            partitions = len(Manifest.model_validate_json((published / "manifest.json").read_bytes()).partitions)
            print(
                f"first publish: {first.files_uploaded} files in {partitions} partitions, "
                f"{mb(first.bytes_uploaded)}, {first.seconds:.1f} s"
            )
            start = time.perf_counter()
            loader.check()
            print(
                f"replica's first load over HTTP: {mb(Counted.served)} downloaded, "
                f"{time.perf_counter() - start:.1f} s (download, verify, load into DuckDB)"
            )

            start = time.perf_counter()
            store.record_run(one_round(args.offers))
            landed = time.perf_counter() - start
            second = publish(store, [target], RETENTION)
            manifest_size = (published / "manifest.json").stat().st_size
            print(
                f"a round of {args.offers // 2:,} quotes landed in {landed:.2f} s; incremental publish: "
                f"{second.files_uploaded} files, {mb(second.bytes_uploaded)} + a {mb(manifest_size)} manifest, "
                f"{second.seconds:.2f} s"
            )
            Counted.served = 0
            start = time.perf_counter()
            loader.check()
            pickup = time.perf_counter() - start
            assert loader.last is not None
            print(
                f"replica picks it up: {pickup:.2f} s (manifest, {loader.last.downloaded_files} new files, verify, "
                f"load), {mb(Counted.served)} downloaded over HTTP; plus its poll interval when running"
            )
            rows = replica_store.cursor().execute("SELECT count(*) FROM observations").fetchone()[0]
            print(f"replica holds {rows:,} observations; its DuckDB file: {mb(replica_store.path.stat().st_size)}")
        finally:
            http.shutdown()
            http.server_close()
            replica_store.close()
            store.close()


if __name__ == "__main__":
    main()
