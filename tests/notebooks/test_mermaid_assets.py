"""The docs site's copy of Mermaid: taken from the cache only when it matches the pinned integrity."""

from __future__ import annotations

import io
import tarfile

import pytest

from gwkit.devtools import mermaid_assets


def tarball(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_cached_package_that_does_not_match_its_integrity_is_refused_and_removed(tmp_path):
    cached = tmp_path / f"mermaid-{mermaid_assets.VERSION}.tgz"
    cached.write_bytes(tarball({"package/dist/mermaid.esm.min.mjs": b"export default {}"}))

    with pytest.raises(mermaid_assets.MermaidUnavailable, match="integrity"):
        mermaid_assets.install(tmp_path / "site", cache=tmp_path)
    assert not cached.exists() and not (tmp_path / "site").exists()


def test_integrity_is_npm_s_sha512_in_base64():
    assert mermaid_assets.integrity_of(b"") == (
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg=="
    )
