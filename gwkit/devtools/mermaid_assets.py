"""Mermaid for the `make docs` site: the `mermaid` npm package, fetched once at build time.

The site's pages draw their Mermaid diagrams with the copy of Mermaid they are served with, so a
reader's browser loads nothing from a CDN. The package comes from the npm registry through npm
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
ENTRY = "mermaid.esm.min.mjs"  # the module the page imports; it imports its chunks beside it
CHUNKS = "chunks/mermaid.esm.min"


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
    """Mermaid's ES module and its chunks copied into `target`; the entry module's file name."""
    prefix = "package/dist/"
    wanted = (prefix + ENTRY, prefix + CHUNKS + "/")
    with tarfile.open(package_tarball(cache)) as archive, tempfile.TemporaryDirectory() as scratch:
        members = [
            m
            for m in archive.getmembers()
            if m.isfile() and m.name.startswith(wanted) and not m.name.endswith(".map")
        ]
        archive.extractall(scratch, members=members, filter="data")
        dist = Path(scratch) / prefix
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dist / ENTRY, target / ENTRY)
        shutil.copytree(dist / CHUNKS, target / CHUNKS, dirs_exist_ok=True)
    return ENTRY
