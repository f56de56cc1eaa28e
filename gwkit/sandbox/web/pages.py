"""The HTML document around each page the sandbox serves itself (the ACS, the demo merchant)."""

from __future__ import annotations

import html


def html_document(title: str, body: str, style: str = "") -> str:
    """A whole page: `title` escaped here; `body` and `style` are markup, escaped by the caller."""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<style>{style}</style></head><body>{body}</body></html>")
