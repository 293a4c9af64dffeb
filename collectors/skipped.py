"""What a collector read but did not collect, counted, for the run's notes (`Fetched.notes`).

A row the card table cannot name (`unknown GPU, not collected: RTX 4090D (24 GB)`), a row without a
price (`no price, not collected: …`): each reason once, with how many source rows gave it, so the
unknown names can be added to the card table and nothing is dropped silently."""

from __future__ import annotations

from collections import Counter

UNKNOWN_GPU = "unknown GPU, not collected"
NO_PRICE = "no price (0 or missing), not collected"


def counted_notes(skipped: Counter[str]) -> list[str]:
    """`{"unknown GPU, not collected: X": 4}` → `["unknown GPU, not collected: X (4 items)"]`, sorted."""
    return [f"{why} ({n} item{'s' if n > 1 else ''})" for why, n in sorted(skipped.items())]
