"""The URL notification control API (JSON, same credentials as the rest of `/_sandbox/`).

    POST   /_sandbox/notifications/rules          {"url": ..., "flow"?, "requesttypes"?, "errorcodes"?,
                                                  "settlestatuses"?, "fields"?, "password"?, "timeout"?,
                                                  "sitereference"?} -> the rule, with its "id"
    GET    /_sandbox/notifications/rules          {"rules": [...]} the caller's sites' rules
    DELETE /_sandbox/notifications/rules/{id}     {"deleted": id, "cancelled": n} (its deliveries not made yet)
    GET    /_sandbox/notifications/deliveries     {"deliveries": [...], "total", "offset", "next_offset"}
                                                  newest first (?transactionreference=, ?limit=, ?offset=)
    POST   /_sandbox/notifications/deliveries/{id}/resend   the delivery, sent again (same reference)

Each caller sees and changes only their own sites' rules and deliveries (an operator: every site);
a rule or delivery of another site is a 404, as one that does not exist. A bad rule is a 400 naming
the field and the rule; a site that is not the caller's a 403. The handlers here are rows of the one
routes table (routes.py), each served by `control.control_page`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gateway.accounts import Account
from ..gateway.notifications import MOST_PER_PAGE, NotificationError
from .served import Served

PREFIX = "/_sandbox/notifications"
RULES, DELIVERIES = f"{PREFIX}/rules", f"{PREFIX}/deliveries"
PAGE = 100  # deliveries in a page unless `limit` says otherwise


def _site(sandbox: Served, account: Account, payload: dict[str, Any]) -> tuple[str, ...]:
    site = payload.get("sitereference")
    if "sitereference" in payload and not isinstance(site, str):
        raise NotificationError("sitereference must be a string")
    return sandbox.gateway.sites_of(account, site)


def add_rule(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    site = payload.get("sitereference")
    if site is None:
        site = account.sitereferences[0]  # an operator without a site named: its own first site
    return sandbox.gateway.notifier.add_rule(payload, _site(sandbox, account, {"sitereference": site})[0])


def rules(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"rules": sandbox.gateway.notifier.rules(_site(sandbox, account, payload))}


def delete_rule(sandbox: Served, account: Account, payload: dict[str, Any], rule_id: str) -> dict[str, Any]:
    cancelled = sandbox.gateway.notifier.delete_rule(sandbox.gateway.sites_of(account), rule_id)
    return {"deleted": rule_id, "cancelled": cancelled}


def deliveries(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    """A page of the deliveries, newest first, with how many there are and where the next page starts."""
    unknown = sorted(set(payload) - {"sitereference", "transactionreference", "limit", "offset"})
    if unknown:
        raise NotificationError(
            f"unknown parameter(s) {', '.join(unknown)}: "
            "this endpoint takes sitereference, transactionreference, limit, offset"
        )
    sites = _site(sandbox, account, payload)
    limit = _whole(payload, "limit", PAGE, 1, MOST_PER_PAGE)
    offset = _whole(payload, "offset", 0, 0, None)
    return sandbox.gateway.notifier.page(sites, payload.get("transactionreference"), limit, offset)


def _whole(payload: dict[str, Any], name: str, default: int, least: int, most: int | None) -> int:
    value = payload.get(name, default)
    text = str(value)
    if isinstance(value, bool) or not text.isdigit() or int(text) < least or (most and int(text) > most):
        bounds = f"{least} to {most}" if most else f"{least} or more"
        raise NotificationError(f"{name} must be a whole number, {bounds}, got {value!r}")
    return int(text)


def resend(sandbox: Served, account: Account, payload: dict[str, Any], reference: str) -> dict[str, Any]:
    return sandbox.gateway.notifier.resend(sandbox.gateway.sites_of(account), reference)


class NotificationControls:
    """URL notifications of some sites, in-process (`gw.sandbox.notifications`): the control API's
    calls as methods, and `wait_for` a delivery."""

    def __init__(self, gateway: Any, account: Account):
        self._gateway, self.account = gateway, account

    def __repr__(self) -> str:
        return f"NotificationControls(sites={self.sites!r})"

    @property
    def sites(self) -> tuple[str, ...]:
        return self._gateway.sites_of(self.account)

    def add_rule(self, url: str, **rule: Any) -> dict[str, Any]:
        """Add a rule: `flow` ("offline", "online", "failover"), `requesttypes`, `errorcodes`,
        `settlestatuses`, `fields`, `password`, `timeout`, `sitereference` (see docs/notifications.md)."""
        site = rule.pop("sitereference", None) or self.account.sitereferences[0]
        return self._gateway.notifier.add_rule(
            {"url": url, **rule}, self._gateway.sites_of(self.account, site)[0]
        )

    def rules(self) -> list[dict[str, Any]]:
        return self._gateway.notifier.rules(self.sites)

    def delete_rule(self, rule_id: str) -> int:
        """Delete a rule; how many of its deliveries not made yet were cancelled."""
        return self._gateway.notifier.delete_rule(self.sites, rule_id)

    def deliveries(self, transactionreference: str | None = None) -> list[dict[str, Any]]:
        """Every delivery of these sites, newest first, each with its attempts and state."""
        return self._gateway.notifier.deliveries(self.sites, transactionreference)

    def resend(self, delivery_id: str) -> dict[str, Any]:
        """Send a delivery again (the same notificationreference)."""
        return self._gateway.notifier.resend(self.sites, delivery_id)

    def on_attempt(self, watcher: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `watcher(notificationreference)` after each attempt is recorded (from the sender's
        thread, or the request's for an online one): a panel redraws on it."""
        return self._gateway.notifier.on_attempt(watcher)

    def wait_for(
        self,
        transactionreference: str | None = None,
        *,
        state: str | tuple[str, ...] = ("delivered", "failed"),
        attempts: int | None = None,
        count: int = 1,
        timeout: float = 10.0,
    ) -> list[dict[str, Any]]:
        """Wait until `count` deliveries (of one transaction, or any) are in `state` (and, with
        `attempts`, had at least that many attempts answered or given up); them. TimeoutError names
        what was seen."""
        states = (state,) if isinstance(state, str) else tuple(state)

        def ready() -> list[dict[str, Any]]:
            found = [
                d
                for d in self.deliveries(transactionreference)
                if d["state"] in states and (attempts is None or _finished(d) >= attempts)
            ]
            return found if len(found) >= count else []

        found = self._gateway.notifier.wait_for(ready, timeout)
        if not found:
            seen = [(d["id"], d["state"], len(d["attempts"])) for d in self.deliveries(transactionreference)]
            raise TimeoutError(
                f"within {timeout:g} s no {count} deliveries in state {states}"
                + (f" with {attempts} attempts" if attempts else "")
                + f"; seen (id, state, attempts): {seen}"
            )
        return found


def _finished(delivery: dict[str, Any]) -> int:
    """Attempts made to the end (an attempt is recorded before it is sent: its latency comes after)."""
    return sum(1 for attempt in delivery["attempts"] if attempt["latency_ms"] is not None)
