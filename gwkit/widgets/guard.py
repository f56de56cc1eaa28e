"""Widget callbacks that fail loudly, in the widget.

ipywidgets swallows an exception raised in a callback (it goes to the browser console or a log
the user never sees), so a broken button just looks dead. `guarded(callback, output)` shows the
error in the widget instead (type, message and a collapsed traceback, card data masked), and
re-raises it when GWKIT_RAISE_CALLBACK_ERRORS is set, as the tests do, so a test fails.
"""

from __future__ import annotations

import functools
import html
import os
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import ipywidgets as widgets

from ..interface.masking import mask_text
from ..interface.vocabulary import NO_ANSWER, no_answer_words

RAISE_ENV = "GWKIT_RAISE_CALLBACK_ERRORS"
F = TypeVar("F", bound=Callable[..., Any])


def error_html(error: BaseException, context: str = "") -> str:
    """A readable error: what failed (in words when the request got no answer, else the error's
    kind, a bug to report), the message, and the traceback one click away."""
    where = f" while {html.escape(context)}" if context else ""
    words = no_answer_words(error)
    heading = html.escape(words[:1].upper() + words[1:] if words != NO_ANSWER else type(error).__name__)
    message = html.escape(mask_text(str(error)) or type(error).__name__)
    trace = html.escape(mask_text("".join(traceback.format_exception(error))))
    return (
        f"<div class='gwkit-error' style='border-left:4px solid #b00020;padding:4px 8px;"
        f"background:#fdecee'><b>{heading}</b>{where}:<br>"
        f"<span style='white-space:pre-wrap'>{message}</span>"
        f"<details><summary>Traceback</summary><pre style='font-size:85%'>{trace}</pre></details></div>"
    )


def show_error(output: widgets.Widget | None, error: BaseException, context: str = "") -> None:
    """Put the error into `output`: an HTML widget (replaced), an Output widget (appended), or a
    Box (an HTML child appended)."""
    shown = error_html(error, context)
    if isinstance(output, widgets.HTML):
        output.value = shown
    elif isinstance(output, widgets.Output):
        output.outputs = output.outputs + (
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {"text/html": shown, "text/plain": mask_text(str(error))},
            },
        )
    elif isinstance(output, widgets.Box):
        output.children = tuple(output.children) + (widgets.HTML(shown),)


def guarded(callback: F, output: widgets.Widget | None = None, *, context: str = "") -> F:
    """`callback`, wrapped so that an exception is shown in `output` (and re-raised under tests)."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except Exception as error:
            show_error(output, error, context)
            if os.environ.get(RAISE_ENV):
                raise
            return None

    return run  # type: ignore[return-value]
