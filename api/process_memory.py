"""The serving process's allocator set to give freed large blocks back to the system.

glibc serves a block of 128 KB or more from its own mapping, returned to the system when freed, but
raises that threshold to the size of each such block freed (up to 32 MB): after a 1 MB answer is let
go, the next ones come from the heap, where the gaps they leave when freed stay in the process. A
server lets large answers go all the time (the answer cache keeps the newest, a digest is 1.3 MB at
50,000 offers), so the threshold is fixed at its default: at 50,000 offers and 10M observations the
mixed load then left 18 MB less in the process (peak 13 MB less). Elsewhere than glibc: nothing."""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h); setting it also stops the threshold moving
LARGE_BLOCK = 128 * 1024  # glibc's own default threshold


def give_large_blocks_back() -> bool:
    """Fix glibc's mapping threshold at LARGE_BLOCK; False where there is no glibc `mallopt`."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK))
