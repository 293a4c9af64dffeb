"""Asks SkyPilot's own catalog reader about gpuprice's SkyPilot catalogs, and prints its answers.

Runs with the read-back venv's interpreter (.venv-readback, made by .ci/readback-venv), never inside
gpuprice's venv, and imports nothing of gpuprice:

    .venv-readback/bin/python tests/formats/skypilot_reader.py <catalogs> <calls.json> [<catalogs> <calls.json> …]

`<catalogs>` holds `<cloud>/vms.csv` (and any `aws/az_mappings-*.csv`); `<calls.json>` is a list of
`{"cloud": …, "call": …, "args": […], "kwargs": {…}}`, `call` one of CALLS below. Prints a JSON list
with, per pair, a list with, per call, `{"ok": answer}` or `{"error": "<type>: <message>"}`. SkyPilot
is imported once; each pair is answered by a child forked after that, with its catalogs in place.

SkyPilot 0.14.1 reads `${SKY_RUNTIME_DIR:-$HOME}/.sky/catalogs/v8/<cloud>/vms.csv`, a path it fixes
when `sky` is imported, so both are set to a scratch folder first (`import sky` also writes
`~/.sky`). A catalog placed there without `.meta/<cloud>/vms.csv.md5` counts as edited by the user
and is never downloaded over (sky/catalog/common.py `is_catalog_modified`, `_need_update`); no
cloud SDK or credential is loaded, so nothing here reaches the network.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import sys
import tempfile
from typing import Any

CLOUD_CLASSES = {"aws": "AWS", "azure": "Azure", "lambda": "Lambda", "verda": "Verda"}
CATALOG_CALLS = (
    "list_accelerators",
    "get_hourly_cost",
    "get_accelerators_from_instance_type",
    "get_instance_type_for_accelerator",
    "get_vcpus_mem_from_instance_type",
    "validate_region_zone",
    "get_local_disk_from_instance_type",
)
CALLS = (*CATALOG_CALLS, "regions_with_offering")


def plain(value: Any) -> Any:
    """SkyPilot's answers as JSON: named tuples as objects, regions as {name, zones}, NaN as null."""
    if type(value).__name__ == "Region":  # a named tuple of its name, with zones set beside
        return {"name": value.name, "zones": [z.name for z in (value.zones or [])]}
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def answer(calls_path: str) -> list[dict[str, Any]]:
    """SkyPilot's answer to each call in `calls_path`, about the catalogs in place."""
    from sky import clouds

    with open(calls_path, encoding="utf-8") as handle:
        calls = json.load(handle)
    answers = []
    for call in calls:
        name = call["call"]
        if name not in CALLS:
            raise SystemExit(f"unknown call {name!r}")
        if name == "regions_with_offering":
            function = getattr(clouds, CLOUD_CLASSES[call["cloud"]]).regions_with_offering
        else:
            function = getattr(importlib.import_module(f"sky.catalog.{call['cloud']}_catalog"), name)
        try:
            answers.append({"ok": plain(function(*call.get("args", []), **call.get("kwargs", {})))})
        except Exception as exc:  # SkyPilot's answer is the error; the test reads it
            answers.append({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"})
    return answers


def answer_in_child(catalogs: str, catalog_dir: str, calls_path: str) -> list[dict[str, Any]]:
    """`answer` in a child forked from this process: it starts with SkyPilot imported, and whatever
    SkyPilot keeps of one set of catalogs (its data frames, its caches) ends with it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read)
            shutil.copytree(catalogs, catalog_dir)
            with os.fdopen(write, "w", encoding="utf-8") as out:
                json.dump(answer(calls_path), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, encoding="utf-8") as received:
        answers = received.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit(f"reading {catalogs} failed (status {status})")
    shutil.rmtree(catalog_dir)
    return json.loads(answers)


def main(jobs: list[tuple[str, str]]) -> None:
    # Not "gpuprice-…": that is a run's scratch folder, and a gpuprice another test starts sweeps one
    # it finds abandoned (pricedb.files.sweep_workdirs), which any looks in the year-ahead run.
    scratch = tempfile.mkdtemp(prefix="skypilot-readback-")
    os.environ["SKY_RUNTIME_DIR"] = os.environ["HOME"] = scratch
    import sky.clouds  # after the environment: the catalog folder is fixed on import

    # What the calls import on first use (pandas, each cloud's catalog module; their catalogs are read
    # lazily, in the children), imported here once rather than again in each child.
    for module in ("pandas", *(f"sky.catalog.{cloud}_catalog" for cloud in CLOUD_CLASSES)):
        importlib.import_module(module)
    # AWS zone names come from an account's mapping file; SkyPilot looks for the account first by running
    # `aws configure list` (a Python CLI, ~0.5 s CPU, in every child) when the machine has one. No account is
    # configured here either way, so it is told there is no CLI and goes on, as without one, to the mapping
    # files in the catalog folder.
    sky.clouds.AWS._aws_configure_list = classmethod(lambda cls: None)  # type: ignore[method-assign]
    catalog_dir = os.path.join(scratch, ".sky", "catalogs", "v8")
    json.dump([answer_in_child(catalogs, catalog_dir, calls) for catalogs, calls in jobs], sys.stdout)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if not arguments or len(arguments) % 2:
        raise SystemExit(__doc__)
    main(list(zip(arguments[::2], arguments[1::2], strict=True)))
