"""The makers' own 3-D Secure browser library, npm `@trustpayments/3ds-sdk-js` 1.2.73, for the browser
tests: installed by npm, at test time, into `.tools/npm/` (ignored by git; `make js-deps` does the
same beforehand). Its package's install scripts are not run: they only fetch build tools.

Where npm or its registry cannot be reached the tests that need it skip, saying why; in CI they fail,
so a green CI always means the library drove the sandbox's pages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = "@trustpayments/3ds-sdk-js"
VERSION = "1.2.73"
ROOT = Path(__file__).resolve().parents[2]
INSTALL_DIR = ROOT / ".tools" / "npm"
NPM_TIMEOUT = 600  # seconds: an upper bound for the install, not a wait
NPM_ARGS = ("install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-save", f"{PACKAGE}@{VERSION}")


def _installed() -> Path | None:
    package = INSTALL_DIR / "node_modules" / PACKAGE
    try:
        version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        return None
    script = package / "dist" / "index.js"
    return script if version == VERSION and script.exists() else None


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{PACKAGE} {VERSION} is needed in CI: {why}")
    pytest.skip(
        f"{PACKAGE} {VERSION} could not be installed ({why}); run `make js-deps` where npm can reach its registry"
    )


def sdk_script() -> Path:
    """The library's browser bundle (UMD: `window.ThreeDSecure`), installed when missing."""
    found = _installed()
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is not installed")
    INSTALL_DIR.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, *NPM_ARGS],
            cwd=INSTALL_DIR,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        _unavailable(f"npm install took more than {NPM_TIMEOUT} s")
    if done.returncode != 0:
        _unavailable(f"npm install failed: {done.stderr.strip()[-300:]}")
    found = _installed()
    if found is None:
        _unavailable("npm install left no dist/index.js")
    return found
