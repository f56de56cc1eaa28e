"""Request handlers of the sandbox; importing this package registers them all."""

from . import auth, cardstore, query, settlement, update  # noqa: F401
