"""gpuprice tests (a regular package, so a third-party top-level `tests` package cannot shadow it)."""
