"""The README a newcomer reads first: the two set-up commands at the top, then what to open and how
to run a cell, then every notebook in a table that says which need the sandbox. Which notebooks
need it is read from their code (a refusal when there is no sandbox, a connection forced to the
sandbox, or the sandbox used unguarded), and each of them says so on its first screen too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SAYS_IT_NEEDS_THE_SANDBOX = re.compile(r"needs the sandbox", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def first_screen(notebook: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in notebook.cells[:2])


def is_the_sandbox(node: ast.AST) -> bool:
    """`gw.sandbox`, the handle that is None against a real gateway."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "sandbox"
        and isinstance(node.value, ast.Name)
        and node.value.id == "gw"
    )


def mentions_the_sandbox(node: ast.AST) -> bool:
    return any(is_the_sandbox(inner) for inner in ast.walk(node))


def refuses_without_a_sandbox(node: ast.AST) -> bool:
    """`if gw.sandbox is None: raise ...`"""
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and is_the_sandbox(node.test.left)
        and isinstance(node.test.ops[0], ast.Is)
        and any(isinstance(statement, ast.Raise) for statement in node.body)
    )


def forces_the_sandbox(node: ast.AST) -> bool:
    """`gwkit.connect(target="sandbox", ...)`"""
    return isinstance(node, ast.Call) and any(
        keyword.arg == "target"
        and isinstance(keyword.value, ast.Constant)
        and keyword.value.value == "sandbox"
        for keyword in node.keywords
    )


def unguarded_uses(node: ast.AST, guarded: bool = False) -> list[str]:
    """Uses of `gw.sandbox.<something>` outside an `if` (or `... if ... else ...`) that tests the sandbox."""
    if isinstance(node, ast.If | ast.IfExp) and mentions_the_sandbox(node.test):
        guarded = True
    found = (
        [] if guarded or not (isinstance(node, ast.Attribute) and is_the_sandbox(node.value)) else [node.attr]
    )
    for child in ast.iter_child_nodes(node):
        found += unguarded_uses(child, guarded)
    return found


def needs_the_sandbox(code: str) -> bool:
    """Whether code written this way cannot run against a real test site."""
    tree = ast.parse(code)
    return (
        any(refuses_without_a_sandbox(node) or forces_the_sandbox(node) for node in ast.walk(tree))
        or unguarded_uses(tree) != []
    )


def code_of(notebook: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")


def notebook_rows(text: str) -> dict[str, str]:
    """The README's notebook table: each row's text by the notebook it names in its first column."""
    return {
        match.group(1): match.group(0)
        for match in re.finditer(r"^\| `(\d\d_\w+)` \|.*$", text, flags=re.MULTILINE)
    }


@pytest.mark.parametrize(
    "code, needs",
    [
        ('gw = gwkit.connect()\ngw.auth(pan="4111111111111111")', False),
        ("if gw.sandbox is not None:\n    gw.sandbox.advance(by='P1D')", False),
        ("today = gw.sandbox.now().date() if gw.sandbox else date.today()", False),
        ("if gw.sandbox is None:\n    raise RuntimeError('run it against the sandbox')", True),
        ('gw = gwkit.connect(target="sandbox", notebook="06_tokenisation")', True),
        ("faults = gw.sandbox.faults", True),
        ("start(gw.sandbox.sandbox)", True),
    ],
)
def test_the_sandbox_is_found_needed_by_its_guard_or_its_unguarded_use(code, needs):
    assert needs_the_sandbox(code) is needs


def test_the_readme_begins_with_the_two_commands_that_do_all_set_up():
    text = readme()
    assert text.startswith("# gwkit\n\n```sh\n")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines()]
    assert commands == ["make lab", "make test"]


def test_the_readme_tells_a_newcomer_what_to_open_and_how_to_run_a_cell_before_the_table():
    text = readme()
    opened, run, table = (
        text.index("01_quickstart.ipynb"),
        text.index("Shift+Enter"),
        text.index("| Notebook |"),
    )
    assert text.index("make test") < opened < table and run < table
    assert "Restart Kernel and Run All Cells" in text[:table]


def test_the_readme_points_to_the_interface_in_the_repository():
    text = readme()
    assert "(docs/interface.md)" in text
    assert "shared/spec" not in text
    assert (ROOT / "docs" / "interface.md").exists()


def test_the_readme_lists_every_notebook():
    assert sorted(notebook_rows(readme())) == [path.stem for path in NOTEBOOKS]


def test_notebooks_that_need_the_sandbox_say_so_first_and_in_the_readme():
    """Found by the code: each says so on its first screen. Said on a first screen (03's reason, the
    retirement of 3-D Secure version 1, is not in its code): the README's table says it too, and
    says it of no other notebook."""
    rows = notebook_rows(readme())
    say_so = set()
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        says = bool(SAYS_IT_NEEDS_THE_SANDBOX.search(first_screen(notebook)))
        if needs_the_sandbox(code_of(notebook)):
            assert says, f"{path.stem} cannot run against a real test site: its first screen must say so"
        if says:
            say_so.add(path.stem)
    in_the_readme = {stem for stem, row in rows.items() if SAYS_IT_NEEDS_THE_SANDBOX.search(row)}
    assert say_so, "no notebook needs the sandbox: the detection is broken"
    assert sorted(in_the_readme) == sorted(say_so)


def test_the_quickstart_s_first_screen_says_how_to_run_a_cell():
    screen = first_screen(nbformat.read(ROOT / "notebooks" / "01_quickstart.ipynb", as_version=4))
    assert "Shift+Enter" in screen and "Restart Kernel and Run All Cells" in screen


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("document", ["README.md", "benchmarks/README.md", "docs/notebooks.md"])
def test_every_link_of_the_readmes_leads_somewhere(document):
    source = ROOT / document
    broken = []
    for target in LINK.findall(source.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (source.parent / path).resolve() if path else source
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), flags=re.MULTILINE)
            if anchor not in {slug(heading) for heading in headings}:
                broken.append(target)
    assert broken == []


def test_the_start_here_table_states_each_notebook_s_own_time():
    """01's "Start here" table and each notebook's first screen give the same time."""
    quickstart = nbformat.read(ROOT / "notebooks" / "01_quickstart.ipynb", as_version=4)
    table = next(cell.source for cell in quickstart.cells if cell.source.startswith("## Start here"))
    listed = {
        stem: int(minutes)
        for stem, minutes in re.findall(
            r"^\| \[[^]]+\]\((\w+)\.ipynb\) \|.*\| (\d+) min \|$", table, re.MULTILINE
        )
    }
    stated = {
        path.stem: int(
            re.search(r"\*\*Time:\*\* about (\d+) minutes", first_screen(nbformat.read(path, 4))).group(1)
        )
        for path in NOTEBOOKS
    }
    assert listed == stated
