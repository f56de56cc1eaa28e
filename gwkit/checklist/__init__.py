"""gwkit checklist: your shop under test. A proxy that leads you through the outcomes every
integration must handle, one payment at a time, and says with evidence which ones it handles.

    >>> from gwkit import checklist, proxy, sandbox
    >>> handle = checklist.start(proxy.SandboxUpstream(sandbox.Sandbox("checklist.db")))
    >>> handle.base_url            # point the shop's gateway base URL here, then pay in the shop
    >>> handle.next()              # the step's verdict; the next step is armed
    >>> handle.finish().verdicts   # every verdict, each with its exchanges

`gwkit checklist` runs it from the command line (docs/checklist.md). The steps are registered in
the order they run: the decline steps, 3-D Secure, the unknown-outcome steps, the URL notification steps (given
the shop's listener), then validation.
"""

from . import (  # noqa: F401  (declines... register the steps, in this order)
    command,
    declines,
    threeds,
    threeds_v1,
    unknown,
    urlnotification,
    validation,
)
from .app import ChecklistHandle, create_checklist_app, start
from .payments import Payment, PaymentKey, key_of
from .reports import html_report, junit_xml, write_reports
from .run import STEP_HEADER, Checklist, ChecklistProxy, ChecklistResult
from .steps import (
    FAIL,
    NOT_SEEN,
    PASS,
    REGISTER,
    WARNING,
    ChecklistError,
    Step,
    Verdict,
    register,
    steps_named,
)

__all__ = [
    "FAIL",
    "NOT_SEEN",
    "PASS",
    "REGISTER",
    "STEP_HEADER",
    "WARNING",
    "Checklist",
    "ChecklistError",
    "ChecklistHandle",
    "ChecklistProxy",
    "ChecklistResult",
    "Payment",
    "PaymentKey",
    "Step",
    "Verdict",
    "create_checklist_app",
    "html_report",
    "junit_xml",
    "key_of",
    "register",
    "start",
    "steps_named",
    "write_reports",
]
