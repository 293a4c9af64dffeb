"""Reading a request's Accept-Encoding: which of the codings gpuprice writes the client takes best
(RFC 9110 §12.5.3), for the pages (api.web.html) and the big JSON answers (api.json_encoding)."""

from __future__ import annotations

from collections.abc import Iterable


def weights(accept_encoding: str) -> dict[str, float]:
    """Each coding the header names, with its q-value (a bad q counts as 0)."""
    found: dict[str, float] = {}
    for part in accept_encoding.split(","):
        name, *params = (item.strip() for item in part.split(";"))
        if not name:
            continue
        weight = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
        found[name.lower()] = weight
    return found


def preferred(accept_encoding: str, offered: Iterable[str]) -> str | None:
    """The coding among `offered` the client weighs highest (the first offered when equal; `*`
    stands for any not named), None when it takes none of them."""
    weighed = weights(accept_encoding)
    best, best_weight = None, 0.0
    for name in offered:
        weight = weighed.get(name, weighed.get("*", 0.0))
        if weight > best_weight:
            best, best_weight = name, weight
    return best
