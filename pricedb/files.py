"""Files gpuprice writes beside its data: replaced atomically, readable like any file the user
makes, and never left behind.

A file is written through a temp file in the same folder, then renamed into place, so a reader
sees the old file or the new one. Temp files and folders carry the writing process's id in their
names (`.offers.csv.<pid>.<random>.tmp`, `gpuprice-<pid>-<provider>-<random>`), so the next
start can tell an abandoned one (its process is gone) from one a running process is still
writing, and removes only the former."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

# Temp names from before they carried a pid: removed when older than this (no write takes an hour).
LEGACY_AGE_S = 3600.0


def pid_running(pid: int) -> bool:
    """Whether a process with this id exists (one of another user's counts: it may still write)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _current_umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it, and put it straight back
    os.umask(mask)
    return mask


def public_mode() -> int:
    """The mode `open()` gives a new file: 0666 less the umask (mkstemp's 0600 would hide sheets
    from the other users a server's exports are for)."""
    return 0o666 & ~_current_umask()


def temp_file_prefix(path: Path) -> str:
    return f".{path.name}.{os.getpid()}."


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Write `path` through a temp file in its folder and rename it into place; `write(temp)`
    produces the content. The file gets the umask's usual mode, like any file the user makes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=temp_file_prefix(path), suffix=".tmp")
    os.close(fd)
    try:
        write(Path(temp))
        os.chmod(temp, public_mode())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda temp: temp.write_text(text, encoding="utf-8"))


# `.offers.csv.<pid>.<random>.tmp`; before pids: `.offers.csv.<random>.tmp` (tempfile's 8 characters).
_TEMP_FILE = re.compile(r"^\..+\.(?P<pid>\d+)\.[a-z0-9_]{8}\.tmp$")
_LEGACY_TEMP_FILE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")


def workdir_prefix(provider: str) -> str:
    """Prefix of a run's scratch folder in the system temp folder (downloads of big price files)."""
    return f"gpuprice-{os.getpid()}-{provider}-"


_WORKDIR = re.compile(r"^gpuprice-(?P<pid>\d+)-[a-z0-9_]+-[a-z0-9_]{8}$")
_LEGACY_WORKDIR = re.compile(r"^gpuprice-[a-z][a-z0-9_]*-[a-z0-9_]{8}$")


def _abandoned(entry: Path, name: re.Pattern[str], legacy: re.Pattern[str], now: float) -> bool:
    match = name.match(entry.name)
    if match is not None:
        return int(match["pid"]) != os.getpid() and not pid_running(int(match["pid"]))
    if legacy.match(entry.name) is None:
        return False
    try:
        return now - entry.lstat().st_mtime > LEGACY_AGE_S
    except OSError:
        return False


def _remove(entries: Iterable[Path]) -> list[Path]:
    removed = []
    for entry in entries:
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue  # not ours to force (another user's, a read-only folder): leave it
        removed.append(entry)
    return removed


def sweep_temp_files(folder: Path) -> list[Path]:
    """Remove abandoned temp files of atomic writes under `folder` (an exports folder)."""
    if not folder.is_dir():
        return []
    now = time.time()
    try:
        candidates = [p for p in folder.rglob(".*.tmp") if p.is_file()]
    except OSError:
        return []
    return _remove(p for p in candidates if _abandoned(p, _TEMP_FILE, _LEGACY_TEMP_FILE, now))


def sweep_workdirs(folder: Path | None = None) -> list[Path]:
    """Remove abandoned run scratch folders (`gpuprice-<pid>-…`) from the system temp folder."""
    base = folder or Path(tempfile.gettempdir())
    now = time.time()
    try:
        candidates = [p for p in base.glob("gpuprice-*") if p.is_dir() and not p.is_symlink()]
    except OSError:
        return []
    return _remove(p for p in candidates if _abandoned(p, _WORKDIR, _LEGACY_WORKDIR, now))


def sweep_leftovers(export_folder: Path) -> list[Path]:
    """What crashed gpuprice processes left: temp files in the exports folder, run scratch folders."""
    return [*sweep_temp_files(export_folder), *sweep_workdirs()]
