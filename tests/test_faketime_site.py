"""The mends for libfaketime (tests/faketime_site) behave like what they replace: the year-ahead run
must test gpuprice, not a different environment or a sleep that returns early."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faketime_site import sitecustomize as faketime_site

SITE = Path(faketime_site.__file__).parent

# Run in a child: StableEnviron takes over the process's C environment for good.
CHILD = """
import ctypes, os, random, subprocess, sys
from sitecustomize import StableEnviron

environ = StableEnviron(room=64)
os.putenv, os.unsetenv = environ.putenv, environ.unsetenv
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
random.seed(7)
names = [f"GPUPRICE_MEND_{i}" for i in range(20)]
for step in range(400):
    name = random.choice(names)
    if random.random() < 0.6:
        os.environ[name] = f"value {step} é"
    else:
        os.environ.pop(name, None)
    for other in names:
        seen = libc.getenv(other.encode())
        assert seen == (os.environb.get(other.encode())), (step, other, seen)
child = subprocess.run([sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
                       capture_output=True, text=True, check=True, env=None)
import json
assert json.loads(child.stdout) == dict(os.environ)
assert libc.getenv(b"PATH") == os.environb[b"PATH"]
try:
    os.environ["A=B"] = "x"
except ValueError:
    print("ok")
"""


def test_the_stable_environment_is_what_c_code_and_children_see() -> None:
    env = {"PYTHONPATH": str(SITE), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_select_sleep_sleeps_as_long_as_asked() -> None:
    start = time.monotonic()
    faketime_site._select_sleep(0.05)
    assert time.monotonic() - start >= 0.05
    with pytest.raises(ValueError, match="non-negative"):
        faketime_site._select_sleep(-1)
