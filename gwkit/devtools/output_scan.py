"""Nothing raw: every output of an executed notebook read as a person sees it.

    python -m gwkit.devtools.output_scan executed.ipynb [...]     # prints what it finds; exit 1 if any

A finding is a Python repr a person should never see (a quoted string, a list, a tuple, a dict,
an object's repr), HTML shown as text, a traceback, a warning or anything written to stderr, an
exception's class name where an outcome should be in words ("no answer (HTTPStatusError)"), or a
bare money amount: a money column of a table ("baseamount", "revenue", ...) holding "15.00" with
no currency sign or code, where the kit writes "£15.00". It reads text outputs, the visible text of
HTML outputs and of saved HTML widgets (code shown on purpose, in <pre> or <code>, is left out),
and the cells of HTML tables under their column's title.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
RICH_TYPES = ("text/html", "image/png", "image/svg+xml", "text/markdown", "text/latex", WIDGET_VIEW)

RAW_PATTERNS = {
    "a quoted string": re.compile(r"(?<![\w'])'[^'\n]{1,120}'(?![\w'])"),
    "an empty list or dict": re.compile(r"(?<![\w\]])(\[\]|\{\})(?![\w])"),
    "a list": re.compile(r"\[\s*(['\"]|\d+\s*,|\()"),
    "a tuple": re.compile(r"\(\s*(True|False|None|['\"])[^()\n]*,"),
    "a dict": re.compile(r"\{\s*['\"][^'\"\n]*['\"]\s*:"),
    "an object's repr": re.compile(r"<[\w.]+ (object )?at 0x[0-9a-f]+>|\b[A-Z]\w+\((\w+=|['\"{\[])"),
}
HTML_AS_TEXT = re.compile(
    r"<(/?)(div|span|table|tr|td|p|b|i|form|input|details|style|script|br)\b[^>]*>", re.IGNORECASE
)
# An exception's class name where an outcome should be in words ("no answer (HTTPStatusError)"):
# gwkit.interface.vocabulary.no_answer_words says it. Code shown as code (<pre>, <code>) is left out.
EXCEPTION_NAME = re.compile(
    r"\b[A-Z][A-Za-z0-9]+(?:Error|Exception)\b|\b(?:Connect|Read|Write|Pool)Timeout\b"
    r"|\b(?:CassetteMiss|RecordedSilence)\b"
)
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|\b\w*(Warning|Error):\s")
CODE_BLOCKS = re.compile(r"<(pre|code|script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
SCRIPTS = re.compile(r"<(script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)
TAGS = re.compile(r"<[^>]+>")
# A table column of money, by its title: amounts, revenue, what was refunded, the net, MRR, a price.
MONEY_TITLE = re.compile(r"amount|revenue|refunded|(^|[_ ])net($|[_ ])|\bmrr\b|price", re.IGNORECASE)
# A number written without a currency: "15.00", "1,050.50", "-4.99" (a money column's whole cell).
BARE_DECIMAL = re.compile(r"-?\d{1,3}(,\d{3})*\.\d+|-?\d+\.\d+")
# In a column titled as an amount, a whole number too: base units shown raw ("1050").
BARE_WHOLE = re.compile(r"-?\d{1,3}(,\d{3})*|-?\d+")


@dataclass(frozen=True)
class Finding:
    cell: int  # the cell's index in the notebook (-1 for a saved widget)
    kind: str
    excerpt: str

    def __str__(self) -> str:
        where = f"cell {self.cell}" if self.cell >= 0 else "a saved widget"
        return f"{where}: {self.kind}: {self.excerpt}"


def visible_text(markup: str) -> str:
    """What a person reads of an HTML output: the text, without code shown as code."""
    return html.unescape(TAGS.sub(" ", CODE_BLOCKS.sub(" ", markup)))


def text_findings(cell: int, text: str) -> Iterator[Finding]:
    """Reprs, HTML as text and tracebacks in text a person reads."""
    for kind, pattern in RAW_PATTERNS.items():
        for match in pattern.finditer(text):
            yield Finding(cell, kind, _around(text, match))
    for match in HTML_AS_TEXT.finditer(text):
        yield Finding(cell, "HTML as text", _around(text, match))
    for match in TRACEBACK.finditer(text):
        yield Finding(cell, "a traceback or warning", _around(text, match))
    for match in EXCEPTION_NAME.finditer(text):
        yield Finding(cell, "an exception's class name", _around(text, match))


@dataclass
class _Table:
    titles: list[str] = field(default_factory=list)  # the last header row's cells
    rows: list[list[tuple[str, str]]] = field(default_factory=list)  # (tag, text) per cell


class _Tables(HTMLParser):
    """The HTML tables of an output: each one's column titles and rows of cell texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[_Table] = []
        self._open: list[_Table] = []
        self._in_head = False
        self._row: list[tuple[str, str]] | None = None
        self._cell: list[str] | None = None
        self._tag = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._open.append(_Table())
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._open:
            self._row = []
        elif tag in ("th", "td") and self._row is not None:
            self._cell, self._tag = [], tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None and self._row is not None:
            self._row.append((self._tag, " ".join("".join(self._cell).split())))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._open:
            table = self._open[-1]
            if self._in_head:
                table.titles = [text for _, text in self._row]
            else:
                table.rows.append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table" and self._open:
            self.tables.append(self._open.pop())

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _titled_cells(table: _Table) -> Iterator[tuple[str, str]]:
    """(column title, cell text) for every body cell: under the header row's titles, or, in a table
    of fields without a header (a record shown as name | value), under the row's own <th>."""
    for row in table.rows:
        if table.titles:
            yield from ((title, text) for title, (_, text) in zip(table.titles, row, strict=False))
        elif len(row) >= 2 and row[0][0] == "th":
            yield from ((row[0][1], text) for _, text in row[1:])


def money_findings(cell: int, markup: str) -> Iterator[Finding]:
    """Money shown bare in a table: a money column's cell that is a number with no currency (alone,
    or before a " · " note), one finding per column."""
    parser = _Tables()
    parser.feed(SCRIPTS.sub(" ", markup))  # a field's name in <code> is its row's title
    for table in parser.tables:
        bare: dict[str, list[str]] = {}
        for title, text in _titled_cells(table):
            amount = text.split(" · ", 1)[0]
            whole = "amount" in title.lower() and BARE_WHOLE.fullmatch(amount)
            if MONEY_TITLE.search(title) and (BARE_DECIMAL.fullmatch(amount) or whole):
                bare.setdefault(title, []).append(text)
        for title, texts in bare.items():
            shown = ", ".join(texts[:3]) + (", ..." if len(texts) > 3 else "")
            yield Finding(
                cell, "a bare money amount", f"{title}: {shown} (no currency: write £15.00, not 15.00)"
            )


def output_findings(cell: int, output: Mapping[str, Any]) -> Iterator[Finding]:
    kind = output.get("output_type")
    if kind == "error":
        yield Finding(cell, "an error", f"{output.get('ename')}: {output.get('evalue')}")
        return
    if kind == "stream":
        text = _text(output.get("text"))
        if output.get("name") == "stderr":
            yield Finding(cell, "text on stderr", text[:200])
        else:
            yield from text_findings(cell, text)
        return
    data = output.get("data") or {}
    if "text/html" in data:
        yield from text_findings(cell, visible_text(_text(data["text/html"])))
        yield from money_findings(cell, _text(data["text/html"]))
    elif not any(rich in data for rich in RICH_TYPES):
        yield from text_findings(cell, _text(data.get("text/plain")))


def widget_findings(notebook: Mapping[str, Any]) -> Iterator[Finding]:
    """The HTML and labels of the widgets saved with the notebook (what a widget last showed)."""
    for text in _widget_texts(notebook):
        yield from text_findings(-1, visible_text(text))
        yield from money_findings(-1, text)


def scan(notebook: Mapping[str, Any]) -> list[Finding]:
    """Every finding in an executed notebook (nbformat's node or its JSON as a dict)."""
    found = [
        finding
        for index, cell in enumerate(notebook.get("cells") or [])
        if cell.get("cell_type") == "code"
        for output in cell.get("outputs") or []
        for finding in output_findings(index, output)
    ]
    return found + list(widget_findings(notebook))


READING_SPEED = 200  # words a minute
SECONDS_PER_STEP = 20  # a newcomer's time to run a cell, or to try a widget they are invited to click
WORD = re.compile(r"[\w'`.-]+")
# The connection line every notebook shows: its reset button is there if needed, not an invitation.
NOT_AN_INVITATION = "gwkit-connection-view"


def reading_minutes(notebook: Mapping[str, Any]) -> int:
    """The honest time of an executed notebook at a newcomer's pace: every word a person reads (its
    cells, its outputs, its saved widgets) at READING_SPEED, plus SECONDS_PER_STEP for each code cell
    run and for each widget with buttons a reader is invited to click, rounded up to a minute."""
    texts = [_text(cell.get("source")) for cell in notebook.get("cells") or []]
    for cell in notebook.get("cells") or []:
        for output in cell.get("outputs") or []:
            data = output.get("data") or {}
            if output.get("output_type") == "stream":
                texts.append(_text(output.get("text")))
            elif "text/html" in data:
                texts.append(visible_text(_text(data["text/html"])))
            elif not any(rich in data for rich in RICH_TYPES):
                texts.append(_text(data.get("text/plain")))
    texts += [visible_text(text) for text in _widget_texts(notebook)]
    words = sum(len(WORD.findall(text)) for text in texts)
    steps = cells_run(notebook) + interactions(notebook)
    return -(-(words * 60 + steps * SECONDS_PER_STEP * READING_SPEED) // (60 * READING_SPEED))


def cells_run(notebook: Mapping[str, Any]) -> int:
    """The code cells a reader runs (an empty one is not run)."""
    cells = notebook.get("cells") or []
    return sum(1 for c in cells if c.get("cell_type") == "code" and _text(c.get("source")).strip())


def interactions(notebook: Mapping[str, Any]) -> int:
    """The widgets shown with a button to press (the connection line's reset aside): each an
    interaction the reader is invited to try. Read from the outputs' widget views and the saved
    widget state, so an executed notebook saved with its widgets is needed."""
    models = _widget_models(notebook)
    count = 0
    for cell in notebook.get("cells") or []:
        for output in cell.get("outputs") or []:
            view = (output.get("data") or {}).get(WIDGET_VIEW)
            if not view:
                continue
            tree = _widget_tree(models, str(view.get("model_id", "")))
            root_classes = (tree[0].get("state") or {}).get("_dom_classes") or [] if tree else []
            if NOT_AN_INVITATION not in root_classes and any(
                m.get("model_name") == "ButtonModel" for m in tree
            ):
                count += 1
    return count


def _widget_models(notebook: Mapping[str, Any]) -> Mapping[str, Any]:
    state = ((notebook.get("metadata") or {}).get("widgets") or {}).get(
        "application/vnd.jupyter.widget-state+json", {}
    )
    return state.get("state") or {}


def _widget_tree(models: Mapping[str, Any], model_id: str) -> list[Mapping[str, Any]]:
    """A widget's model and every model it holds (its children, their children...), each once."""
    tree: list[Mapping[str, Any]] = []
    todo, seen = [model_id], set()
    while todo:
        current = todo.pop(0)
        model = models.get(current)
        if model is None or current in seen:
            continue
        seen.add(current)
        tree.append(model)
        children = (model.get("state") or {}).get("children") or []
        todo += [str(child).removeprefix("IPY_MODEL_") for child in children]
    return tree


def _widget_texts(notebook: Mapping[str, Any]) -> Iterator[str]:
    for model in _widget_models(notebook).values():
        if model.get("model_name") in ("HTMLModel", "LabelModel"):
            yield str((model.get("state") or {}).get("value", ""))


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _around(text: str, match: re.Match[str]) -> str:
    start, end = max(match.start() - 40, 0), min(match.end() + 40, len(text))
    return " ".join(text[start:end].split())


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m gwkit.devtools.output_scan executed.ipynb [...]")
        return 2
    found = 0
    for path in paths:
        for finding in scan(json.loads(Path(path).read_text(encoding="utf-8"))):
            print(f"{path}: {finding}")
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
