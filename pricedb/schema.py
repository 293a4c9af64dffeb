"""DuckDB schema as numbered migrations. A migration is appended, never edited once released:
`schema_migrations` records which ones a database file has seen."""

from __future__ import annotations

# Columns shared by `observations` and `offers` (the current view copies observation rows).
QUOTE_COLUMNS_SQL = """
    provider VARCHAR NOT NULL,
    region VARCHAR NOT NULL,
    sku VARCHAR NOT NULL,
    gpu_model VARCHAR NOT NULL,
    gpu_memory_gb DOUBLE NOT NULL,
    gpu_count INTEGER NOT NULL,
    form_factor VARCHAR,
    interconnect VARCHAR,
    pricing VARCHAR NOT NULL,
    price DOUBLE NOT NULL,
    currency VARCHAR NOT NULL,
    unit VARCHAR NOT NULL,
    term_hours DOUBLE,
    billing_increment_s INTEGER NOT NULL,
    billing_minimum_s INTEGER NOT NULL,
    availability VARCHAR NOT NULL,
    list_price DOUBLE,
    tax_included BOOLEAN,
    price_steps VARCHAR,              -- JSON list of {after_hours, price}, or NULL
    notes VARCHAR,
    source_url VARCHAR NOT NULL,
    observed_at TIMESTAMP NOT NULL,   -- UTC
    offline BOOLEAN NOT NULL,
    fx_rate DOUBLE,                   -- native → CNY multiplier used; NULL when none was known
    fx_date DATE,
    fx_note VARCHAR,                  -- why the CNY figures are NULL, when they are
    cny_per_hour DOUBLE,
    cny_per_gpu_hour DOUBLE,
    cny_per_gb_hour DOUBLE
"""

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "runs, fx rates, observations and current offers",
        [
            "CREATE SEQUENCE run_ids START 1",
            "CREATE SEQUENCE observation_ids START 1",
            """
            CREATE TABLE runs (
                run_id BIGINT PRIMARY KEY,
                provider VARCHAR NOT NULL,
                scope VARCHAR NOT NULL,
                pricings VARCHAR[] NOT NULL,      -- pricings this run covered
                started_at TIMESTAMP NOT NULL,
                finished_at TIMESTAMP NOT NULL,
                status VARCHAR NOT NULL,          -- ok | failed | skipped
                error VARCHAR,
                quote_count INTEGER NOT NULL,
                rejected_count INTEGER NOT NULL,
                rejected VARCHAR,                 -- JSON list of {offer, reason}
                notes VARCHAR,                    -- JSON list of strings
                offline BOOLEAN NOT NULL,
                stale_after_minutes INTEGER NOT NULL
            )
            """,
            "CREATE INDEX runs_provider ON runs (provider, finished_at)",
            """
            CREATE TABLE fx_rates (
                date DATE NOT NULL,
                currency VARCHAR NOT NULL,
                rate DOUBLE NOT NULL,             -- units of currency per 1 EUR
                source VARCHAR NOT NULL,
                run_id BIGINT,
                PRIMARY KEY (date, currency)
            )
            """,
            f"""
            CREATE TABLE observations (
                observation_id BIGINT PRIMARY KEY,
                run_id BIGINT NOT NULL,
                {QUOTE_COLUMNS_SQL}
            )
            """,
            "CREATE INDEX observations_offer ON observations (provider, region, sku, pricing, observed_at)",
            f"""
            CREATE TABLE offers (
                observation_id BIGINT NOT NULL,
                run_id BIGINT NOT NULL,
                {QUOTE_COLUMNS_SQL},
                PRIMARY KEY (provider, region, sku, pricing)
            )
            """,
        ],
    ),
    (
        2,
        "daily digests and their deliveries",
        [
            """
            CREATE TABLE digests (
                date DATE PRIMARY KEY,            -- the day digested, in `time_zone`
                compared_to DATE NOT NULL,
                time_zone VARCHAR NOT NULL,
                built_at TIMESTAMP NOT NULL,      -- UTC
                body VARCHAR NOT NULL             -- the digest JSON, as served by /digest
            )
            """,
            """
            CREATE TABLE deliveries (
                digest_date DATE NOT NULL,
                target VARCHAR NOT NULL,          -- webhook kind: json, slack, feishu, dingtalk
                attempted_at TIMESTAMP NOT NULL,  -- UTC
                status VARCHAR NOT NULL,          -- ok | failed
                error VARCHAR
            )
            """,
            "CREATE INDEX deliveries_digest ON deliveries (digest_date)",
        ],
    ),
    (
        3,
        "host shape (vCPUs, RAM) of each quote, where its source publishes it",
        [
            f"ALTER TABLE {table} ADD COLUMN {column} {kind}"
            for table in ("observations", "offers")
            for column, kind in (("vcpus", "INTEGER"), ("memory_gib", "DOUBLE"))
        ],
    ),
    (
        4,
        "offers a successful run held at their last good observation because it rejected their new quote",
        [
            # Append-only like `observations`: a row per run that held an offer. The offers of a moment
            # are the observations of each (provider, pricing)'s newest successful run plus those it
            # held (pricedb.snapshot); `offers` keeps the held observation's row as it was.
            """
            CREATE TABLE held_offers (
                run_id BIGINT NOT NULL,           -- the successful run that rejected the new quote
                observation_id BIGINT NOT NULL,   -- the last good observation, still shown
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                sku VARCHAR NOT NULL,
                pricing VARCHAR NOT NULL,
                reason VARCHAR NOT NULL,          -- why the new quote was rejected
                PRIMARY KEY (run_id, provider, region, sku, pricing)
            )
            """,
        ],
    ),
    (
        5,
        "whether the export files were written after each run",
        [
            # When the runner last tried to write the price sheets after this run (UTC; NULL: not
            # tried, e.g. FX runs), and why that failed (NULL: written).
            "ALTER TABLE runs ADD COLUMN exported_at TIMESTAMP",
            "ALTER TABLE runs ADD COLUMN export_error VARCHAR",
        ],
    ),
    (
        6,
        "GPU slices (MIG instances, vGPU shares): the share of one GPU and what the provider calls it",
        [
            f"ALTER TABLE {table} ADD COLUMN {column} {kind}"
            for table in ("observations", "offers")
            for column, kind in (("gpu_partition", "VARCHAR"), ("gpu_fraction", "DOUBLE"))
        ],
    ),
    (
        7,
        "attempts to publish a snapshot for replicas",
        [
            # One row per attempt (pricedb.replication.publish), kept by the collecting process only:
            # it is not part of the snapshot. /healthz reads the newest.
            """
            CREATE TABLE publishes (
                attempted_at TIMESTAMP NOT NULL,  -- UTC
                version BIGINT,                   -- the snapshot's version; NULL when the attempt failed
                last_run_id BIGINT NOT NULL,      -- the newest run the snapshot holds
                targets VARCHAR NOT NULL,         -- where to (credentials masked)
                error VARCHAR                     -- why it failed; NULL when published
            )
            """,
        ],
    ),
    (
        8,
        "the zones each instance type is sold in, where a source says (AWS zone IDs, for SkyPilot's catalog)",
        [
            # The latest survey of each (provider, region): a successful run that surveyed a region
            # replaces that region's rows; regions it did not survey keep theirs.
            """
            CREATE TABLE instance_zones (
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                sku VARCHAR NOT NULL,
                zone VARCHAR NOT NULL,            -- AWS: the zone ID (use1-az1), the same in every account
                run_id BIGINT NOT NULL,           -- the run that surveyed it
                surveyed_at TIMESTAMP NOT NULL,   -- UTC
                PRIMARY KEY (provider, region, sku, zone)
            )
            """,
        ],
    ),
    (
        9,
        "observations laid out by offer for price history (pricedb/history_layout.py)",
        [
            # Rebuilt by `compact` (never edited in place): the observations up to `compacted_upto`,
            # ordered by offer (`series`, numbered in key order) then time, so DuckDB's zone maps find one
            # offer's points in a row group or two; later observations are read from `observations`.
            """
            CREATE TABLE history_series (
                series INTEGER NOT NULL,
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                sku VARCHAR NOT NULL,
                pricing VARCHAR NOT NULL
            )
            """,
            """
            CREATE TABLE history_points (
                series INTEGER NOT NULL,
                observation_id BIGINT NOT NULL,
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                sku VARCHAR NOT NULL,
                pricing VARCHAR NOT NULL,
                gpu_model VARCHAR NOT NULL,
                gpu_memory_gb DOUBLE NOT NULL,
                gpu_count INTEGER NOT NULL,
                currency VARCHAR NOT NULL,
                unit VARCHAR NOT NULL,
                availability VARCHAR NOT NULL,
                observed_at TIMESTAMP NOT NULL,
                price DOUBLE NOT NULL,
                cny_per_hour DOUBLE,
                cny_per_gb_hour DOUBLE
            )
            """,
            "CREATE TABLE history_layout (compacted_upto BIGINT NOT NULL)",  # one row: the newest id laid out
            "INSERT INTO history_layout VALUES (0)",
        ],
    ),
    (
        10,
        "answers about past days built ahead of the question (pricedb/day_answers.py)",
        [
            # Built after each compaction for past days, served only while the runs finished before the
            # day's end are still those they were built from (`runs_before`, `newest_run`): a run that
            # lands late for that day makes them stale, and the answer is built on demand again. The
            # answers themselves are files beside the database: DuckDB reads every string of a row group
            # to return one, so a 0.5-2 MB answer in a column cost 0.4-1 s to read back.
            """
            CREATE TABLE day_answers (
                kind VARCHAR NOT NULL,            -- offers: /offers?date= (first page) | digest: built on demand
                day DATE NOT NULL,
                time_zone VARCHAR NOT NULL,       -- the day's zone (UTC for snapshots)
                runs_before BIGINT NOT NULL,      -- runs finished before the day's end, when built
                newest_run BIGINT NOT NULL,       -- the newest of them (0: none)
                file VARCHAR NOT NULL,            -- the answer's JSON as built, in <database>.answers/
                PRIMARY KEY (kind, day, time_zone)
            )
            """,
        ],
    ),
]

# Columns added to both tables after migration 1. `ALTER TABLE … ADD COLUMN` appends, so they come
# after the columns of QUOTE_COLUMNS_SQL in both tables, in this order (positional inserts rely on it).
HOST_SHAPE_COLUMNS: tuple[str, ...] = ("vcpus", "memory_gib")  # migration 3
SLICE_COLUMNS: tuple[str, ...] = ("gpu_partition", "gpu_fraction")  # migration 6

QUOTE_COLUMNS: tuple[str, ...] = (
    *(
        line.split()[0]
        for line in QUOTE_COLUMNS_SQL.strip().splitlines()
        if line.strip() and not line.strip().startswith("--")
    ),
    *HOST_SHAPE_COLUMNS,
    *SLICE_COLUMNS,
)
