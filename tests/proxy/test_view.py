"""ProxyView, driven through its public surface while the official client sends through the proxy."""

from __future__ import annotations

from datetime import datetime

import pytest
import securetrading

import gwkit.sandbox
from gwkit.proxy import Proxy, ProxyFaults, SandboxUpstream, start
from gwkit.proxy.view import ProxyView
from support.sandbox import card_auth

SITE = "merchant_site_1"


def auth(**fields) -> dict:
    return card_auth(sitereference=SITE, **fields)


@pytest.fixture
def proxied(tmp_path):
    box = gwkit.sandbox.Sandbox(tmp_path / "sandbox.db", clock_start=datetime(2026, 1, 15, 10))
    faults = ProxyFaults([{"kind": "gateway_error", "code": 60010, "requesttypes": ["ACCOUNTCHECK"]}])
    handle = start(Proxy(SandboxUpstream(box), faults=faults))
    config = securetrading.Config()
    config.username, config.password, config.datacenterurl = "shop", "secret", handle.base_url
    yield handle, securetrading.Api(config)
    handle.stop()
    box.close()


def test_the_view_follows_the_proxy_filters_and_copies_a_row_as_code(proxied):
    handle, api = proxied
    view = ProxyView(handle)  # code written against the proxy's base URL
    assert "No exchanges yet" in view.table.value and view.code.value == ""

    api.process(auth(orderreference="ok-1"))
    api.process(auth(baseamount="ten"))  # a validation problem
    api.process({**auth(), "requesttypedescriptions": ["ACCOUNTCHECK"]})  # meets the fault
    handle.flush()  # the listeners run on the proxy's writer thread
    assert list(view.frame()["#"]) == ["1", "2", "3"]  # refreshed by each exchange
    assert "baseamount: Numeric: digits 0-9 only" in view.table.value
    assert list(view.frame()["gateway's answer"]) == [
        "0 · Ok",
        "30000 · Invalid field",
        "60010 · Bank System Error",
    ]
    assert list(view.request_type.options) == ["any", "ACCOUNTCHECK", "AUTH"]

    view.shown.value = "with problems"
    assert [e.number for e in view.rows] == [2]
    view.shown.value = "with faults"
    assert [(e.number, e.fault) for e in view.rows] == [(3, "gateway_error")]
    view.shown.value = "errors"
    assert [e.number for e in view.rows] == [2, 3]
    view.shown.value = "all"
    view.request_type.value = "AUTH"
    assert [e.number for e in view.rows] == [1, 2]

    view.row.value = 1
    view.style.value = "curl"
    assert view.code.value.startswith("curl ")
    assert handle.base_url + "/json/" in view.code.value
    assert "411111######1111" in view.code.value and "4111111111111111" not in view.code.value
    view.style.value = "securetrading"
    assert "securetrading" in view.code.value and "ok-1" in view.code.value
    assert view.error.value == ""
