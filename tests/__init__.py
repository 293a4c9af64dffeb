"""gpuprice tests (a regular package, so a third-party top-level `tests` package cannot shadow it)."""

import os
import sys

# The suite writes bytecode even where the environment says not to (PYTHONDONTWRITEBYTECODE): without
# it every xdist worker and every process a test starts (`gpuprice serve`, the CLI, replicas) compiles
# the project from source, and pytest rewrites every test module again in each worker. This package
# is imported before any conftest or project module (pytest imports `tests.conftest` through it), and
# the workers and subprocesses are started later, from this environment. __pycache__ is git-ignored.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
