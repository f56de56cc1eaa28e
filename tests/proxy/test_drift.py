"""Drift: a "real" upstream (a sandbox served over HTTP, made to answer differently with its own
fault injection) against the proxy's shadow sandbox, references mapped between the two."""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest
import securetrading

import gwkit.sandbox
from gwkit.proxy import GatewayUpstream, Proxy, SandboxUpstream, Shadow, start
from support.sandbox import card_auth

CLOCK = datetime(2026, 1, 15, 10, 0, 0)


@pytest.fixture
def drifting(tmp_path):
    real = gwkit.sandbox.start(tmp_path / "real.db", clock_start=CLOCK)
    shadow_box = gwkit.sandbox.Sandbox(tmp_path / "shadow.db", clock_start=CLOCK)
    handle = start(Proxy(GatewayUpstream(real.base_url), shadow=Shadow(SandboxUpstream(shadow_box))))
    config = securetrading.Config()
    config.username, config.password, config.datacenterurl = real.username, real.password, handle.base_url
    yield real, handle, securetrading.Api(config)
    handle.stop()
    real.stop()
    shadow_box.close()


def card(site: str, **fields) -> dict:
    return card_auth(sitereference=site, **fields)


def test_each_answer_is_compared_with_the_shadow_sandbox_references_mapped(drifting):
    real, handle, api = drifting
    site = real.sitereference
    auth = api.process(card(site, orderreference="drift-1"))["responses"][0]
    child = {"requesttypedescriptions": ["REFUND"], "sitereference": site, "baseamount": "50"}
    refund = api.process({**child, "parenttransactionreference": auth["transactionreference"]})["responses"][
        0
    ]
    # due to settle today (its own day): refunded on both sides, the parent mapped
    assert refund["errorcode"] == "0"
    query = {
        "requesttypedescriptions": ["TRANSACTIONQUERY"],
        "filter": {
            "sitereference": [{"value": site}],
            "transactionreference": [{"value": auth["transactionreference"]}],
        },
    }
    assert len(api.process(query)["responses"][0]["records"]) == 1

    # The "real" gateway answers the next AUTH with a soft decline the shadow does not give.
    real.faults.add("gateway_error", code=71000, requesttypes=["AUTH"])
    api.process(card(site, orderreference="drift-2"))

    # A payment made upstream by another route: its child cannot be compared, and says so.
    elsewhere = httpx.post(
        real.base_url + "/json/",
        auth=(real.username, real.password),
        json={"alias": real.username, "version": "1.00", "request": [card(site, orderreference="other")]},
    ).json()["response"][0]["transactionreference"]
    api.process({**child, "parenttransactionreference": elsewhere})

    drift = [e.drift for e in handle.exchanges]
    assert drift[:3] == [(), (), ()]  # the same codes, fields and settle status; references aside
    assert "record 0 errorcode: upstream '71000', shadow '0'" in drift[3]
    assert "record 0: errordata only upstream" in drift[3]
    assert "record 0: issuer only in the shadow sandbox" in drift[3]  # the decline has no payment fields
    assert drift[4] == (
        f"not compared: parent {elsewhere} exists only upstream; compared only its validation",
    )
    handle.flush()
    assert "[drift: record 0 errorcode: upstream '71000', shadow '0';" in handle.exchanges[3].summary()
