"""Fixtures of the browser tests: the system Chromium, and the 3-D Secure sandbox and receiver."""

from __future__ import annotations

import pytest

from support.browser import launch, require_chromium
from support.threeds import client, gateway, receiver  # noqa: F401  (shared fixtures)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()
