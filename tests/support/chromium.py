"""Debian's Chromium for the browser tests, installed by the suite itself when it is missing (the
quick start's test command must work on a fresh machine; Playwright's own browser download needs
the internet, Debian's package comes from the distribution's mirror)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
INSTALL_TIMEOUT_S = 900


def ensure_chromium() -> Path:
    """The browser's path; installs Debian's `chromium` package first when it is missing.
    Raises RuntimeError saying what to do where it cannot (no apt-get, not root and no sudo)."""
    if CHROMIUM.exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None:
        raise RuntimeError(f"{CHROMIUM} is missing and this system has no apt-get: install Chromium there")
    as_root: list[str] = []
    if os.geteuid() != 0:
        sudo = shutil.which("sudo")
        if sudo is None:
            raise RuntimeError(f"{CHROMIUM} is missing: run 'apt-get install chromium' as root")
        as_root = [sudo, "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([*as_root, apt, "update", "-qq"], [*as_root, apt, "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        if done.returncode != 0:
            raise RuntimeError(f"installing Chromium failed: {' '.join(command)}: {done.stderr.strip()[-500:]}")
    if not CHROMIUM.exists():
        raise RuntimeError(f"apt-get installed chromium but {CHROMIUM} is still missing")
    return CHROMIUM
