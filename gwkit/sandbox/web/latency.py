"""Injected latency, bounded per site: a tenant's delays hold only that tenant's budget.

A `latency` fault answers a request later, a `timeout` fault not at all until the client gives up.
Each request held so takes a slot of its site's budget (`LatencyBudget`, `cap` slots per site); a
request such a fault picks while its site's slots are all taken is refused at once with HTTP 429
naming the cap, before anything is processed (no payment is made). The slot is given back when the answer is sent or the client disconnects
(the delay ends then: app.py). The server does not count delayed requests against its connection
limit (server.py), so one tenant's delays never make anyone else's requests, or the health and
control routes, wait or fail.
"""

from __future__ import annotations

import threading

from ..http import SandboxResponse

DELAYED_PER_SITE = 20  # requests of one site waiting out an injected latency at once


class Slot:
    """One delayed request's place in its site's budget; `release()` gives it back (once)."""

    def __init__(self, budget: LatencyBudget, site: str):
        self._budget, self.site = budget, site
        self._released = False

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._budget._give_back(self.site)


class LatencyBudget:
    """How many requests of each site wait out an injected delay, at most `cap` per site."""

    def __init__(self, cap: int = DELAYED_PER_SITE):
        if cap < 1:
            raise ValueError("the delayed requests per site must be 1 or more")
        self.cap = cap
        self._taken: dict[str, int] = {}
        self._changed = threading.Condition()  # taken in worker threads, given back on the event loop

    def take(self, site: str) -> Slot | None:
        """A slot for one more delayed request of `site`, or None when its `cap` are taken."""
        with self._changed:
            if self._taken.get(site, 0) >= self.cap:
                return None
            self._taken[site] = self._taken.get(site, 0) + 1
            self._changed.notify_all()
        return Slot(self, site)

    def _give_back(self, site: str) -> None:
        with self._changed:
            left = self._taken[site] - 1
            if left:
                self._taken[site] = left
            else:
                del self._taken[site]
            self._changed.notify_all()

    @property
    def delayed(self) -> int:
        """Requests of every site waiting out a delay now."""
        with self._changed:
            return sum(self._taken.values())

    def of(self, site: str) -> int:
        with self._changed:
            return self._taken.get(site, 0)

    def wait_until(self, site: str, count: int, timeout: float) -> bool:
        """Block until `site` has exactly `count` delayed requests (False if `timeout` passes first):
        for tests and benchmarks that must know their delayed requests are in place, or gone."""
        with self._changed:
            return self._changed.wait_for(lambda: self._taken.get(site, 0) == count, timeout)


def over_cap(site: str, cap: int) -> SandboxResponse:
    """429: the site already has `cap` requests waiting out an injected latency; nothing was processed."""
    return SandboxResponse.json(
        {
            "error": "too many delayed requests",
            "sitereference": site,
            "limit": "delayed_per_site",
            "limit_requests": cap,
            "detail": f"{site} already has {cap} requests waiting out an injected latency (at most {cap} "
            "per site); this one was not processed: send it again later, or clear the latency fault",
        },
        status=429,
        headers={"retry-after": "1"},
    )
