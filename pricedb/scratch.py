"""One buffer reused by the answers written at once on the event loop (api.history), so their big
temporaries — a series' records, its points' rows — are not fresh mappings each time.

The serving process fixes glibc's mapping threshold at 128 KB (api.process_memory), so every array
over it is mapped anew, its pages faulted in one by one, and unmapped when freed: one offer's six
months (180 KB of records, 685 KB of rows) cost ~340 page faults, ~1.2-1.5 ms of system CPU per
answer on the 2-core host, about as much as writing the answer. A `Scratch` keeps one buffer of at
most `limit` bytes, mapped and faulted in once; an answer takes it whole (`held`: another thread
meanwhile gets None and allocates as before), carves its arrays out of it (`Room.take`), and gives it
back once its bytes are joined or compressed into the body sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

ALIGN = 64  # each array taken starts on a cache line (and on any field's alignment)


class Room:
    """The buffer while one answer holds it: arrays taken one after another, never given back singly."""

    def __init__(self, buffer: np.ndarray) -> None:
        self._buffer = buffer
        self._address = buffer.ctypes.data
        self._used = 0

    def take(self, nbytes: int) -> np.ndarray | None:
        """`nbytes` of the buffer as a uint8 array (not cleared), or None when they do not fit."""
        start = -(-(self._address + self._used) // ALIGN) * ALIGN - self._address
        if start + nbytes > len(self._buffer):
            return None
        self._used = start + nbytes
        return self._buffer[start : start + nbytes]


class Scratch:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._buffer: np.ndarray | None = None  # made on the first answer: a process that never asks holds none

    @contextmanager
    def held(self) -> Iterator[Room | None]:
        """The buffer for one answer, or None while another thread holds it."""
        if not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            if self._buffer is None:
                self._buffer = np.empty(self.limit, dtype=np.uint8)
            yield Room(self._buffer)
        finally:
            self._lock.release()
