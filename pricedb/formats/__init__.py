"""Output formats: every way gpuprice writes its data for people and other tools, one module each.

`sheet` (the price sheet as CSV, JSON, NDJSON, Parquet), `skypilot` and `gpuhunt` (other tools'
catalogs, sharing `foreign`), `digest_render` (the digest as Markdown and Atom), and `exports` (the
files written after every run, from the same writers as `/export`). They read offers and digests
from the storage modules beside them and never write the database. A new format is a new module here.
"""
