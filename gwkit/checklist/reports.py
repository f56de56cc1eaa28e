"""The reports of a finished run: JUnit XML (for CI) and an HTML page (for people), each verdict with
its exchanges. Exchanges are kept masked (card numbers as 411111######1111, no security code), and
masked again here: nothing in a report is shown as the application sent it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from xml.etree import ElementTree as ET

from jinja2 import Environment

from ..interface.masking import mask_data
from ..proxy import ProxyExchange
from .run import ChecklistResult
from .steps import FAIL, NOT_SEEN, WARNING, ChecklistError

SUITE = "gwkit checklist"


def check_writable(path: str | os.PathLike[str]) -> Path:
    """A report path that can be written, or a ChecklistError naming it and why (asked before the run)."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise ChecklistError(f"report path {target}: is a folder, name a file")
    if not folder.is_dir():
        raise ChecklistError(f"report path {target}: its folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ChecklistError(f"report path {target}: cannot be written (permission denied)")
    return target


def junit_xml(result: ChecklistResult) -> str:
    """One testcase a step: a failure for a mishandled outcome, an error for a step never exercised,
    a warning in the case's output; advisory verdicts never fail."""
    suite = ET.Element(
        "testsuite",
        name=SUITE,
        tests=str(len(result.verdicts)),
        failures=str(sum(v.status == FAIL and not v.advisory for v in result.verdicts)),
        errors=str(sum(v.status == NOT_SEEN and not v.advisory for v in result.verdicts)),
    )
    for verdict in result.verdicts:
        case = ET.SubElement(suite, "testcase", classname=SUITE, name=f"{verdict.step}: {verdict.title}")
        details = verdict.explain()
        if verdict.status == FAIL and not verdict.advisory:
            ET.SubElement(case, "failure", message=verdict.reason, type="mishandled").text = details
        elif verdict.status == NOT_SEEN and not verdict.advisory:
            ET.SubElement(case, "error", message=verdict.reason, type="no payment seen").text = details
        ET.SubElement(case, "system-out").text = details
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"


_ENVIRONMENT = Environment(autoescape=True, keep_trailing_newline=True)
_PAGE = _ENVIRONMENT.from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gwkit checklist: {{ summary }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; }
.pass { color: #176f2c; } .fail { color: #b00020; } .warning { color: #8a5a00; } .seen { color: #555; }
section { border-top: 1px solid #ccc; padding: .5rem 0; }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; font-size: .85rem; }
</style></head><body>
<h1>gwkit checklist</h1>
<p class="{{ 'pass' if passed else 'fail' }}"><strong>{{ summary }}</strong></p>
{% for v in verdicts %}
<section id="{{ v.step }}">
<h2>{{ v.title }}: <span class="{{ classes[v.status] }}">{{ v.status }}</span>{% if v.advisory %} (advisory){% endif %}</h2>
<p>{{ v.reason }}</p>
{% if v.key or v.advisory %}<p>Payment known {{ v.keyed_by }}.</p>{% endif %}
<p><em>Why it matters:</em> {{ v.why }}</p>
{% for e in evidence[v.step] %}
<details><summary>{{ e.summary }}</summary>
<p>Sent:</p><pre>{{ e.request }}</pre>
<p>Answered:</p><pre>{{ e.response }}</pre>
</details>
{% endfor %}
</section>
{% endfor %}
</body></html>
"""
)
_CLASSES = {"pass": "pass", FAIL: "fail", WARNING: "warning", NOT_SEEN: "seen"}


def html_report(result: ChecklistResult) -> str:
    return _PAGE.render(
        summary=result.summary(),
        passed=result.passed,
        verdicts=result.verdicts,
        classes=_CLASSES,
        evidence={v.step: [_shown(e) for e in v.evidence] for v in result.verdicts},
    )


def _shown(exchange: ProxyExchange) -> dict[str, str]:
    answer = exchange.response if exchange.response is not None else (exchange.exchange.error or "no answer")
    return {
        "summary": exchange.summary(),
        "request": json.dumps(mask_data(dict(exchange.request)), indent=2),
        "response": json.dumps(mask_data(answer), indent=2),
    }


def write_reports(
    result: ChecklistResult, *, junit: Path | None = None, html: Path | None = None
) -> dict[str, str]:
    """Write the reports asked for; a ChecklistError naming a path that cannot be written."""
    written: dict[str, str] = {}
    for name, path, text in (("junit", junit, junit_xml), ("html", html, html_report)):
        if path is None:
            continue
        try:
            Path(path).write_text(text(result), encoding="utf-8")
        except OSError as exc:
            raise ChecklistError(f"report path {path}: cannot be written ({exc.strerror})") from None
        written[name] = str(path)
    return written
