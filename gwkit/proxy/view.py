"""`ProxyView`: the proxy's exchanges, live, in a notebook.

A table of exchanges (request types, status, error codes, who answered, the fault, the validation
problems, drift), filters to narrow it, and copy-as-code for any row (`gwkit.codegen`: gwkit, httpx,
curl or the official client). The table follows the proxy: each exchange refreshes it.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import pandas as pd

from ..codegen import STYLES, as_code
from ..widgets.guard import guarded
from ..widgets.style import table_html
from .app import ProxyHandle
from .exchanges import PROXY, ProxyExchange
from .proxy import Proxy

ANY = "any"
FILTERS: dict[str, Callable[[ProxyExchange], bool]] = {
    "all": lambda e: True,
    "with problems": lambda e: bool(e.problems),
    "with faults": lambda e: e.fault is not None,
    "errors": lambda e: e.exchange.error is not None or any(code != "0" for code in e.errorcodes),
    "answered by the proxy": lambda e: e.answered_by == PROXY,
    "with drift": lambda e: bool(e.drift),
}
SHOWN_ROWS = 200  # the most recent rows of the filtered table


class ProxyView(widgets.VBox):
    """The live view of a proxy: `ProxyView(handle)` (code is then written against the proxy's base
    URL), or `ProxyView(proxy, base_url=...)`."""

    def __init__(self, proxy: Proxy | ProxyHandle, *, base_url: str | None = None):
        if isinstance(proxy, ProxyHandle):
            base_url, proxy = base_url or proxy.base_url, proxy.proxy
        self.proxy = proxy
        self.base_url = base_url or proxy.upstream.url
        self.shown = widgets.Dropdown(options=list(FILTERS), value="all", description="Show")
        self.request_type = widgets.Dropdown(options=[ANY], value=ANY, description="Request")
        self.table = widgets.HTML()
        self.row = widgets.Dropdown(options=[], description="Row #")
        self.style = widgets.Dropdown(options=list(STYLES), value="gwkit", description="As")
        self.code = widgets.Textarea(layout=widgets.Layout(width="100%", height="14em"))
        self.error = widgets.HTML()
        for control in (self.shown, self.request_type):
            control.observe(guarded(lambda change: self.refresh(), self.error), names="value")
        for control in (self.row, self.style):
            control.observe(guarded(lambda change: self._show_code(), self.error), names="value")
        super().__init__(
            [
                widgets.HBox([self.shown, self.request_type]),
                self.table,
                widgets.HBox([self.row, self.style]),
                self.code,
                self.error,
            ]
        )
        proxy.on_exchange(guarded(lambda exchange: self.refresh(), self.error))
        self.refresh()

    @property
    def rows(self) -> list[ProxyExchange]:
        """The exchanges the filters let through, oldest first."""
        wanted, kind = FILTERS[self.shown.value], self.request_type.value
        return [e for e in self.proxy.exchanges if wanted(e) and (kind == ANY or kind in e.request_types)]

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([e.as_people_row() for e in self.rows[-SHOWN_ROWS:]]).astype(str)

    def refresh(self) -> None:
        seen = sorted({t for e in self.proxy.exchanges for t in e.request_types})
        if list(self.request_type.options) != [ANY, *seen]:
            self.request_type.options = [ANY, *seen]  # keeps the value: it is still an option
        self.table.value = table_html(self.frame(), "No exchanges yet (or none the filters let through).")
        numbers = [e.number for e in self.rows[-SHOWN_ROWS:]]
        if list(self.row.options) != numbers:
            chosen = self.row.value
            self.row.options = numbers
            self.row.value = chosen if chosen in numbers else (numbers[-1] if numbers else None)
        self._show_code()

    def _show_code(self) -> None:
        chosen = next((e for e in self.rows if e.number == self.row.value), None)
        if chosen is None:
            self.code.value = ""
            return
        self.code.value = as_code(chosen.exchange, self.style.value, base_url=_base(self.base_url))


def _base(url: str) -> str:
    """The base URL code is written against (codegen adds the gateway path itself)."""
    return url.removesuffix("/json/")
