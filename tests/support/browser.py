"""Shared pieces of the browser tests: Debian's Chromium at /usr/bin/chromium, driven by
Playwright, never a downloaded browser.

Without Chromium the browser tests are skipped on a developer's machine and fail in CI (where
`.ci/run` installs it), so a green CI always means the browser tests ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium tries to reach Google's hosts at every start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def require_chromium() -> None:
    if CHROMIUM.exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing in CI: install Debian's chromium package")
    pytest.skip(f"{CHROMIUM} is not installed (the browser tests drive the system Chromium; CI installs it)")


def launch(playwright):
    """The system Chromium, headless, with the network quiet."""
    require_chromium()
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
