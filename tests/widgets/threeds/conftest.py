"""3-D Secure fixtures: a sandbox with a fixed clock, a client for it, gwkit's term URL receiver."""

from support.threeds import client, gateway, receiver  # noqa: F401  (shared fixtures, defined once)
