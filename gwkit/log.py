"""Logging of gateway exchanges, masked.

The client logs to the standard logger named "gwkit": each request and each response at DEBUG
(envelopes with PANs masked and secrets redacted), each failed exchange at WARNING. Nothing is
masked or formatted unless a handler wants the message, so logging costs nothing when it is off.

    import gwkit.log
    gwkit.log.enable()            # DEBUG to stderr
    gwkit.log.enable("WARNING")   # failures only
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from .interface.masking import mask_text

logger = logging.getLogger("gwkit")
# A library stays quiet until the application configures logging (or calls `enable()`): without
# this, Python's last-resort handler would print every WARNING to stderr, in notebooks too.
logger.addHandler(logging.NullHandler())

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_enabled_handler: logging.Handler | None = None


class MaskingFilter(logging.Filter):
    """Masks anything that looks like a card number in every message that passes the handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def enable(level: int | str = "DEBUG", handler: logging.Handler | None = None) -> logging.Handler:
    """Send gwkit's log to `handler` (stderr by default) at `level`; calling it again replaces it."""
    global _enabled_handler
    disable()
    handler = handler or logging.StreamHandler()
    if handler.formatter is None:
        handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(MaskingFilter())
    logger.addHandler(handler)
    logger.setLevel(level)
    _enabled_handler = handler
    return handler


def disable() -> None:
    """Undo `enable()`."""
    global _enabled_handler
    if _enabled_handler is not None:
        logger.removeHandler(_enabled_handler)
        logger.setLevel(logging.NOTSET)
        _enabled_handler = None


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=repr)


# The client checks `logger.isEnabledFor(logging.DEBUG)` before masking anything for these two.
def request_sent(
    url: str, types: str, reference: str | None, attempt: int, masked_request: Mapping[str, Any]
) -> None:
    again = f" (attempt {attempt})" if attempt > 1 else ""
    logger.debug("request %s %s to %s%s: %s", types, reference, url, again, _dump(masked_request))


def response_received(
    types: str, reference: str | None, status_code: int, elapsed: float, masked_response: Any
) -> None:
    logger.debug(
        "response %s %s: HTTP %s in %.1f ms: %s",
        types,
        reference,
        status_code,
        elapsed * 1000,
        _dump(masked_response),
    )


def exchange_failed(
    types: str, reference: str | None, url: str, attempt: int, error: BaseException, retrying: bool
) -> None:
    if logger.isEnabledFor(logging.WARNING):
        then = "; retrying (nothing was sent)" if retrying else ""
        logger.warning(
            "%s %s to %s failed (attempt %d): %s: %s%s",
            types,
            reference,
            url,
            attempt,
            type(error).__name__,
            mask_text(str(error)),
            then,
        )
