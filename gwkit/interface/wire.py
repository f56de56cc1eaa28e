"""Constants of the wire format (interface section 2.1), defined once for client and sandbox."""

from __future__ import annotations

import re

VERSION = "1.00"  # the envelope's "version"
TIMESTAMP = "%Y-%m-%d %H:%M:%S"  # transactionstartedtimestamp and every other timestamp field
DATE = "%Y-%m-%d"
GATEWAY_PATH = "/json/"  # where envelopes are POSTed
FAULT_HEADER = "x-gwkit-fault"  # the sandbox marks an answer that carries an injected fault with its kind
# A run of 12 to 19 digits that is not part of a longer number: anything that may be a card number.
PAN_PATTERN = re.compile(r"(?<!\d)\d{12,19}(?!\d)")
