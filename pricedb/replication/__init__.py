"""One collector, many read-only replicas: the snapshot of what the API reads, published as files.

After every run that lands, the collecting process publishes an immutable snapshot — the tables the
API reads, as Parquet files, plus a manifest (version, time, schema version, every file with its size
and SHA-256) written last, in one atomic step — to a folder or S3-compatible object storage.
`gpuprice serve --replica-of SOURCE` polls the manifest, fetches only the files it has not got,
verifies them, and loads them into its own DuckDB file in one transaction: a reader sees the old
snapshot or the new one, never half.

| module | job |
| --- | --- |
| `manifest.py` | the manifest: partitions, files, checksums (pydantic, the wire format) |
| `partitions.py` | the tables cut into partitions and signed, so a publish rewrites only what changed (all SQL) |
| `storage.py` | where snapshots live: a folder, S3-compatible storage (boto3), an https:// copy (read-only) |
| `publish.py` | the collecting side: build the changed files, upload them, write the manifest, prune old snapshots |
| `replica.py` | the replica side: poll, download, verify, load (one transaction), remember what is loaded |
"""
