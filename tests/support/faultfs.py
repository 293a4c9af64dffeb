"""Real disk and permission faults for tests, made as close to the OS as the machine allows.

- `unwritable(path)`: a folder (or file) that no write may touch. Permission bits do not stop
  root, so as root the immutable attribute is set (`chattr +i`, which stops root too); otherwise
  `chmod a-w`. Where neither can be made (root on a file system without attributes) the test
  fails with the reason rather than passing without its fault.
- `on_tiny_disk(folder, kib, steps)`: commands run with `folder` on a small tmpfs, in a private
  mount namespace (`unshare`), so nothing outside them sees the mount; the disk can be filled to
  its last page between commands. Root uses a plain mount namespace; other users a user namespace
  mapped to root (`can_mount()` says whether the kernel allows either).
- `run(argv, file_size_limit=n)`: a command whose files may not grow past n bytes (RLIMIT_FSIZE,
  no privileges needed): the kernel refuses the write (EFBIG) as a full disk does (ENOSPC).
"""

from __future__ import annotations

import functools
import os
import resource
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

IS_ROOT = os.geteuid() == 0


@contextmanager
def unwritable(path: Path) -> Iterator[str]:
    """`path` refuses writes inside the block; yields how ("immutable" or "read-only mode")."""
    if IS_ROOT:
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.fail(f"cannot make {path} unwritable for root here (chattr +i: {made.stderr.strip()})")
        try:
            yield "immutable"
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        return
    mode = path.stat().st_mode
    path.chmod(stat.S_IMODE(mode) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield "read-only mode"
    finally:
        path.chmod(stat.S_IMODE(mode))


FILL = "fill"  # a step of `on_tiny_disk`: a file takes every free page of the disk


@dataclass(frozen=True)
class Ran:
    status: int
    out: str
    err: str


def _namespace() -> list[str]:
    if IS_ROOT:
        return ["unshare", "--mount", "--propagation", "private"]
    return ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]


@functools.cache
def can_mount() -> bool:
    """Whether this machine lets a test mount a private tmpfs (root, or user namespaces allowed)."""
    if shutil.which("unshare") is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        script = f"mount -t tmpfs -o size=16k tmpfs {shlex.quote(folder)}"
        return subprocess.run([*_namespace(), "sh", "-c", script], capture_output=True, timeout=30).returncode == 0


def on_tiny_disk(folder: Path, kib: int, steps: list[list[str] | str], records: Path) -> list[Ran]:
    """Run `steps` in one private mount namespace where `folder` is a fresh `kib`-KiB tmpfs: each
    step a command, or FILL (a file takes every free page of the disk).
    Outputs are kept in `records` (outside the tmpfs, which vanishes with the namespace)."""
    folder.mkdir(parents=True, exist_ok=True)
    records.mkdir(parents=True, exist_ok=True)
    filler = shlex.quote(str(folder / ".filler"))
    lines = ["set -u", f"mount -t tmpfs -o size={kib}k tmpfs {shlex.quote(str(folder))} || exit 99"]
    commands = [step for step in steps if not isinstance(step, str)]
    index = 0
    for step in steps:
        if step == FILL:
            lines.append(f"cat /dev/zero > {filler} 2>/dev/null; true")
        else:
            base = shlex.quote(str(records / str(index)))
            lines.append(f"{shlex.join(step)} > {base}.out 2> {base}.err; echo $? > {base}.rc")
            index += 1
    done = subprocess.run([*_namespace(), "sh", "-c", "\n".join(lines)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the tmpfs could not be set up: {done.stderr}"
    return [
        Ran(
            int((records / f"{i}.rc").read_text()),
            (records / f"{i}.out").read_text(),
            (records / f"{i}.err").read_text(),
        )
        for i in range(len(commands))
    ]


def run(argv: list[str], file_size_limit: int | None = None) -> Ran:
    """Run `argv`; with `file_size_limit`, under RLIMIT_FSIZE: no file it writes may grow past that
    many bytes (the kernel refuses with EFBIG, as a full disk does with ENOSPC; no privileges needed)."""

    def limit() -> None:
        if file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=limit, timeout=300)
    return Ran(done.returncode, done.stdout, done.stderr)


def gpuprice_argv(*args: str) -> list[str]:
    """The `gpuprice` command as a separate process (its own signals, exit status and mounts)."""
    return [sys.executable, "-m", "api.cli", *args]
