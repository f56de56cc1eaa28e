"""The root of gwkit's exception hierarchy, in the lowest layer so that every layer may raise under
it (the sandbox and the proxy included, which may not import the client's `gwkit.errors`).

The tree of every error, and what each means, is drawn in `gwkit/errors.py`, which re-exports this.
"""

from __future__ import annotations

__all__ = ["GwkitError"]


class GwkitError(Exception):
    """Base class of every error gwkit raises: `except gwkit.GwkitError` catches any of them."""
