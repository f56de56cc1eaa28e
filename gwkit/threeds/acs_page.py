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
    ids: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, value) of an input or button
    element_id: str = ""


class AcsPage(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[AcsForm] = []
        self.text: list[str] = []
        self.text_by_id: dict[str, str] = {}  # the text inside each element with an id
        self._open: list[tuple[str, str]] = []  # (tag, id) of the elements with an id we are inside

    def form_with(self, element_id: str) -> AcsForm | None:
        """The form that holds the input or button with this id, or that has this id."""
        return next((f for f in self.forms if element_id in f.ids or f.element_id == element_id), None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("id") and tag not in ("input", "br", "img", "meta"):
            self._open.append((tag, a["id"]))
            self.text_by_id.setdefault(a["id"], "")
        if tag == "form":
            self.forms.append(AcsForm(a.get("action", ""), element_id=a.get("id", "")))
        elif self.forms and tag == "input" and a.get("name"):
            if a.get("type", "text") == "submit":
                self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))
            else:
                self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif self.forms and tag == "button" and a.get("name"):
            self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))
        if self.forms and tag in ("input", "button") and a.get("id"):
            self.forms[-1].ids[a["id"]] = (a.get("name", ""), a.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for _, element_id in self._open:
            self.text_by_id[element_id] += data


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
