"""The layers of gwkit, checked from the source: no import cycle, no import against the layer order,
no hidden (function-level) imports outside the composition roots.

Every import is read with `ast`, at module level and inside functions alike (a `TYPE_CHECKING`
import counts too: a cycle in the types is a cycle in the design). The layers, lowest first, are
described in docs/architecture.md:

    interface   the interface as data                  imports nothing else of gwkit
    sandbox     the server                             interface
    core        client, responses, journal, flows      interface
    report      frames, charts, export                 interface, core
    widgets     ipywidgets views                       interface, core, report
    proxy       the validating proxy (a server)        interface, sandbox, core, report, widgets
    checklist   the shop under test, on the proxy      interface, sandbox, core, report, widgets, proxy
    roots       gwkit/__init__, cli, connect, ...      anything
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gwkit"
TESTS = ROOT / "tests"

ROOTS = {"gwkit", "gwkit.cli", "gwkit.connect", "gwkit.pytest_plugin", "gwkit.__main__"}
CORE = {
    "gwkit.changes",
    "gwkit.errors",
    "gwkit.log",
    "gwkit.envelope",
    "gwkit.response",
    "gwkit.exchange",
    "gwkit.client",
    "gwkit.sending",
    "gwkit.pooling",
    "gwkit.journal",
    "gwkit.subscription",
    "gwkit.cardstore",
    "gwkit.threeds",
    "gwkit.reconcile",
    "gwkit.cassette",
    "gwkit.codegen",
    "gwkit.querying",
    "gwkit.shop",
    "gwkit.protocols",
    "gwkit.config",
    "gwkit.notifications",
}
ALLOWED = {
    "interface": {"interface"},
    "sandbox": {"interface", "sandbox"},
    "core": {"interface", "core"},
    "report": {"interface", "core", "report"},
    "widgets": {"interface", "core", "report", "widgets"},
    "proxy": {"interface", "sandbox", "core", "report", "widgets", "proxy"},
    "checklist": {"interface", "sandbox", "core", "report", "widgets", "proxy", "checklist"},
    "devtools": {"devtools"},
    "roots": {"interface", "sandbox", "core", "report", "widgets", "proxy", "checklist", "roots", "devtools"},
}
MAX_FUNCTION_LEVEL_IMPORTS = 4  # cli, connect (2), pytest_plugin's gwkit_checklist (the proxy brings pandas)


def layer_of(module: str) -> str:
    if module in ROOTS:
        return "roots"
    for prefix, layer in (
        ("gwkit.interface", "interface"),
        ("gwkit.sandbox", "sandbox"),
        ("gwkit.report", "report"),
        ("gwkit.widgets", "widgets"),
        ("gwkit.proxy", "proxy"),
        ("gwkit.checklist", "checklist"),
        ("gwkit.devtools", "devtools"),
    ):
        if module == prefix or module.startswith(prefix + "."):
            return layer
    if module in CORE or any(module.startswith(c + ".") for c in CORE):
        return "core"
    raise AssertionError(
        f"{module} belongs to no layer: add it to tests/test_architecture.py and docs/architecture.md"
    )


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported gwkit module
    line: int
    function_level: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(source: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = source.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(name: str, modules: dict[str, Path]) -> str | None:
    """The gwkit module `name` stands for (a module, or the package holding it)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(source: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(source, path.name == "__init__.py", child)
                # `from pkg import mod` imports the module pkg.mod when there is one
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in child.names]
            else:
                visit(child, nested)
                continue
            for name in names:
                target = _targets(name, modules) if name.split(".")[0] == "gwkit" else None
                if target and target != source:
                    found.append(Import(source, target, child.lineno, in_function))

    visit(tree, False)
    return found


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    modules = all_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_every_module_has_a_layer() -> None:
    for name in all_modules():
        layer_of(name)


def test_no_import_cycles(graph: list[Import]) -> None:
    edges: dict[str, set[str]] = {}
    for imp in graph:
        # a package's __init__ importing its own modules is how packages re-export, not a cycle
        if imp.target.startswith(imp.source + "."):
            continue
        edges.setdefault(imp.source, set()).add(imp.target)
    assert _cycles(edges) == []


def test_imports_point_down_the_layers(graph: list[Import]) -> None:
    upward = [
        f"{i.source}:{i.line} imports {i.target} ({layer_of(i.source)} -> {layer_of(i.target)})"
        for i in graph
        if layer_of(i.target) not in ALLOWED[layer_of(i.source)]
    ]
    assert upward == []


def test_sandbox_http_is_a_leaf_and_the_gateway_knows_no_http(graph: list[Import]) -> None:
    wrong = [
        f"{i.source}:{i.line} imports {i.target}"
        for i in graph
        if (i.source == "gwkit.sandbox.http" and i.target.startswith("gwkit.sandbox"))
        or (
            i.source.startswith("gwkit.sandbox.gateway")
            and (i.target.startswith("gwkit.sandbox.web") or i.target == "gwkit.sandbox.http")
        )
    ]
    assert wrong == []


def test_function_level_imports_only_in_composition_roots(graph: list[Import]) -> None:
    hidden = [i for i in graph if i.function_level]
    outside = [f"{i.source}:{i.line} imports {i.target}" for i in hidden if layer_of(i.source) != "roots"]
    assert outside == []
    statements = sorted({f"{i.source}:{i.line}" for i in hidden})  # one import statement may name several
    assert len(statements) <= MAX_FUNCTION_LEVEL_IMPORTS, statements


def test_no_test_module_imports_another() -> None:
    offenders = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else (
                    [node.module or ""] + [a.name for a in node.names]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
            )
            if any(n.split(".")[-1].startswith("test_") or n.endswith("conftest") for n in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_checker_sees_cycles_and_upward_imports() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert "report" not in ALLOWED[layer_of("gwkit.client")]
    assert layer_of("gwkit.widgets.form") == "widgets"
    with pytest.raises(AssertionError):
        layer_of("gwkit.somewhere_new")
