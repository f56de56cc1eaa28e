"""The official client's own module tests (`securetrading/test/module_test_api.py`, written for the
real test site) run against the sandbox over real HTTP.

Left out: the tests of other payment methods and products the sandbox does not offer (SOFORT, ACH,
PayPal ORDER and ORDERDETAILS, CURRENCYRATE) and the two that check TLS certificates (the
sandbox serves plain HTTP on loopback). The module makes its parents once, PayPal AUTHs among them,
and then sleeps five minutes; here they are made before it runs: card AUTHs, settled by moving the
sandbox's clock a day, and a cachetoken made after the move (it lives 15 minutes).
"""

from __future__ import annotations

import argparse
import unittest

import pytest
import securetrading
from securetrading.test import module_test_api  # the module, not its class: pytest would collect that

import gwkit.sandbox
from support.sandbox import CLOCK, SITE

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

OTHER_PRODUCTS = {"test_auth_sofort", "test_auth_ach", "test_order", "test_orderdetails"}
OTHER_PRODUCTS |= {"test_currencyrate"}
TLS_CERTIFICATES = {"test_invalid_request_corrupt_cacerts_file", "test_invalid_request_invalid_cacerts_file"}
RUN = sorted(
    set(unittest.TestLoader().getTestCaseNames(module_test_api.Module_Test_Api))
    - OTHER_PRODUCTS
    - TLS_CERTIFICATES
)
CARD = {"pan": "4111111111111111", "expirymonth": "11", "expiryyear": "2031", "securitycode": "123"}


@pytest.fixture(scope="module")
def handle(module_db_path):
    started = gwkit.sandbox.start(module_db_path, clock_start=CLOCK)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def against_sandbox(handle) -> type[module_test_api.Module_Test_Api]:
    """Module_Test_Api pointed at the sandbox, its parents made the sandbox's way."""
    arguments = argparse.Namespace(
        sitereference=SITE,
        username=handle.username,
        password=handle.password,
        overridecacerts="false",
        transfersleeptime=0,
        datacenterurl=handle.base_url,
    )
    config = securetrading.Config()
    config.username, config.password, config.datacenterurl = handle.username, handle.password, handle.base_url
    api = securetrading.Api(config)

    def made(request: dict) -> dict:
        base = {"sitereference": SITE, "accounttypedescription": "ECOM", "currencyiso3a": "GBP"}
        (record,) = api.process({**base, **request})["responses"]
        assert record["errorcode"] == "0", record
        return record

    auth = {"requesttypedescriptions": ["AUTH"], "baseamount": "100", **CARD}
    settled = {key: made(auth) for key in ("settled_auth", "settled_auth_refund")}
    handle.advance(by="P1D")  # the two AUTHs settle (the real site's PayPal parents arrive settled)
    parents = {
        **settled,
        "pending_auth": made(auth),
        "cachetoken": made({"requesttypedescriptions": ["CACHETOKENISE"], **CARD}),  # lives 15 minutes
    }
    return type(
        "AgainstSandbox",
        (module_test_api.Module_Test_Api,),
        {"PASSED_ARGS": arguments, "PARENT_RESPONSES": parents},
    )


@pytest.mark.parametrize("name", RUN)
def test_the_official_module_test_passes(against_sandbox, name):
    result = unittest.TestResult()
    against_sandbox(name).run(result)
    problems = [text for _, text in result.errors + result.failures]
    assert not problems, problems[0]
    assert result.testsRun == 1 and not result.skipped


def test_every_module_test_is_run_or_left_out_by_name():
    assert (
        len(RUN) == 30
        and set(unittest.TestLoader().getTestCaseNames(module_test_api.Module_Test_Api))
        >= OTHER_PRODUCTS | TLS_CERTIFICATES
    )
