"""docs/architecture.md's module table lists every module of gwkit/ as it stands, and nothing that is
not there; the README's Layout names every core module and package. Adding a module: one row in the
architecture table (`| `path/to/module.py` | its one job |`); a core module or package, its name in
the README's Layout too."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = re.compile(r"`([\w/]+\.py)`")


def modules_of_the_tree() -> set[str]:
    """Every module under gwkit/, by its path there; of the packages' `__init__.py`, the root's alone
    (a package's may be listed, when it holds more than its re-exports)."""
    return {
        str(path.relative_to(ROOT / "gwkit"))
        for path in (ROOT / "gwkit").rglob("*.py")
        if (path.name != "__init__.py" or path.parent == ROOT / "gwkit") and "__pycache__" not in path.parts
    }


def section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n") + len(heading) + 1
    following = re.compile(rf"^#{{1,{len(level)}}} ", re.MULTILINE).search(text, start)
    return text[start : following.start() if following else len(text)]


def listed(text: str) -> set[str]:
    """The module paths named in `text`; a bare name after a path in the same cell or line is in its folder
    (`sandbox/gateway/pgstore.py`, `pgdialect.py`)."""
    names: set[str] = set()
    for line in text.splitlines():
        folder = ""
        for name in NAME.findall(line.split("|")[1] if line.startswith("|") else line):
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/"
                names.add(name)
            else:
                names.add(folder + name)
    return names


def test_the_architecture_module_table_lists_every_module_and_only_those():
    table = listed(section((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"), "## Modules"))
    tree = modules_of_the_tree()
    assert sorted(tree - table) == [], "modules missing from docs/architecture.md's table"
    packages = {str(path.relative_to(ROOT / "gwkit")) for path in (ROOT / "gwkit").rglob("__init__.py")}
    assert sorted(table - tree - packages) == [], "modules in docs/architecture.md's table that do not exist"


def gwkit_lines(layout: str) -> str:
    """The Layout's entries for gwkit/ (a line starting `gwkit/`, and the indented lines after it)."""
    kept, inside = [], False
    for line in layout.splitlines():
        if line and not line.startswith(" "):
            inside = line.startswith("gwkit/")
        if inside:
            kept.append(line)
    return "\n".join(kept)


def test_the_readme_layout_names_every_core_module_and_package():
    """The Layout is a summary: each module of gwkit/ itself by name, each package by its folder."""
    layout = gwkit_lines(section((ROOT / "README.md").read_text(encoding="utf-8"), "## Layout"))
    words = set(re.findall(r"[\w]+/|[\w]+", layout))
    core = {path.stem for path in (ROOT / "gwkit").glob("*.py")} - {"__init__", "__main__"}
    packages = {path.name + "/" for path in (ROOT / "gwkit").iterdir() if (path / "__init__.py").exists()}
    assert sorted(core - words) == [], "core modules missing from the README's Layout"
    assert sorted(packages - words) == [], "packages missing from the README's Layout"
    named = set(re.findall(r"\b(\w+)\.py\b", layout))
    assert sorted(named - core - {"__init__", "__main__", "http"}) == [], (
        "the Layout names modules that do not exist"
    )
