"""AUTH (interface 2.4, 4.5, 4.6): every variant goes through the shared payment path."""

from __future__ import annotations

from typing import Any

from ...interface.requests import AUTH
from .context import Context
from .payments import authorise, resolve_card


def handle_auth(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    card = resolve_card(ctx, request, AUTH.select(request).name)
    return [authorise(ctx, request, card)]


REQUEST_HANDLERS = {"AUTH": handle_auth}
