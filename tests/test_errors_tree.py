"""One exception hierarchy: every exception class gwkit defines is a `GwkitError`, and the tree
drawn in `gwkit/errors.py`'s docstring is the one the classes have (parents and built-in bases)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

import gwkit
import gwkit.errors
from gwkit.errors import GwkitError
from gwkit.interface.errors import GwkitError as RootError

# gwkit.devtools (the docs build, notebook stripping) is the project's tooling, its own layer that
# imports nothing of gwkit: its errors never reach a user of the kit.
TOOLING = "gwkit.devtools"
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def gwkit_modules() -> list[str]:
    return sorted(
        m.name for m in pkgutil.walk_packages(gwkit.__path__, "gwkit.") if m.name != "gwkit.__main__"
    )


def classes_in(owner: object, module: str) -> list[type]:
    """The classes defined in `module`, those nested in its classes included."""
    found = []
    for value in vars(owner).values():
        if inspect.isclass(value) and value.__module__ == module and value not in found:
            found.append(value)
            found += [c for c in classes_in(value, module) if c not in found]
    return found


def exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for name in gwkit_modules():
        if name == TOOLING or name.startswith(TOOLING + "."):
            continue
        module = importlib.import_module(name)
        for cls in classes_in(module, name):
            if issubclass(cls, BaseException) and cls not in found:
                found.append(cls)
    return found


def drawn_tree(docstring: str) -> dict[str, tuple[str, set[str]]]:
    """Each error the docstring draws: its parent in the tree and the built-in bases in brackets."""
    drawn: dict[str, tuple[str, set[str]]] = {}
    parents: list[str] = []
    for line in docstring.splitlines():
        if line.startswith("GwkitError"):
            parents = ["GwkitError"]
            continue
        branch = re.match(r"^((?:│   |    )*)(?:├── |└── )(\w+)(?: \(([\w, ]+)\))?", line)
        if branch is None or not parents:
            continue
        depth = len(branch.group(1)) // 4 + 1
        name, bases = branch.group(2), branch.group(3)
        del parents[depth:]
        drawn[name] = (parents[depth - 1], set(bases.split(", ")) if bases else set())
        parents.append(name)
    return drawn


def tree_of(cls: type) -> tuple[str, set[str]]:
    """`cls`'s parent among gwkit's errors, and its direct bases that are not gwkit's."""
    parent = next(c for c in cls.__mro__[1:] if issubclass(c, GwkitError))
    builtin = {b.__name__ for b in cls.__bases__ if not issubclass(b, GwkitError)}
    return parent.__name__, builtin


def test_every_exception_gwkit_defines_is_a_gwkit_error():
    classes = exception_classes()
    assert len(classes) > 30  # the walk found the package's errors, not an empty list
    assert [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, GwkitError)] == []


def test_the_root_lives_in_the_interface_layer_and_is_re_exported():
    assert GwkitError is RootError is gwkit.GwkitError
    assert GwkitError.__module__ == "gwkit.interface.errors"


def test_the_drawn_trees_are_the_tree_the_classes_have():
    """errors.py's docstring, and docs/architecture.md's section "One exception hierarchy"."""
    public = [c for c in exception_classes() if not c.__name__.startswith("_")]
    actual = {c.__name__: tree_of(c) for c in public if c is not GwkitError}
    assert len({c.__name__ for c in public}) == len(public), (
        "two errors share a name: the tree cannot tell them apart"
    )
    assert drawn_tree(gwkit.errors.__doc__ or "") == actual
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## One exception hierarchy", 1)[1]
    assert drawn_tree(section.split("\n## ", 1)[0]) == actual


@pytest.mark.parametrize(
    ("docstring", "expected"),
    [
        (
            "GwkitError\n├── A (ValueError)  words\n│   └── B  more\n└── C",
            {"A": ("GwkitError", {"ValueError"}), "B": ("A", set()), "C": ("GwkitError", set())},
        ),
        (
            "GwkitError\n└── A\n    ├── B\n    │   └── C\n    └── D",
            {"A": ("GwkitError", set()), "B": ("A", set()), "C": ("B", set()), "D": ("A", set())},
        ),
    ],
)
def test_the_tree_reader_reads_depth_parents_and_bases(docstring, expected):
    assert drawn_tree(docstring) == expected
