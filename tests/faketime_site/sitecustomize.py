"""Two mends that let Python run under libfaketime 0.9.10 (Debian 12's `faketime`), as the
date-proof run does (README "Development", .ci/run). Outside faketime nothing changes.
tests/conftest.py applies them to the test process and, through PYTHONPATH, to every Python process
a test starts (Python imports `sitecustomize` at start-up).

1. time.sleep. With the monotonic clock left real (`--exclude-monotonic`), libfaketime shifts the
   absolute deadline of clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) by the wall-clock offset,
   and that call is how Python >= 3.11 sleeps: every sleep fails with EINVAL (wolfcw/libfaketime#426),
   the one inside subprocess's wait(timeout) included. Then time.sleep waits in select() instead,
   whose relative timeout libfaketime leaves alone.

2. The environment. libfaketime's pthread_cond_timedwait calls getenv() on every timed wait, and
   every Python thread waiting for the GIL makes one, as do DuckDB's idle workers. Meanwhile the
   thread holding the GIL may add a variable (monkeypatch.setenv), and glibc's setenv then moves
   the environ array and frees the old one under the reader: the process segfaults now and then.
   So os.putenv/os.unsetenv write to an array of our own that never moves (a slot is stored in
   one aligned write, and no string is ever freed), which a concurrent getenv reads safely and
   child processes inherit as usual.
"""

from __future__ import annotations

import ctypes
import os
import select
import threading
import time


def _select_sleep(seconds: float) -> None:
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    select.select([], [], [], seconds)


def _sleep_is_broken() -> bool:
    try:
        time.sleep(0)
    except OSError:
        return True
    return False


class StableEnviron:
    """The C environment in an array that is never reallocated: `putenv` and `unsetenv` with
    os.putenv's and os.unsetenv's signatures."""

    def __init__(self, room: int = 4096) -> None:
        self._pointer = ctypes.c_void_p.in_dll(ctypes.CDLL(None), "environ")
        current = ctypes.cast(self._pointer.value, ctypes.POINTER(ctypes.c_void_p))
        self._keys: list[bytes] = []  # the name in each used slot, in slot order
        while current[len(self._keys)]:
            self._keys.append(ctypes.string_at(current[len(self._keys)]).split(b"=", 1)[0])
        self._slot = {key: index for index, key in enumerate(self._keys)}
        self._slots = (ctypes.c_void_p * (len(self._keys) + room))()  # zeroed: a free slot ends the list
        ctypes.memmove(self._slots, current, len(self._keys) * ctypes.sizeof(ctypes.c_void_p))
        self._kept: list[ctypes.Array[ctypes.c_char]] = []  # a reader may still hold any of them
        self._lock = threading.Lock()
        self._pointer.value = ctypes.addressof(self._slots)

    def putenv(self, key: str | bytes, value: str | bytes) -> None:
        key, value = os.fsencode(key), os.fsencode(value)
        if not key or b"=" in key or b"\0" in key + value:
            raise ValueError("illegal environment variable name or value")
        entry = ctypes.create_string_buffer(key + b"=" + value)
        with self._lock:
            self._kept.append(entry)
            index = self._slot.get(key)
            if index is None:
                if len(self._keys) + 1 >= len(self._slots):
                    raise OSError("no room left in the environment")
                index = self._slot[key] = len(self._keys)
                self._keys.append(key)
            self._slots[index] = ctypes.addressof(entry)

    def unsetenv(self, key: str | bytes) -> None:
        key = os.fsencode(key)
        if not key or b"=" in key:
            raise ValueError("illegal environment variable name")
        with self._lock:
            index = self._slot.pop(key, None)
            if index is None:
                return
            last = len(self._keys) - 1
            moved = self._keys.pop()
            if index != last:  # the last entry fills the hole, then its old slot ends the list
                self._slots[index] = self._slots[last]
                self._keys[index] = moved
                self._slot[moved] = index
            self._slots[last] = None


UNDER_FAKETIME = "libfaketime" in os.environ.get("LD_PRELOAD", "")
if _sleep_is_broken():
    time.sleep = _select_sleep
if UNDER_FAKETIME:
    _environ = StableEnviron()
    os.putenv, os.unsetenv = _environ.putenv, _environ.unsetenv
