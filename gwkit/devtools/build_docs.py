"""`make docs`: a static site of the docs and the executed notebooks, readable without installing.

    python -m gwkit.devtools.build_docs site/        # then open site/index.html, or serve the folder

Built with nbconvert and nbclient, which JupyterLab already brings (no new dependency, and the
notebooks render as JupyterLab renders them). Each notebook runs headless on a fresh sandbox, as
`make test` runs it; a widget is shown as it was left (its saved state drawn as plain HTML), with a
note that it needs a live kernel to respond. Each widget is drawn as it was when the cell that shows it
had run, so it agrees with the text around it (a later cell that clicks a button changes only its own
picture). The pages load nothing from the network: no MathJax, RequireJS or widget manager from a CDN;
Mermaid diagrams are drawn by the copy of Mermaid's classic bundle served with the site
(`mermaid_assets`: the npm package, fetched once at build time), which a page opened from disk
(`file://`) runs as well as a served one. The index tells the notebooks' story from 01's "Start here"
table, the one place it is written.
"""

from __future__ import annotations

import copy
import html
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import nbformat
from jinja2 import DictLoader
from nbclient import NotebookClient
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from . import mermaid_assets

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
GATEWAY_SETTINGS = (
    "GWKIT_BASE_URL",
    "GWKIT_USERNAME",
    "GWKIT_PASSWORD",
    "GWKIT_SITEREFERENCE",
    "GWKIT_TARGET",
)
SAVED_NOTE = (
    "<div class='gwkit-saved-widget-note' style='color:#6b7788;font-size:85%;margin:2px 0'>"
    "A widget, shown as it was left: it needs a live kernel (JupyterLab) to respond.</div>"
)
CELL_STATE = "gwkit_widget_state"  # a cell's metadata key: the widgets' state when that cell had run
OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{{ resources.gwkit_mermaid }}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
"""
# Mermaid's classic bundle, then the diagrams of the page drawn once it is parsed: no module import,
# which Chromium refuses on a page opened from disk.
MERMAID_SCRIPT = """<script src="{url}"></script>
<script>document.addEventListener("DOMContentLoaded", () => {{
  mermaid.initialize({{startOnLoad: false, securityLevel: "strict"}});
  mermaid.run({{querySelector: ".jp-Mermaid > pre.mermaid"}});
}});</script>"""
PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.5;
color:#1f2933}} a{{color:#1a5fb4}} h1{{font-size:1.7em}} h2{{margin-top:1.6em}}
pre{{background:#f5f7fa;padding:.6em;overflow-x:auto}} table{{border-collapse:collapse}}
td,th{{border-bottom:1px solid #e3e7ed;padding:4px 10px;text-align:left;vertical-align:top}}
th{{background:#f5f7fa}} td:last-child{{white-space:nowrap}} .gwkit-lead{{font-size:1.1em;color:#3e4c59}}
.gwkit-docs dt{{font-weight:600;margin-top:.5em}} .gwkit-docs dd{{margin:0 0 0 1.2em;color:#3e4c59}}</style>
{head}</head>
<body><p><a href="{home}">gwkit: docs and notebooks</a></p>{body}</body></html>"""
INDEX_LEAD = (
    "gwkit is a toolkit for a card-payment gateway's JSON web services, made for Jupyter, with a sandbox "
    "of the whole gateway inside. These pages are its notebooks, run from top to bottom on a fresh "
    "sandbox, and its guides. To run the notebooks yourself, clone the kit and type <code>make lab</code>."
)


LIVE_FRAME = re.compile(
    r"<iframe\b[^>]*src=['\"]https?://127\.0\.0\.1[:/][^>]*>.*?</iframe>", re.DOTALL | re.IGNORECASE
)
LIVE_NOTE = (
    "<div class='gwkit-live-page-note' style='color:#6b7788;border:1px dashed #c5ccd6;padding:1em'>"
    "A live page of the notebook's sandbox was shown here: open the notebook in JupyterLab to use it.</div>"
)


def snapshot(model_id: str, models: Mapping[str, Any]) -> str:
    """A widget's saved state as plain HTML: boxes with their children, HTML as it was, inputs
    with their values (disabled), buttons with their labels."""
    model = models.get(model_id) or {}
    name, state = model.get("model_name", ""), model.get("state") or {}
    children = [c.removeprefix("IPY_MODEL_") for c in state.get("children") or []]
    if children:
        titles = state.get("titles") or []
        parts = []
        for index, child in enumerate(children):
            inner = snapshot(child, models)
            if name == "AccordionModel":
                title = titles[index] if index < len(titles) and titles[index] else "details"
                inner = f"<details><summary>{html.escape(title)}</summary>{inner}</details>"
            parts.append(inner)
        flow = "row" if name == "HBoxModel" else "column"
        return (
            f"<div style='display:flex;flex-direction:{flow};flex-wrap:wrap;gap:4px'>{''.join(parts)}</div>"
        )
    label = html.escape(str(state.get("description") or ""))
    if name in ("HTMLModel", "HTMLMathModel"):
        return LIVE_FRAME.sub(LIVE_NOTE, str(state.get("value") or ""))
    if name == "LabelModel":
        return f"<span>{html.escape(str(state.get('value') or ''))}</span>"
    if name == "ButtonModel":
        return f"<button disabled>{label}</button>"
    if name in ("TextModel", "TextareaModel", "PasswordModel", "DatePickerModel"):
        value = state.get("value") or ""
        if name == "PasswordModel":
            value = "•" * len(str(value))
        if isinstance(value, dict):  # a date: {"year": 2026, "month": 10, "date": 5} (month from 0)
            value = f"{value['year']:04d}-{value['month'] + 1:02d}-{value['date']:02d}"
        return f"<label>{label} <input disabled value='{html.escape(str(value), quote=True)}'></label>"
    if name in ("DropdownModel", "SelectModel"):
        options, selected = state.get("_options_labels") or [], state.get("index")
        chosen = options[selected] if isinstance(selected, int) and selected < len(options) else ""
        return f"<label>{label} <select disabled><option>{html.escape(chosen)}</option></select></label>"
    if name == "CheckboxModel":
        checked = " checked" if state.get("value") else ""
        return f"<label><input type='checkbox' disabled{checked}> {label}</label>"
    if name in ("IntProgressModel", "FloatProgressModel"):
        return f"<label>{label} <progress value='{state.get('value', 0)}' max='{state.get('max', 100)}'></progress></label>"
    return ""


def with_saved_widgets(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Every widget view replaced by its saved state as HTML (as it was when its cell had run, where
    the cell kept it), and the widget state dropped (so the page needs no widget manager); a frame of
    a page the sandbox served (gone with it) replaced by a note."""
    last = ((notebook.metadata.get("widgets") or {}).get(WIDGET_STATE) or {}).get("state") or {}
    for cell in notebook.cells:
        models = cell.get("metadata", {}).pop(CELL_STATE, None) or last
        for output in cell.get("outputs") or []:
            markup = (output.get("data") or {}).get("text/html")
            if markup:
                output["data"]["text/html"] = LIVE_FRAME.sub(LIVE_NOTE, "".join(markup))
            view = (output.get("data") or {}).get(WIDGET_VIEW)
            if view:
                drawn = snapshot(view["model_id"], models)
                output["data"] = {"text/html": f"<div class='gwkit-saved-widget'>{SAVED_NOTE}{drawn}</div>"}
    notebook.metadata.pop("widgets", None)
    return notebook


def executed(path: Path, workdir: Path) -> nbformat.NotebookNode:
    """The notebook run top to bottom, each cell keeping the widgets' state as it was when it had run."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    )

    def keep_widget_state(cell: nbformat.NotebookNode, **_: Any) -> None:
        client.set_widgets_metadata()
        state = ((notebook.metadata.get("widgets") or {}).get(WIDGET_STATE) or {}).get("state")
        if state and any(WIDGET_VIEW in (o.get("data") or {}) for o in cell.get("outputs") or []):
            cell.metadata[CELL_STATE] = copy.deepcopy(state)

    client.on_cell_executed = keep_widget_state
    client.execute()
    return notebook


def title_of(doc: Path) -> str:
    """A doc's first heading, or its file name in words."""
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return doc.stem.replace("-", " ")


def start_here(notebooks: Path) -> str:
    """01's "Start here" table as HTML, its links pointing at the site's notebook pages."""
    quickstart = nbformat.read(notebooks / "01_quickstart.ipynb", as_version=4)
    for cell in quickstart.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("## Start here"):
            body = markdown2html_mistune(cell.source.lstrip().removeprefix("## Start here"))
            return re.sub(r'href="([^"#:/]+)\.ipynb', r'href="notebooks/\1.ipynb', body)
    raise ValueError("notebooks/01_quickstart.ipynb has no '## Start here' cell")


def index_page(docs: list[Path], notebooks: Path) -> str:
    """The site's first page: what gwkit is, the notebooks' story, then the guides by their titles."""
    guides = "".join(f'<dt><a href="docs/{d.stem}.md">{html.escape(title_of(d))}</a></dt>' for d in docs)
    body = (
        f"<h1>gwkit: docs and notebooks</h1><p class='gwkit-lead'>{INDEX_LEAD}</p>"
        f"<h2>Start here</h2>{start_here(notebooks)}"
        f"<h2>Guides</h2><dl class='gwkit-docs'>{guides}</dl>"
    )
    return site_links(PAGE.format(title="gwkit", home="index.html", head="", body=body))


def site_links(page: str) -> str:
    """Links between pages as they are in the site: .md and .ipynb pages are .html pages."""
    return re.sub(r'href="([^"#:]+)\.(md|ipynb)(#[^"]*)?"', lambda m: f'href="{m[1]}.html{m[3] or ""}"', page)


def build(target: Path) -> list[Path]:
    """Build the site into `target` (emptied first); the pages written."""
    if target.exists():
        shutil.rmtree(target)
    (target / "docs").mkdir(parents=True)
    (target / "notebooks").mkdir()
    written = []
    entry = mermaid_assets.install(target / "assets" / "mermaid")
    mermaid = MERMAID_SCRIPT.format(url=f"../assets/mermaid/{entry}")  # from a page in docs/ or notebooks/
    docs = sorted((ROOT / "docs").glob("*.md"))
    for doc in docs:
        body = markdown2html_mistune(doc.read_text(encoding="utf-8"))
        head = mermaid if "jp-Mermaid" in body else ""
        page = PAGE.format(title=html.escape(title_of(doc)), home="../index.html", head=head, body=body)
        written.append(target / "docs" / f"{doc.stem}.html")
        written[-1].write_text(site_links(page), encoding="utf-8")
    exporter = HTMLExporter(
        template_name="lab", extra_loaders=[DictLoader({"gwkit_offline.html.j2": OFFLINE_TEMPLATE})]
    )
    exporter.template_file = "gwkit_offline.html.j2"
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch) / "notebooks"
        shutil.copytree(
            ROOT / "notebooks", workdir, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".gwkit")
        )
        saved = {name: os.environ.pop(name, None) for name in GATEWAY_SETTINGS}  # the embedded sandbox
        os.environ.update(
            GWKIT_SANDBOX_DB=str(Path(scratch) / "sandbox.db"), GWKIT_JOURNAL=str(Path(scratch) / "j.db")
        )
        try:
            for path in sorted(workdir.glob("*.ipynb")):  # in order: 01 first
                page, _ = exporter.from_notebook_node(
                    with_saved_widgets(executed(path, workdir)), resources={"gwkit_mermaid": mermaid}
                )
                written.append(target / "notebooks" / f"{path.stem}.html")
                written[-1].write_text(site_links(page), encoding="utf-8")
        finally:
            for name in ("GWKIT_SANDBOX_DB", "GWKIT_JOURNAL"):
                os.environ.pop(name, None)
            os.environ.update({k: v for k, v in saved.items() if v is not None})
    (target / "index.html").write_text(index_page(docs, ROOT / "notebooks"), encoding="utf-8")
    # a browser asks every site for its icon: an empty one, so that no page logs a 404
    (target / "favicon.ico").write_bytes(b"")
    return [target / "index.html", *written]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "site")
    pages = build(target)
    print(f"{len(pages)} pages in {target}/ (open {target}/index.html)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
