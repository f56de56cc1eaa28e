"""Mermaid for the `make docs` site: the `mermaid` npm package, fetched once at build time.

The site's pages draw their Mermaid diagrams with the copy of Mermaid they are served with, so a
reader's browser loads nothing from a CDN. The copy is Mermaid's classic bundle (one script that
defines `window.mermaid`), not its ES modules: a page opened from disk (`file://`) may run a classic
script beside it, while Chromium refuses to import a module from a `file://` URL. The package comes from the npm registry through npm
(`npm pack`), is checked against the integrity pinned here, and is kept in a cache folder so that
later builds work offline.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

VERSION = "11.10.0"  # the version nbconvert's lab template was written for
INTEGRITY = "sha512-oQsFzPBy9xlpnGxUqLbVY8pvknLlsNIJ0NWwi8SUJjhbP1IT0E0o1lfhU4iYV3ubpy+xkzkaOyDUQMn06vQElQ=="
ENTRY = "mermaid.min.js"  # the classic bundle: everything in one script, no imports


class MermaidUnavailable(RuntimeError):
    """The mermaid package could not be fetched or did not match its pinned integrity."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gwkit" / "npm"


def integrity_of(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def package_tarball(cache: Path | None = None) -> Path:
    """The package's tarball, from the cache or fetched with `npm pack`, its integrity checked."""
    cache = cache or cache_dir()
    tarball = cache / f"mermaid-{VERSION}.tgz"
    if not tarball.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as scratch:
            try:
                subprocess.run(
                    ["npm", "pack", f"mermaid@{VERSION}", "--pack-destination", scratch, "--silent"],
                    check=True,
                    capture_output=True,
                    timeout=300,
                )
            except (OSError, subprocess.SubprocessError) as error:
                raise MermaidUnavailable(f"npm pack mermaid@{VERSION} failed: {error}") from error
            (Path(scratch) / tarball.name).replace(tarball)
    found = integrity_of(tarball.read_bytes())
    if found != INTEGRITY:
        tarball.unlink()
        raise MermaidUnavailable(f"mermaid-{VERSION}.tgz has integrity {found}, expected {INTEGRITY}")
    return tarball


def install(target: Path, cache: Path | None = None) -> str:
    """Mermaid's classic bundle copied into `target`; its file name."""
    wanted = "package/dist/" + ENTRY
    with tarfile.open(package_tarball(cache)) as archive, tempfile.TemporaryDirectory() as scratch:
        members = [m for m in archive.getmembers() if m.isfile() and m.name == wanted]
        archive.extractall(scratch, members=members, filter="data")
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(scratch) / wanted, target / ENTRY)
    return ENTRY
