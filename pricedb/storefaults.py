"""Why the database file cannot be used, in one line that names the file and says what to do.

DuckDB reports an unusable file as `IOException` (cannot open, not a DuckDB file, short read), and
a write that the disk refused as a `TransactionException` ("Failed to commit: Could not write file
"….wal": No space left on device"); an OS call (creating the folder) raises `OSError`. All become
one `StoreUnavailable` here, so callers catch one error and print one line; the store's other
errors (a bug in a statement) stay as they are."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import duckdb


class StoreUnavailable(RuntimeError):
    """The database file cannot be opened, read or written; `str()` is one line: the file, the
    reason, what to do."""

    def __init__(self, path: Path, reason: str, hint: str) -> None:
        self.path, self.reason, self.hint = path, reason, hint
        super().__init__(f"database {path}: {reason}; {hint}")


class StoreBusy(StoreUnavailable):
    """The database file is held by another process (usually a running `gpuprice serve`)."""


# DuckDB quotes the file it failed on, then gives the OS's reason: `… file "/x/y.wal": Permission denied`.
_FILE_AND_REASON = re.compile(r'"(?P<file>[^"]+)"\s*:\s*(?P<reason>[^.\n]+)')
_CORRUPT = ("not a valid DuckDB database file", "Could not read enough bytes", "Corrupt database file", "checksum")


def _os_reason(code: int | None) -> str | None:
    return os.strerror(code) if code else None


def _writable_hint(file: Path) -> str:
    if file.is_dir():
        folder = file
    elif file.exists():
        return f"make {file} writable (chmod u+w), or set GPUPRICE_DB to a file gpuprice may write"
    else:
        folder = file.parent
    return f"make the folder {folder} writable, or set GPUPRICE_DB to a file in a writable folder"


def explain(db: Path, exc: BaseException) -> StoreUnavailable | None:
    """The `StoreUnavailable` for an error met opening or writing `db`; None for other errors."""
    if isinstance(exc, StoreUnavailable):
        return exc
    text = str(exc)
    if isinstance(exc, OSError):
        file, reason, code = Path(exc.filename or db), exc.strerror or text, exc.errno
    elif isinstance(exc, duckdb.IOException | duckdb.FatalException) or (
        isinstance(exc, duckdb.TransactionException) and "Failed to commit" in text
    ):
        match = _FILE_AND_REASON.search(text)
        file = Path(match["file"]) if match else db
        reason = match["reason"].strip() if match else text.split(":", 1)[-1].strip()
        code = next((c for c, name in _ERRNO_WORDS.items() if name in reason), None)
    else:
        return None
    if isinstance(exc, duckdb.IOException) and "Could not set lock" in text:
        holder = re.search(r"PID (\d+)", text)
        who = f" (pid {holder[1]})" if holder else ""
        return StoreBusy(
            db,
            f"in use by another gpuprice process{who}",
            "is `gpuprice serve` running? query commands ask it; stop it to collect or write by hand",
        )
    if isinstance(exc, duckdb.FatalException):
        return StoreUnavailable(db, f"the database stopped after an earlier error ({reason})", "restart gpuprice")
    if any(word in text for word in _CORRUPT):
        return StoreUnavailable(
            db,
            f"not a readable DuckDB database ({reason})",
            f"move it aside (mv {db} {db}.broken) and run `gpuprice collect` to start a new one, or restore a backup",
        )
    if code in (errno.ENOSPC, errno.EDQUOT):
        return StoreUnavailable(
            db, f"no space left on the disk holding {file}", "free some space, or set GPUPRICE_DB to another disk"
        )
    if code == errno.EFBIG:
        return StoreUnavailable(
            db, f"{file} reached the size limit for files (ulimit -f)", "raise the limit for gpuprice's user"
        )
    if code == errno.EROFS:
        return StoreUnavailable(
            db, f"{file} is on a read-only file system", "set GPUPRICE_DB to a file on a writable disk"
        )
    if code in (errno.EACCES, errno.EPERM):
        return StoreUnavailable(db, f"permission denied on {file}", _writable_hint(file))
    if code == errno.EISDIR:
        return StoreUnavailable(db, "is a folder, not a database file", "set GPUPRICE_DB to a file path")
    detail = _os_reason(code) or reason
    return StoreUnavailable(db, f"cannot be used ({detail})", "check the file and its folder")


# The OS's words DuckDB passes on (strerror texts), by errno.
_KNOWN_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EISDIR)
_ERRNO_WORDS = {code: os.strerror(code) for code in _KNOWN_ERRNOS}
