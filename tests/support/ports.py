"""Free loopback ports for servers a test starts in another process, which binds them later."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def free_ports(count: int) -> list[int]:
    """`count` free loopback ports below the kernel's ephemeral range. The process binds them a while
    after they are chosen (SeaweedFS: seconds); a port taken from the ephemeral range (bind to port 0) can meanwhile
    become the local end of any outgoing connection on the machine (CI once lost the S3 port that way:
    "bind: address already in use"), while ports below the range are only ever taken explicitly."""
    low = _ephemeral_low()
    rng = random.Random()
    chosen: list[int] = []
    while len(chosen) < count:
        port = rng.randrange(max(1024, low - 20_000), low)
        if port in chosen:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # in use
        chosen.append(port)
    return chosen


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default
