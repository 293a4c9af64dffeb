"""A serving process gives the large blocks it frees back to the system (api.process_memory): glibc's
threshold for mapping a block on its own no longer rises to the largest block freed."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

from api.process_memory import give_large_blocks_back

ROOT = Path(__file__).resolve().parents[2]
# Frees an 8 MB block (glibc would then serve blocks up to 8 MB from its heap), makes 64 blocks of
# 1 MB and one small block after them, frees the 1 MB blocks but the last: what stays, in MB.
KEPT = """
import sys
from pathlib import Path
from api.process_memory import give_large_blocks_back
def anon():
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("RssAnon"))
    return int(line.split()[1]) // 1024
if sys.argv[1] == "set":
    assert give_large_blocks_back()
big = bytearray(8 << 20)
del big
before = anon()
blocks = [bytearray(1 << 20) for _ in range(64)]
small = bytearray(1 << 10)
del blocks[:-1]
print(anon() - before)
"""


def kept_mb(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", KEPT, mode], cwd=ROOT, capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_freed_large_blocks_go_back_to_the_system() -> None:
    if platform.libc_ver()[0] != "glibc":
        assert give_large_blocks_back() is False
        return
    assert kept_mb("plain") >= 48  # the gaps stay in the heap
    assert kept_mb("set") <= 8
