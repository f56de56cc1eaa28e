"""Helpers shared by the tests: constants, request builders, fakes, and fixtures defined once for
several folders (each folder's conftest.py provides them)."""
