"""The checklist tests' fixtures: one sandbox for the module (`box`), and `run` to start a checklist
in front of it with the reference shop pointing at it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from html import unescape
from typing import Any

import httpx
import pytest

import gwkit.sandbox
from gwkit import checklist
from gwkit.checklist.shop import ShopHandle, ShopSettings, serve_shop
from gwkit.journal import Journal
from gwkit.proxy import SandboxUpstream

CLOCK = datetime(2026, 1, 15, 10, 0, 0)
NOT_ENROLLED = "4000000000000721"  # authorised, not enrolled in 3-D Secure: THREEDQUERY + AUTH pays at once
SHOP_TIMEOUT = 0.5  # how long the reference shop waits for an answer (the timeout step holds it)


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    sandbox = gwkit.sandbox.Sandbox(tmp_path_factory.mktemp("checklist") / "sandbox.db", clock_start=CLOCK)
    yield sandbox
    sandbox.close()


def answer_challenge(box, acsurl: str, creq: str, outcome: str = "submit") -> str:
    """Play the customer's browser at the sandbox's ACS: open the challenge with the creq, enter the
    one-time code shown; the cres the ACS posts back to the shop."""
    with httpx.Client(transport=gwkit.sandbox.SandboxTransport(box)) as browser:
        page = browser.post(acsurl, data={"creq": creq})
        code = re.search(r"id='acs2-otp-shown'[^>]*>(\d{6})<", page.text).group(1)
        back = browser.post(f"{acsurl}/complete", data={"creq": creq, "otp": code, "outcome": outcome})
    return unescape(re.search(r"name='cres' value='([^']*)'", back.text).group(1))


def answer_version_1(box, acsurl: str, pareq: str, md: str, termurl: str) -> dict[str, str]:
    """The customer at the sandbox's version 1 ACS, authenticating (Y): the md and pares it posts back."""
    form = {"PaReq": pareq, "MD": md, "TermUrl": termurl}
    with httpx.Client(transport=gwkit.sandbox.SandboxTransport(box)) as browser:
        browser.post(acsurl, data=form)
        back = browser.post(f"{acsurl}/complete", data={**form, "outcome": "Y"})
    found = dict(re.findall(r"name='(PaRes|MD)' value='([^']*)'", back.text))
    return {"md": unescape(found["MD"]), "pares": unescape(found["PaRes"])}


@pytest.fixture
def customer_at_acs(box):
    """answer(acsurl, creq, outcome="submit") -> cres: the customer at the module's sandbox's ACS."""
    return lambda acsurl, creq, outcome="submit": answer_challenge(box, acsurl, creq, outcome)


@dataclass
class Run:
    handle: checklist.ChecklistHandle
    shop: ShopHandle | None
    lines: list[str]
    box: Any = None

    def pay_with_3ds(self, order: str) -> list[str]:
        """Pay with 3-D Secure in the shop and, asked for a challenge (version 1: sent to the ACS),
        answer it as the customer and come back to the shop: what the shop did."""
        assert self.shop is not None
        paid = self.pay(order, threeds="v2")
        if paid["outcome"] != "challenge":
            return paid["did"]
        if "pareq" in paid:
            returned = answer_version_1(self.box, paid["acsurl"], paid["pareq"], paid["md"], paid["termurl"])
        else:
            returned = {"cres": answer_challenge(self.box, paid["acsurl"], paid["creq"])}
        back = self.shop.returned(
            orderreference=order, transactionreference=paid["transactionreference"], **returned
        )
        assert back["outcome"] == "paid", back
        return [*paid["did"], *back["did"]]

    def pay(self, order: str, **fields: str) -> dict[str, Any]:
        assert self.shop is not None
        card = {
            "orderreference": order,
            "pan": NOT_ENROLLED,
            "expirydate": "12/2030",
            "securitycode": "123",
            "baseamount": "1050",
            "currencyiso3a": "GBP",
        }
        return self.shop.pay(**{**card, **fields})


@pytest.fixture
def run(box, tmp_path):
    """run(behaviour="right"|"naive"|None, steps=None) -> Run: a checklist on loopback in front of
    the module's sandbox, journalled to tmp_path, and the reference shop paying through it."""
    started: list[Run] = []

    def start(behaviour: str | None = "right", steps: list[str] | None = None) -> Run:
        lines: list[str] = []
        handle = checklist.start(
            SandboxUpstream(box),
            steps=checklist.steps_named(steps) if steps is not None else None,
            journal=Journal(tmp_path / "journal.db"),
            echo=lines.append,
        )
        shop = None
        if behaviour is not None:
            shop = serve_shop(ShopSettings(handle.base_url, behaviour=behaviour, timeout=SHOP_TIMEOUT))
        started.append(Run(handle, shop, lines, box))
        return started[-1]

    yield start
    for each in started:
        if each.shop is not None:
            each.shop.stop()
        each.handle.stop()
