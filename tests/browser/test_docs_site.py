"""`make docs`: the static site of the docs and the executed notebooks, opened in Chromium.

The site is built once (every notebook runs headless on a fresh sandbox), served from loopback, and
every page is opened: each shows its notebook's content (tables, charts, saved widgets, found by
content), loads nothing from elsewhere, and logs no console error. The README tells a reader to open
`site/index.html` from disk, so the site is opened from `file://` too, where Chromium refuses what a
served page may do (importing a module, for one).
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import nbformat
import pytest

from gwkit.devtools import build_docs
from support.browser import launch, require_chromium

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
# what each page must show, found by its content: (a title, a text of an output, a CSS selector)
CONTENT = {
    "01_quickstart": (
        "Quickstart",
        "Authorised: £10.50",
        ".gwkit-saved-widget .gwkit-response-view, .gwkit-saved-widget",
    ),
    "02_request_explorer": (
        "The request explorer",
        "is disabled (transactionactive 0)",
        ".gwkit-saved-widget",
    ),
    "03_threeds_v1_walkthrough": (
        "3-D Secure version 1",
        "scheme without 3-D Secure",
        ".gwkit-saved-widget svg.gwkit-sequence",
    ),
    "04_subscriptions": ("Subscriptions", "pending (starts when the AUTH settles)", "img"),
    "05_card_store": ("The card store", "Mastercard", "img"),
    "06_tokenisation": ("Browser tokenisation", "Card data found in what the shop received", "table"),
    "07_reporting": ("Reporting for finance and support", "Money movements", "img"),
    "08_faults_and_reconciliation": ("Faults and reconciliation", "authorised, waiting to settle", "table"),
    "09_url_notifications": ("URL notifications", "notificationreference", "table"),
    "10_validating_proxy": ("A validating proxy", "Bank System Error", "table"),
    "11_threeds_v2_walkthrough": (
        "3-D Secure version 2",
        "challenge that breaks",
        ".gwkit-saved-widget svg.gwkit-sequence",
    ),
    "12_your_shop_under_test": (
        "Your shop under test",
        "the declined order was sent again automatically",
        ".gwkit-saved-widget table.gwkit-checklist-steps",
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    require_chromium()
    target = tmp_path_factory.mktemp("site") / "site"
    build_docs.build(target)
    return target


@pytest.fixture(scope="module")
def site(built):
    target = built
    handler = functools.partial(QuietHandler, directory=str(target))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def test_every_notebook_has_a_page_with_its_content_and_no_console_error(site):
    from playwright.sync_api import sync_playwright

    assert set(CONTENT) == set(NOTEBOOKS), "every notebook has its expected content listed here"
    drawn = [n for n in NOTEBOOKS if "```mermaid" in (ROOT / "notebooks" / f"{n}.ipynb").read_text()]
    assert drawn, "a notebook has a Mermaid diagram for this test to check"
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            elsewhere: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on(  # blob: and data: URLs are the page's own (itables loads its module from one)
                "request",
                lambda r: (
                    elsewhere.append(r.url)
                    if r.url.startswith(("http:", "https:")) and not r.url.startswith(site)
                    else None
                ),
            )
            page.goto(f"{site}/index.html")
            assert page.locator("a[href='notebooks/07_reporting.html']").count() == 1
            for name, (title, text, selector) in CONTENT.items():
                page.goto(f"{site}/notebooks/{name}.html")
                page.wait_for_load_state("load")  # static pages: their own assets, no polling; a
                # busy machine may give "networkidle" no 500 ms of quiet within the timeout
                body = page.inner_text("body")
                assert title in body and text in body, f"{name}: its content is missing"
                assert page.locator(selector).count() >= 1, f"{name}: no {selector}"
                assert "Error displaying widget" not in body and "Loading widget" not in body
                if name in drawn:  # drawn by the site's own copy of Mermaid, not shown as source
                    assert_diagrams_drawn(page)
            page.goto(f"{site}/docs/glossary.html")
            assert "Base units" in page.inner_text("body")
            assert errors == [] and elsewhere == []
        finally:
            browser.close()


def assert_diagrams_drawn(page) -> None:
    diagrams = page.locator(".jp-Mermaid")
    page.locator(".jp-Mermaid svg").first.wait_for()
    assert diagrams.count() >= 1
    assert page.locator(".jp-Mermaid svg").count() == diagrams.count(), "every diagram drawn"
    assert "Syntax error" not in page.inner_text("body")


def test_the_site_opened_from_disk_draws_its_diagrams_and_tells_the_notebooks_story(built):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((built / "index.html").as_uri())
            story = page.locator("table a[href^='notebooks/']")
            assert story.count() == len(NOTEBOOKS), "the index lists every notebook in 01's story table"
            assert "What you will learn" in page.inner_text("table")
            assert page.locator("a[href='docs/glossary.html']").inner_text() == "Glossary"
            story.filter(has_text="3-D Secure v1").first.click()
            assert page.url.endswith("notebooks/03_threeds_v1_walkthrough.html")
            assert_diagrams_drawn(page)
            assert errors == []
        finally:
            browser.close()


def test_a_widget_is_drawn_as_it_was_when_its_cell_ran(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import ipywidgets\nlabel = ipywidgets.Label('before the click')\nlabel"),
        nbformat.v4.new_markdown_cell("The label said 'before the click'; now the next cell changes it."),
        nbformat.v4.new_code_cell("label.value = 'after the click'\nlabel"),
    ]
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)

    drawn = build_docs.with_saved_widgets(build_docs.executed(path, tmp_path))

    first, second = (
        "".join(o["data"]["text/html"] for o in cell.outputs)
        for cell in drawn.cells
        if cell.cell_type == "code"
    )
    assert "before the click" in first and "after the click" not in first
    assert "after the click" in second
    assert all(build_docs.CELL_STATE not in cell.metadata for cell in drawn.cells)


def test_a_saved_widget_is_drawn_from_its_state_and_says_it_needs_a_kernel():
    models = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_html", "IPY_MODEL_button"]}},
        "html": {"model_name": "HTMLModel", "state": {"value": "<b>Authorised</b>"}},
        "button": {"model_name": "ButtonModel", "state": {"description": "Send AUTH"}},
    }
    drawn = build_docs.snapshot("box", models)
    assert "<b>Authorised</b>" in drawn and "<button disabled>Send AUTH</button>" in drawn
    assert "live kernel" in build_docs.SAVED_NOTE
