"""The subscription panel, driven as a user would: `.value` and `.click()` on its widgets, with
a sandbox on a real loopback port. A callback error fails the test (tests/conftest.py)."""

from __future__ import annotations

import re
from datetime import date

import ipywidgets as widgets
import pytest

import gwkit
import gwkit.sandbox
from gwkit.widgets.subscription_panel import DRAW_INTERVAL, DayProgress, SubscriptionPanel
from support.widget_tree import all_html, shown_beside


@pytest.fixture
def panel(sandbox):
    with gwkit.Client(
        sandbox.base_url,
        sandbox.username,
        sandbox.password,
        sitereference=sandbox.sitereference,
        currencyiso3a="GBP",
    ) as client:
        yield SubscriptionPanel(client, sandbox=sandbox)


def rows(panel: SubscriptionPanel) -> int:
    body = panel.payments.value.partition("<tbody>")[2]
    return body.count("<tr>")  # body rows (the header row is in <thead>)


def test_create_then_walk_the_life_cycle_with_the_clock(panel, sandbox):
    assert "No subscription yet" in panel.state.value and panel.amount_button.disabled
    panel.form.set_values(subscriptionbegindate="2026-01-31", subscriptionfinalnumber="4", baseamount="1050")
    assert panel.form.problems == []
    panel.form.send_button.click()
    sub = panel.subscription
    assert sub is not None and sub.state == "pending" and ">pending<" in panel.state.value
    assert panel.reference.value == sub.reference and not panel.amount_button.disabled
    assert "No automated payment yet" in panel.payments.value
    assert "2026-01-31" in panel.schedule.value  # the next due dates

    panel.day_button.click()  # the first payment settles; the subscription is scheduled
    assert sub.state == "scheduled" and "1 started" in panel.report.value
    assert "2026-01-11" in panel.now.value

    panel.month_button.click()
    assert rows(panel) == 1 and "2026-01-31" in panel.payments.value and "authorised" in panel.payments.value
    assert "2026-02-28" in panel.schedule.value

    panel.amount.value = "2000"
    panel.amount_button.click()
    assert sub.record["baseamount"] == "2000" and "changed" in panel.message.value

    panel.active.value = "0"
    panel.active_button.click()
    assert sub.state == "suspended" and ">suspended<" in panel.state.value
    panel.to_date.value = date(2026, 4, 5)
    panel.to_date_button.click()
    assert rows(panel) == 1 and panel.progress.value == panel.progress.max == 53
    assert panel.last_report["made"] == 0
    assert panel.to_date.value == date(2026, 5, 5)  # the date reached is past: a month ahead is suggested

    panel.active.value = "1"
    panel.active_button.click()
    panel.day_button.click()  # caught up: payments 3 and 4, then the final number stops it
    assert panel.last_report["caught_up"] == 2 and panel.last_report["stopped_subscriptions"] == [
        sub.reference
    ]
    assert rows(panel) == 3 and sub.state == "stopped" and "No payment to come" in panel.schedule.value
    assert panel.payments.value.count(">£20.00<") == 2  # the later payments have the new amount, in pounds
    numbers = [int(n) for n in re.findall(r"<tr>\s*<td>(\d+)</td>", panel.payments.value)]
    assert len(numbers) == 3 and numbers == sorted(numbers, reverse=True)  # newest first

    panel.final_number.value = 6
    panel.final_button.click()
    assert sub.state == "scheduled"
    panel.year_button.click()
    assert panel.progress.value == panel.progress.max == 365
    assert rows(panel) == 5 and sub.state == "stopped"


def test_load_an_existing_subscription_by_reference(panel, sandbox):
    created = gwkit.subscription.Subscription.create(
        panel.client,
        baseamount=70000,
        orderreference="declined",
        pan="4111111111111111",
        expirydate="12/2030",
        subscriptionfrequency=1,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2026-02-01",
    )
    panel.reference.value = created.reference
    panel.load_button.click()
    assert panel.subscription.reference == created.reference
    assert ">declined<" in panel.state.value and "never" in panel.schedule.value


def test_mistakes_show_a_clear_error(panel, sandbox):
    panel.form.send_button.click()
    before = panel.subscription.record["baseamount"]
    panel.amount.value = "10.50"  # shown beside the amount as it changes, its button disabled
    assert "<code>baseamount</code>: Numeric: digits 0-9 only" in shown_beside(panel, panel.amount)
    assert panel.amount_button.disabled and not panel.final_button.disabled
    panel.amount_button.click()  # pressed anyway: checked again, nothing is sent
    assert "not sent" in panel.message.value and "Traceback" not in all_html(panel)
    assert panel.subscription.refresh().record["baseamount"] == before
    panel.amount.value = "1500"
    assert shown_beside(panel, panel.amount) == "" and not panel.amount_button.disabled
    panel.to_date.value = date(2026, 1, 1)
    with pytest.raises(ValueError, match="only moves forward"):
        panel.to_date_button.click()


def test_the_reference_to_load_is_checked_beside_it(panel):
    assert panel.load_button.disabled and "gwkit-problem" not in all_html(panel)  # blank: nothing yet
    panel.reference.value = "1-2-3 4"
    assert panel.load_button.disabled
    assert "<code>transactionreference</code>: Alphanumeric including hyphens" in shown_beside(
        panel, panel.reference
    )
    panel.reference.value = "1-2-3"
    assert not panel.load_button.disabled and shown_beside(panel, panel.reference) == ""


def test_without_a_sandbox_the_clock_controls_are_disabled(sandbox):
    with gwkit.Client(
        sandbox.base_url, sandbox.username, sandbox.password, sitereference=sandbox.sitereference
    ) as client:
        panel = SubscriptionPanel(client)
    assert panel.day_button.disabled and panel.to_date_button.disabled and "real gateway" in panel.now.value


@pytest.fixture
def connection(sandbox):
    from gwkit.config import Target
    from gwkit.connect import Connection

    target = Target("sandbox", sandbox.base_url, sandbox.username, sandbox.sitereference, "GBP", "test")
    with Connection(target, sandbox.password, sandbox=sandbox) as gw:
        yield gw


def subscribe(client, orderreference: str):
    return gwkit.subscription.Subscription.create(
        client,
        baseamount=1050,
        orderreference=orderreference,
        pan="4111111111111111",
        expirydate="12/2030",
        subscriptionfrequency=1,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2026-01-31",
    )


def test_the_panel_redraws_when_the_clock_moves_elsewhere(connection, sandbox):
    panel = SubscriptionPanel(connection, subscription=subscribe(connection, "mine"))
    assert "2026-01-10" in panel.now.value and "No automated payment yet" in panel.payments.value
    sandbox.advance(to="2026-02-01T09:00:00")  # in another cell: the panel is told, no polling
    assert "2026-02-01" in panel.now.value
    assert rows(panel) == 1 and "2026-01-31" in panel.payments.value
    other = SubscriptionPanel(connection)  # another panel moves the clock: the first follows too
    other.day_button.click()
    assert "2026-02-02" in panel.now.value


def test_the_panel_redraws_when_its_subscription_is_changed_elsewhere(connection, sandbox):
    sub = subscribe(connection, "changed-in-a-cell")
    panel = SubscriptionPanel(connection, subscription=sub)
    gwkit.subscription.Subscription.from_reference(connection, sub.reference).update(transactionactive="0")
    assert ">suspended<" in panel.state.value


def test_the_clock_report_counts_this_subscriptions_payments_apart(connection, sandbox):
    subscribe(connection, "someone-else")
    panel = SubscriptionPanel(connection, subscription=subscribe(connection, "mine"))
    sandbox.advance(by="P1D")  # both first payments settle; both subscriptions are scheduled
    panel.to_date.value = date(2026, 2, 1)
    panel.to_date_button.click()
    assert "<b class='gwkit-own-payments'>1</b> payment(s) of this subscription" in panel.report.value
    assert "in the whole sandbox <b>2</b> payment(s) made" in panel.report.value


def test_a_closed_panel_stops_listening(connection, sandbox):
    panel = SubscriptionPanel(connection)
    assert len(connection.changes) == 1
    panel.close()  # the widget is gone: it hears of no more changes
    assert len(connection.changes) == 0
    sandbox.advance(by="P1D")  # nothing is redrawn for a closed panel


class StepClock:
    """A clock that moves only when told: no test waits on the real one."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_clock_move_draws_its_progress_at_most_every_interval_and_its_last_report_at_the_end():
    bar, text = widgets.IntProgress(), widgets.HTML()
    drawn: list[int] = []
    bar.observe(lambda change: drawn.append(change["new"]), names="value")
    clock = StepClock()
    progress = DayProgress(bar, text, clock=clock)
    progress("subscriptions 2026-01-01", 5, 10)  # the first report is drawn at once
    progress("subscriptions 2026-01-01", 10, 10)  # no time has passed: not drawn
    clock.now += DRAW_INTERVAL
    progress("subscriptions 2026-01-02", 3, 8)
    progress("subscriptions 2026-01-03", 7, 9)
    assert drawn == [5, 3] and "2026-01-02: 3 of 8" in text.value
    progress.finish()
    assert drawn == [5, 3, 7] and bar.max == 9 and "2026-01-03: 7 of 9 subscriptions" in text.value
    progress.finish()  # nothing left to draw
    assert drawn == [5, 3, 7]


def test_the_panel_shows_the_last_day_run_after_a_move(panel, sandbox):
    panel.form.set_values(subscriptionbegindate="2026-01-31", subscriptionfinalnumber="0", baseamount="1050")
    panel.form.send_button.click()
    panel.day_button.click()
    panel.year_button.click()  # payments on the 31st or the month's last day: the last run was on 2026-12-31
    assert "subscriptions 2026-12-31: 1 of 1 subscriptions" in panel.progress_text.value
