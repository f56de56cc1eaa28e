"""The faults panel: inject payment-aware faults into the embedded sandbox and see what was injected.

    panel = FaultsPanel(gw)
    panel.kind.value = "gateway_error"
    panel.code.value = 60010
    panel.made.value = True
    panel.inject_button.click()        # the next AUTH (count 1) gets errorcode 60010, really made
    panel.active_table.value           # the active faults (HTML)
    panel.log_table.value              # what was injected, newest first (HTML)
    panel.clear_button.click()         # remove every active fault of the site

The panel holds no fault logic: it collects the inputs of the chosen kind and passes them to
`gw.sandbox.faults.add(kind, sitereference=..., **params)`, which checks them (a bad value raises an
error naming the field, shown in the status line). See docs/sandbox.md, section "Faults". Against a
real gateway (`gw.sandbox is None`) the panel is one line saying faults need the sandbox.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import ipywidgets as widgets

from ..interface.codes import explain
from ..interface.faults import GATEWAY_ERROR_CODES, MALFORMED_BODIES
from ..interface.faults import KINDS as FAULT_KINDS
from ..interface.faults import PROXY_STATUSES as HTTP_STATUSES
from .checks import RefusalsBeside
from .guard import guarded
from .style import button

KINDS = tuple(FAULT_KINDS)
NO_SANDBOX = (
    "Faults need the embedded sandbox: this connection is to a real gateway, which cannot be "
    'faulted. Use <code>gwkit.connect(target="sandbox")</code> to try them.'
)
# columns of the active faults table: the fault's keys shown on their own; the rest are its parameters
ACTIVE_KEYS = ("id", "kind", "count", "fraction", "requesttypes", "amounts")
LOG_COLUMNS = {
    "injected": "Injected",
    "fault_id": "Fault",
    "kind": "Kind",
    "params": "Parameters",
    "requesttypes": "Request types",
    "orderreference": "Order",
    "transactionreference": "Transaction",
    "made": "Made",
}
STYLE = {"description_width": "initial"}


class FaultsPanel(widgets.VBox):
    """`kind` picks the fault, its inputs show below it, `count` and `requesttypes` select the
    requests; `inject_button` adds the fault, `clear_button` removes all; `status` says what
    happened; `active_table` and `log_table` show the site's active faults and its fault log."""

    def __init__(self, gw: Any, *, sitereference: str | None = None):
        super().__init__()
        self.gw = gw
        self.faults = gw.sandbox.faults if getattr(gw, "sandbox", None) is not None else None
        target = getattr(gw, "target", None)
        self.sitereference = sitereference or getattr(target, "sitereference", None)
        self.status = widgets.HTML()
        self.add_class("gwkit-faults-panel")
        if self.faults is None:
            self.children = [widgets.HTML(f"<div class='gwkit-faults-unavailable'>{NO_SANDBOX}</div>")]
            return

        self.kind = widgets.Dropdown(description="Fault", options=KINDS, value="gateway_error", style=STYLE)
        # the inputs of each kind
        self.latency_mode = widgets.ToggleButtons(
            options=[("Fixed", "fixed"), ("Range", "range")],
            value="fixed",
            description="Latency",
            style=STYLE,
        )
        self.seconds = widgets.FloatText(
            value=2.0, description="Seconds", style=STYLE, layout=widgets.Layout(width="14em")
        )
        self.min_seconds = widgets.FloatText(
            value=1.0, description="Min seconds", style=STYLE, layout=widgets.Layout(width="14em")
        )
        self.max_seconds = widgets.FloatText(
            value=3.0, description="Max seconds", style=STYLE, layout=widgets.Layout(width="14em")
        )
        self.code = widgets.Dropdown(
            description="Error code",
            options=GATEWAY_ERROR_CODES,
            value=60010,
            style=STYLE,
            layout=widgets.Layout(width="14em"),
        )
        self.code_meaning = widgets.HTML()
        self.made = widgets.Checkbox(
            value=False, description="Made (the transaction really is stored)", indent=False
        )
        self.status_code = widgets.Dropdown(
            description="HTTP status",
            options=HTTP_STATUSES,
            value=502,
            style=STYLE,
            layout=widgets.Layout(width="14em"),
        )
        self.body = widgets.Dropdown(
            description="Body",
            options=MALFORMED_BODIES,
            value="truncated",
            style=STYLE,
            layout=widgets.Layout(width="14em"),
        )
        self.process = widgets.Checkbox(
            value=True, description="Process the request first (the payment is made)", indent=False
        )
        # the selector
        self.count = widgets.IntText(
            value=1, description="Count (next N requests)", style=STYLE, layout=widgets.Layout(width="16em")
        )
        self.requesttypes = widgets.Text(
            value="",
            description="Request types",
            placeholder="all, or e.g. AUTH, REFUND",
            style=STYLE,
            layout=widgets.Layout(width="26em"),
        )
        self.params = widgets.VBox()
        self.inject_button = button(description="Inject", kind="primary", icon="bolt")
        self.clear_button = button(description="Clear all", kind="danger", icon="trash")
        self.refresh_button = button(description="Refresh", icon="refresh")
        self.active_table = widgets.HTML()
        self.log_table = widgets.HTML()

        self.refusals = RefusalsBeside(
            {
                "seconds": self.seconds,
                "min_seconds": self.min_seconds,
                "max_seconds": self.max_seconds,
                "code": self.code,
                "made": self.made,
                "status": self.status_code,
                "body": self.body,
                "process": self.process,
                "count": self.count,
                "requesttypes": self.requesttypes,
            },
            self.inject_button,
        )
        self.inject_button.on_click(
            guarded(lambda _b: self._inject_pressed(), self.status, context="injecting the fault")
        )
        self.clear_button.on_click(
            guarded(lambda _b: self.clear(), self.status, context="clearing the faults")
        )
        self.refresh_button.on_click(
            guarded(lambda _b: self.refresh(), self.status, context="listing the faults")
        )
        self.kind.observe(
            guarded(lambda _change: self._show_inputs(), self.status, context="choosing the fault"),
            names="value",
        )
        self.latency_mode.observe(
            guarded(lambda _change: self._show_inputs(), self.status, context="choosing the latency"),
            names="value",
        )
        self.code.observe(
            guarded(lambda _change: self._explain_code(), self.status, context="explaining the error code"),
            names="value",
        )

        site = f" on site <code>{html.escape(self.sitereference)}</code>" if self.sitereference else ""
        self.children = [
            widgets.HTML(f"<h3 style='margin:4px 0'>Faults{site}</h3>"),
            self.kind,
            self.params,
            widgets.HBox([self.refusals.boxed("count"), self.refusals.boxed("requesttypes")]),
            self.refusals.general,
            widgets.HBox([self.inject_button, self.clear_button, self.refresh_button]),
            self.status,
            widgets.HTML("<b>Active faults</b>"),
            self.active_table,
            widgets.HTML("<b>Fault log</b> (newest first)"),
            self.log_table,
        ]
        self._explain_code()
        self._show_inputs()
        self.refresh()

    # -- inputs ------------------------------------------------------------------------------
    def _inputs(self, kind: str) -> list[widgets.Widget]:
        beside = self.refusals.boxed  # each input with the sandbox's refusal of it right under it
        if kind == "latency":
            timing = ["seconds"] if self.latency_mode.value == "fixed" else ["min_seconds", "max_seconds"]
            return [self.latency_mode, widgets.HBox([beside(name) for name in timing])]
        if kind == "gateway_error":
            return [widgets.HBox([beside("code"), self.code_meaning]), beside("made")]
        if kind == "http_status":
            return [beside("status"), beside("process")]
        if kind == "malformed":
            return [beside("body"), beside("process")]
        return [beside("process")]  # timeout, drop

    def _show_inputs(self) -> None:
        self.params.children = self._inputs(self.kind.value)

    def _explain_code(self) -> None:
        meaning = explain(self.code.value)
        self.code_meaning.value = (
            f"<span class='gwkit-code-meaning'><b>{html.escape(meaning.message)}</b>: "
            f"{html.escape(meaning.meaning)} {html.escape(meaning.action)}</span>"
        )

    def parameters(self) -> dict[str, Any]:
        """The keywords `faults.add` gets for the chosen kind (without the kind and the site)."""
        kind = self.kind.value
        if kind == "latency":
            fixed = self.latency_mode.value == "fixed"
            params: dict[str, Any] = (
                {"seconds": self.seconds.value}
                if fixed
                else {"min_seconds": self.min_seconds.value, "max_seconds": self.max_seconds.value}
            )
        elif kind == "gateway_error":
            params = {"code": self.code.value, "made": self.made.value}
        elif kind == "http_status":
            params = {"status": self.status_code.value, "process": self.process.value}
        elif kind == "malformed":
            params = {"body": self.body.value, "process": self.process.value}
        else:
            params = {"process": self.process.value}
        params["count"] = self.count.value
        types = [t.strip().upper() for t in self.requesttypes.value.split(",") if t.strip()]
        if types:
            params["requesttypes"] = types
        return params

    # -- actions -----------------------------------------------------------------------------
    def _inject_pressed(self) -> None:
        """The Inject button: a fault the sandbox refuses is shown beside the input it names."""
        try:
            self.inject()
        except ValueError as refused:
            self.refusals.show(refused)
            self.status.value = ""

    def inject(self) -> dict[str, Any]:
        """Add the fault the inputs describe; returns it as the sandbox has it (with its id)."""
        faults = self._sandbox_faults()
        fault = faults.add(self.kind.value, sitereference=self.sitereference, **self.parameters())
        self.refresh()
        self._say(f"fault {fault['id']} injected: {fault['kind']} {_parameters_text(fault)}")
        return fault

    def clear(self) -> int:
        """Remove every active fault of the site; returns how many."""
        cleared = self._sandbox_faults().clear(self.sitereference)
        self.refresh()
        self._say(f"{cleared} active fault{'' if cleared == 1 else 's'} cleared")
        return cleared

    def _sandbox_faults(self) -> Any:
        if self.faults is None:
            raise RuntimeError("faults need the embedded sandbox: this connection is to a real gateway")
        return self.faults

    def refresh(self) -> None:
        """Show the site's active faults and its fault log again."""
        if self.faults is None:
            return
        self.active_table.value = _table(
            [
                {
                    "Id": f.get("id"),
                    "Kind": f.get("kind"),
                    "Parameters": _parameters_text(f),
                    "Selector": (
                        f"count {f['count']}" if f.get("fraction") is None else f"fraction {f['fraction']}"
                    ),
                    "Request types": ", ".join(f.get("requesttypes") or []) or "all",
                    "Amounts": "" if f.get("amounts") is None else f["amounts"],
                }
                for f in self.faults.active(self.sitereference)
            ],
            "No active faults.",
            "gwkit-faults-active",
        )
        self.log_table.value = _table(
            [
                {title: _log_cell(key, entry.get(key)) for key, title in LOG_COLUMNS.items()}
                for entry in reversed(self.faults.log(self.sitereference))
            ],
            "Nothing injected yet.",
            "gwkit-faults-log",
        )

    def _say(self, text: str) -> None:
        self.status.value = f"<span class='gwkit-ok'>{html.escape(text)}</span>"


def _parameters_text(fault: dict[str, Any]) -> str:
    return ", ".join(
        f"{key}={value}"
        for key, value in fault.items()
        if key not in ACTIVE_KEYS and key not in ("sitereference", "seed")
    )


def _log_cell(key: str, value: Any) -> Any:
    if key == "params" and isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if key == "requesttypes" and isinstance(value, (list, tuple)):
        return ", ".join(value)
    if key == "made":
        return "yes" if value else "no"
    if key == "injected" and isinstance(value, str):
        return value.replace("T", " ", 1)  # 2026-11-26 09:10:08, as every table of the kit writes a time
    return "" if value is None else value


def _table(rows: Iterable[dict[str, Any]], empty: str, css_class: str) -> str:
    rows = list(rows)
    if not rows:
        return f"<i class='{css_class}'>{html.escape(empty)}</i>"
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row.values()) + "</tr>"
        for row in rows
    )
    return (
        f"<table class='{css_class}' border='0'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
