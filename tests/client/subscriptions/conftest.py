"""Subscription fixtures: a sandbox whose clock starts on a fixed day, and a client for it."""

from support.subscriptions import gw, sandbox  # noqa: F401  (shared fixtures, defined once)
