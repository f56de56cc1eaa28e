"""Reaching each worker of `gwkit sandbox --workers N`: a keep-alive connection pinned to each."""

from __future__ import annotations

import httpx

from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_USERNAME


def pinned_clients(base_url: str, count: int, attempts: int = 200) -> dict[int, httpx.Client]:
    """A keep-alive client per worker (by its process id): new connections until each worker has one."""
    clients: dict[int, httpx.Client] = {}
    for _ in range(attempts):
        client = httpx.Client(
            base_url=base_url,
            auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD),
            timeout=600,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        worker = client.get("/_sandbox/health").json()["process"]
        if worker in clients:
            client.close()
        else:
            clients[worker] = client
        if len(clients) == count:
            return clients
    raise AssertionError(f"the kernel gave {attempts} connections to {sorted(clients)} only")
