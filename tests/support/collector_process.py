"""`gpuprice` as a test's collecting process: the real command line (`api.cli.main`), with two changes
a test may ask for before it starts.

    python -m tests.support.collector_process [--providers fx,manual] [--die-before-manifest] -- serve …

- `--providers a,b`: the start-up round collects only these providers (a round of every provider
  takes seconds the test does not need); the schedule, and so `/providers`, still has them all, as
  the replicas' (started with the same settings) do.
- `--die-before-manifest`: the process kills itself (SIGKILL: no clean-up, as a power cut or the OOM
  killer would) at its first publish, once every new data file is uploaded to every target and
  before any manifest is written: the moment a reader could be shown half a snapshot if the manifest
  were not written last."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from api.cli import main
from collectors import runner
from pricedb.replication import storage


def _die(*args: object, **kwargs: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def prepare(providers: list[str], die_before_manifest: bool) -> None:
    if providers:
        chosen = {name: runner.COLLECTORS[name] for name in providers if name in runner.COLLECTORS}
        runner.COLLECTORS = chosen  # type: ignore[misc]
    if die_before_manifest:
        storage.FolderStorage.write = _die  # type: ignore[method-assign]
        storage.S3Storage.write = _die  # type: ignore[method-assign]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--providers", default="")
    parser.add_argument("--die-before-manifest", action="store_true")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    prepare([p for p in args.providers.split(",") if p and p != "fx"], args.die_before_manifest)
    sys.exit(main([a for a in args.argv if a != "--"]))
