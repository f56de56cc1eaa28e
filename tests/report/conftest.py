"""Report fixtures: a sandbox whose clock starts on a fixed day and a client for it (per test), and the
analyst's books (once per session, shared by every test that reads them: support/books.py)."""

from support.books import books  # noqa: F401  (shared fixtures, defined once)
from support.subscriptions import gw, sandbox  # noqa: F401
