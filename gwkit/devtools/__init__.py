"""Developer tools (not part of the runtime API)."""
