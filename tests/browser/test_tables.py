"""Tables for people in Chromium: a wide table says it scrolls, and its search box narrows the rows.

The page is what a notebook shows: itables loaded offline as `show_tables_for_people()` loads it,
then `gwkit.report.display.to_html(frame)`, opened from disk in a window narrower than the table.
"""

from __future__ import annotations

import IPython.display
import pandas as pd
import pytest

from gwkit.report import display
from support.browser import launch, require_chromium

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000


def notebook_page(tmp_path, frame: pd.DataFrame, monkeypatch) -> str:
    """An HTML file holding the table library (offline, as in a notebook) and `frame` for people."""
    itables = pytest.importorskip("itables")
    loaded: list[str] = []
    monkeypatch.setattr(IPython.display, "display", lambda *shown: loaded.extend(h.data for h in shown))
    itables.init_notebook_mode(all_interactive=False)  # before the table: it says where the library is
    page = tmp_path / "table.html"
    body = "".join(loaded) + f"<div style='width:640px'>{display.to_html(frame)}</div>"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
    return page.as_uri()


def wide_frame(rows: int) -> pd.DataFrame:
    """Twelve columns, far wider than 640 pixels; the payment numbers tell the rows apart."""
    frame = pd.DataFrame(
        {f"column_{n:02d}_title": [f"value-{n}-{r}" for r in range(rows)] for n in range(12)}
    )
    frame.insert(0, "orderreference", [f"order-{r:03d}" for r in range(rows)])
    return frame


@pytest.fixture
def page(browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 800, "height": 900})
    page.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield page
    assert errors == [], "the table's page logged errors"
    page.close()


@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        yield browser
        browser.close()


def test_a_wide_table_names_the_columns_out_of_sight_and_which_way_to_scroll(page, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    page.goto(notebook_page(tmp_path, wide_frame(3), monkeypatch))
    cue = page.locator(".gwkit-scroll-cue")
    expect(cue).to_be_visible()
    expect(cue).to_contain_text("Scroll right →")
    expect(cue).to_contain_text("column_11_title")  # the last column, out of sight
    assert "orderreference" not in cue.inner_text()  # the first one is in sight
    body = page.locator(".dt-scroll-body")
    assert body.evaluate("e => e.scrollWidth > e.clientWidth")
    assert body.evaluate("e => getComputedStyle(e).scrollbarColor") != "auto"  # a bar always drawn

    body.evaluate("e => { e.scrollLeft = e.scrollWidth; }")  # scrolled to the end
    expect(cue).not_to_contain_text("Scroll right")
    expect(cue).to_contain_text("← scroll left for orderreference")


def test_a_table_that_fits_shows_no_cue(page, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    narrow = pd.DataFrame({"orderreference": ["order-1", "order-2"], "baseamount": [1050, 2500]})
    page.goto(notebook_page(tmp_path, narrow, monkeypatch))
    expect(page.locator("table.gwkit-datatable tbody tr")).to_have_count(2)
    expect(page.locator(".gwkit-scroll-cue")).to_be_hidden()


def test_the_search_box_narrows_the_rows(page, tmp_path, monkeypatch):
    from playwright.sync_api import expect

    page.goto(notebook_page(tmp_path, wide_frame(display.SEARCHED_FROM), monkeypatch))
    rows = page.locator(".dt-scroll-body table.gwkit-datatable tbody tr")
    expect(rows).to_have_count(display.SEARCHED_FROM)
    page.locator(".dt-search input").fill("order-007")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("order-007")
    page.locator(".dt-search input").fill("")
    expect(rows).to_have_count(display.SEARCHED_FROM)


def test_every_column_of_a_large_wide_frame_reaches_the_page(page, tmp_path, monkeypatch):
    """itables' own limits (64 KB) would drop rows and columns with only a link to its docs."""
    from playwright.sync_api import expect

    frame = wide_frame(2000)
    page.goto(notebook_page(tmp_path, frame, monkeypatch))
    titles = page.locator(".dt-scroll-head thead th")
    expect(titles).to_have_count(len(frame.columns))
    assert [t.strip() for t in titles.all_inner_texts()] == list(frame.columns)
    expect(page.locator(".dt-info")).to_contain_text("2,000 entries")
