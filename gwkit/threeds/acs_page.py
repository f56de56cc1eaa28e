"""Reading the ACS's pages when gwkit plays the customer headlessly: their forms, fields and
submit buttons, and a readable error for a page that answered an HTTP error."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

import httpx

from ..errors import ThreeDSecureError

__all__ = ["AcsForm", "AcsPage", "read_page"]


@dataclass
class AcsForm:
    action: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    buttons: dict[str, list[str]] = field(default_factory=dict)  # name -> values of its submit buttons


class AcsPage(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[AcsForm] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(AcsForm(a.get("action", "")))
        elif self.forms and tag == "input" and a.get("name"):
            if a.get("type", "text") == "submit":
                self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))
            else:
                self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif self.forms and tag == "button" and a.get("name"):
            self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def read_page(response: httpx.Response) -> AcsPage:
    """The page's forms and text; ThreeDSecureError when it answered HTTP 400 or more."""
    parser = AcsPage()
    parser.feed(response.text)
    if response.status_code >= 400:
        message = " ".join(" ".join(parser.text).split())
        raise ThreeDSecureError(
            f"the page at {response.request.url} answered HTTP {response.status_code}: {message[-400:]}"
        )
    return parser
