"""Strip outputs, execution counts and saved widget state from notebooks, in place.

    python -m gwkit.devtools.strip_notebooks notebooks/*.ipynb          # strip
    python -m gwkit.devtools.strip_notebooks --check notebooks/*.ipynb  # exit 1 if any has outputs

Notebooks are committed without outputs: diffs stay readable and no run's data (references,
timings, masked card numbers) ends up in git.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

VOLATILE_CELL_METADATA = ("execution", "collapsed", "scrolled", "ExecuteTime")
VOLATILE_NOTEBOOK_METADATA = ("widgets",)


def strip(notebook: dict[str, Any]) -> dict[str, Any]:
    """The notebook without outputs, execution counts and volatile metadata (a new dict)."""
    stripped = json.loads(json.dumps(notebook))
    for cell in stripped.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        metadata = cell.get("metadata", {})
        for key in VOLATILE_CELL_METADATA:
            metadata.pop(key, None)
    for key in VOLATILE_NOTEBOOK_METADATA:
        stripped.get("metadata", {}).pop(key, None)
    return stripped


def is_stripped(notebook: dict[str, Any]) -> bool:
    return strip(notebook) == notebook


def dumps(notebook: dict[str, Any]) -> str:
    """The way Jupyter writes notebooks: one-space indent, unicode kept, final newline."""
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [Path(a) for a in args if a != "--check"]
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    dirty = []
    for path in paths:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        stripped = strip(notebook)
        if stripped == notebook:
            continue
        dirty.append(path)
        if not check:
            path.write_text(dumps(stripped), encoding="utf-8")
    for path in dirty:
        print(f"{'has outputs' if check else 'stripped'}: {path}")
    return 1 if check and dirty else 0


if __name__ == "__main__":
    raise SystemExit(main())
