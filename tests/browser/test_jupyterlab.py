"""JupyterLab in headless Chromium: open the quickstart, run all cells, see the rendered output.

A real `jupyter lab` server on loopback with a random token, a copy of notebooks/, the sandbox and
journal databases in a temporary folder. The screenshot goes to test-artifacts/.
"""

from __future__ import annotations

import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from support.browser import launch, require_chromium

# User settings for the test's JupyterLab: start the notebook's kernel without asking, fetch no news.
LAB_SETTINGS = {
    # every cell in the page (no windowing), so a test sees every prompt and output
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"autoStartDefaultKernel": true, "windowingMode": "none"}',
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": '{"fetchNews": "false", "checkForUpdates": false}',
}

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SERVER_START_TIMEOUT = 120  # seconds
UI_TIMEOUT_MS = 180_000

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LabServer:
    """`jupyter lab` as a subprocess; ready once its log says it serves, bounded by a timeout."""

    def __init__(self, root: Path, home: Path):
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self._ready = threading.Event()
        settings = home / "lab-settings"
        for name, content in LAB_SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(content)
        env = {
            **os.environ,
            "GWKIT_SANDBOX_DB": str(home / "sandbox.db"),
            "GWKIT_JOURNAL": str(home / "journal.db"),
            "JUPYTER_CONFIG_DIR": str(home / "jupyter-config"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "IPYTHONDIR": str(home / "ipython"),
        }
        for name in (
            "GWKIT_BASE_URL",
            "GWKIT_USERNAME",
            "GWKIT_PASSWORD",
            "GWKIT_SITEREFERENCE",
            "GWKIT_TARGET",
        ):
            env.pop(name, None)
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            f"--port={self.port}",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.ip=127.0.0.1",
            f"--notebook-dir={root}",
            "--ServerApp.port_retries=0",
            # no network: no update check, no news feed, no PyPI extension manager
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")  # containers and CI often run as root
        self.process = subprocess.Popen(
            command,
            env=env,
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read_log, daemon=True).start()

    def _read_log(self) -> None:
        for line in self.process.stderr:  # type: ignore[union-attr]
            self.log.append(line)
            if f"127.0.0.1:{self.port}/" in line:
                self._ready.set()
        self._ready.set()  # the process ended: stop waiting

    def wait_ready(self) -> None:
        if not self._ready.wait(SERVER_START_TIMEOUT) or self.process.poll() is not None:
            raise AssertionError("jupyter lab did not start:\n" + "".join(self.log[-40:]))
        status = httpx.get(f"{self.url}/api/status", params={"token": self.token}, timeout=30)
        assert status.status_code == 200, status.text

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                httpx.post(f"{self.url}/api/shutdown", params={"token": self.token}, timeout=30)
                self.process.wait(timeout=60)
            except (httpx.HTTPError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(timeout=30)
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "jupyterlab-server.log").write_text("".join(self.log))


# Every code cell of the shown notebook has its execution count, or one failed (Run All stops there).
ALL_CELLS_RAN = (
    "() => document.querySelector(\"[data-mime-type='application/vnd.jupyter.error']\") || ("
    "document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')"
    ".length > 0 && "
    "[...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')]"
    ".every(p => /\\[\\d+\\]/.test(p.textContent)))"
)


def new_page(browser):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(UI_TIMEOUT_MS)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    return page


def start_run_all(page) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def wait_until_all_ran(page) -> None:
    page.wait_for_function(ALL_CELLS_RAN)


@pytest.fixture
def lab(tmp_path):
    require_chromium()
    root = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".gwkit"))
    server = LabServer(root, tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def test_quickstart_runs_in_jupyterlab_and_renders_the_widgets(lab):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = new_page(browser)
            page.goto(f"{lab.url}/lab/tree/01_quickstart.ipynb?token={lab.token}")
            expect(page.locator(".jp-NotebookPanel").first).to_be_visible()
            # the kernel is connected and idle (status bar), so Run All is not cancelled by its start-up
            expect(
                page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
            ).to_be_visible()

            start_run_all(page)

            connection = page.locator(".jp-OutputArea-output .gwkit-connection").first
            expect(connection).to_be_visible()
            expect(connection).to_contain_text("SANDBOX")
            expect(connection).to_contain_text("test_gwkit12345")
            expect(connection).not_to_contain_text("gwkit_sandbox_password")

            view = page.locator(".gwkit-response-view").first
            expect(view).to_be_visible()
            expect(view).to_contain_text("Success")
            expect(view).to_contain_text("411111######1111")
            expect(view.locator("button", has_text="Query this transaction")).to_be_visible()

            # every cell ran: no busy prompt left, and no error output anywhere
            wait_until_all_ran(page)
            assert page.locator("[data-mime-type='application/vnd.jupyter.error']").count() == 0
            assert "4111111111111111" not in view.inner_text()

            # the widget works in the browser too: query the payment from its button
            view.locator("button", has_text="Query this transaction").click()
            expect(view.locator(".gwkit-query-records").first).to_be_visible()

            ARTIFACTS.mkdir(exist_ok=True)
            view.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-quickstart.png"))
        finally:
            browser.close()


def test_faults_notebook_runs_in_jupyterlab_and_the_panel_renders(lab):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = new_page(browser)
            page.goto(f"{lab.url}/lab/tree/08_faults_and_reconciliation.ipynb?token={lab.token}")
            expect(
                page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
            ).to_be_visible()
            start_run_all(page)
            wait_until_all_ran(page)
            assert page.locator("[data-mime-type='application/vnd.jupyter.error']").count() == 0
            panel = page.locator(".gwkit-faults-panel").first
            expect(panel).to_be_visible()
            expect(panel.locator("button", has_text="Inject")).to_be_visible()
            expect(panel).not_to_contain_text("Loading widget")
            expect(panel).not_to_contain_text("Error displaying widget")
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator(
                ".jp-OutputArea-output table.dataTable, .jp-OutputArea-output table.dataframe"
            ).first.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-faults-table.png"))
            # the fault log once DataTables has drawn it: scrolling sideways, its header is a table of
            # its own (no rows), so the cells are the container's body rows
            log = page.locator(".dt-container", has=page.locator("th", has_text="injected")).first
            log.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-faults-log.png"))
            when = log.locator("tbody tr td").first
            assert when.evaluate("cell => getComputedStyle(cell).whiteSpace") == "nowrap"
            line = when.evaluate("cell => parseFloat(getComputedStyle(cell).lineHeight) || 20")
            assert when.evaluate("cell => cell.getBoundingClientRect().height") < 2 * line  # one line
            panel.evaluate("element => element.scrollIntoView({block: 'start'})")
            page.screenshot(path=str(ARTIFACTS / "jupyterlab-faults-panel.png"))
        finally:
            browser.close()


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
RAW_REPR = re.compile(r"<Axes|<gwkit\.|\{'|\['|\(\d+, '|\bdtype: |<NA>|\bNaN\b|<matplotlib|<Figure")


@pytest.fixture(scope="module")
def shared_lab(tmp_path_factory):
    """One JupyterLab for the tour of every notebook (each notebook has its own sandbox)."""
    require_chromium()
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".gwkit"))
    server = LabServer(root, home)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_renders_in_jupyterlab_without_raw_reprs(shared_lab, path, tmp_path):
    """Open, Run All, and look as a user does: every widget rendered, no error, no raw repr, the
    notebook not marked changed by opening it; one screenshot per notebook (tmp_path and test-artifacts/)."""
    from playwright.sync_api import expect, sync_playwright

    lab = shared_lab
    with sync_playwright() as p:
        browser = launch(p)
        page = None
        try:
            page = new_page(browser)
            # a workspace of its own, reset: only this notebook's tab is open
            page.goto(f"{lab.url}/lab/workspaces/{path.stem}/tree/{path.name}?token={lab.token}&reset")
            expect(
                page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))
            ).to_be_visible()
            # JupyterLab records the kernel's language_info on opening: the notebooks carry the kit's, so
            # opening them changes nothing where the kernel's Python is the one they were saved with.
            saved = json.loads(path.read_text(encoding="utf-8"))["metadata"]["language_info"].get("version")
            if saved == platform.python_version():
                assert page.locator(".lm-TabBar-tab.jp-mod-dirty").count() == 0, (
                    "opening the notebook changed it"
                )

            start_run_all(page)
            wait_until_all_ran(page)
            errors = page.locator("[data-mime-type='application/vnd.jupyter.error']")
            assert errors.count() == 0, (
                f"{path.name} failed in JupyterLab:\n{errors.first.inner_text()[-3000:]}"
            )
            outputs = page.locator(".jp-OutputArea-output")
            expect(outputs.filter(has_text="Loading widget")).to_have_count(0)
            text = "\n".join(outputs.all_inner_texts())
            assert "Error displaying widget" not in text
            raw = sorted({m.group(0) for m in RAW_REPR.finditer(text)})
            assert raw == [], f"{path.name} shows raw reprs or missing-value markers: {raw}"
            assert "4111111111111111" not in text
        finally:
            ARTIFACTS.mkdir(exist_ok=True)
            for folder in (tmp_path, ARTIFACTS) if page is not None else ():  # also when it failed
                page.screenshot(path=str(folder / f"notebook-{path.stem}.png"), full_page=True)
            if page is not None:
                screenshot_whole_notebook(page, ARTIFACTS / f"notebook-{path.stem}-whole.png")
            browser.close()


def screenshot_whole_notebook(page, target) -> None:
    """The whole notebook in one picture, top to bottom, to look at as a reader would: the window is
    made as tall as the notebook (at most 20,000 pixels), so nothing is cut or scrolled."""
    panel = page.locator(".jp-NotebookPanel:visible .jp-WindowedPanel-outer").first
    if not panel.count():
        return
    extra = page.viewport_size["height"] - panel.evaluate("e => e.clientHeight")
    height = min(20_000, panel.evaluate("e => e.scrollHeight") + extra)
    page.set_viewport_size({"width": page.viewport_size["width"], "height": height})
    panel.evaluate("e => { e.scrollTop = 0; }")
    page.screenshot(path=str(target))
