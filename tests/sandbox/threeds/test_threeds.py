"""3-D Secure v1 end to end over HTTP: THREEDQUERY, the sandbox ACS, the term URL receiver, AUTH.

Every row of the outcome table (interface 3.3, 4.5, 7) against a sandbox on 127.0.0.1, with the
ACS completed headlessly by `ThreeDSecureFlow.complete_acs` (real HTTP posts, as a browser would).
"""

from __future__ import annotations

import base64
import json

import pytest

import gwkit
import gwkit.sandbox
from gwkit.interface.cards import luhn_complete
from gwkit.threeds import AUTH_WITH_PARENT, REDIRECT, RESEND_OR_AUTH, STANDARD_AUTH, ThreeDSecureFlow
from support.databases import Database
from support.threeds import START

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

Y_CARD, N_CARD, U_CARD = "4111110000000211", "4000000000000721", "4000000000000101"
Y_DECLINED_CARD = "4000000000000119"
MASTERCARD_Y, MAESTRO_Y = "5100000000000008", "6759000000000018"
DINERS, DISCOVER = "36000000000008", "6011000000000004"
EXPIRY = "12/2030"


def card(pan: str = Y_CARD, **more):
    return {"pan": pan, "expirydate": EXPIRY, "securitycode": "123", "baseamount": "1050", **more}


@pytest.fixture
def flow(client, receiver):
    f = ThreeDSecureFlow(client, receiver=receiver)
    yield f
    f.close()


def authenticated(client, receiver, outcome: str = "Y", **fields) -> ThreeDSecureFlow:
    """A flow whose customer has come back from the ACS with `outcome`; no AUTH sent yet."""
    f = ThreeDSecureFlow(client, receiver=receiver)
    f.query(**card(**fields))
    assert f.next_step == REDIRECT
    f.complete_acs(outcome)
    assert f.returned
    return f


def pares_payload(pares: str) -> dict:
    body = pares.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


# -- THREEDQUERY ----------------------------------------------------------------------------------


def test_enrolled_card_gets_pareq_md_and_acsurl(flow, gateway):
    record = flow.query(**card(orderreference="order-1"))
    assert record["errorcode"] == "0" and record["errormessage"] == "Ok"
    assert record["requesttypedescription"] == "THREEDQUERY"
    assert record["enrolled"] == "Y" and record["threedversion"] == "1.0.2"
    assert record["acsurl"] == gateway.base_url + "/acs/v1"
    assert record["pareq"] and record["md"] and record["xid"].isalnum()
    assert record["maskedpan"] == "411111######0211"
    assert record["paymenttypedescription"] == "VISA"
    # as the real service answers (captured answers): no amount echoed, settlestatus 0 and its day
    assert "baseamount" not in record and "currencyiso3a" not in record
    assert record["accounttypedescription"] == "ECOM"
    assert record["orderreference"] == "order-1"
    assert (record["settlestatus"], record["settleduedate"]) == (
        "0",
        record["transactionstartedtimestamp"][:10],
    )
    assert "authcode" not in record
    assert flow.next_step == REDIRECT


def test_not_enrolled_card_has_no_acs_fields(flow):
    record = flow.query(**card(N_CARD))
    assert record["errorcode"] == "0" and record["enrolled"] == "N"
    assert not {"md", "pareq", "acsurl"} & set(record)
    assert flow.next_step == AUTH_WITH_PARENT


def test_unknown_card_of_a_supported_scheme_is_not_enrolled(flow):
    assert flow.query(**card(luhn_complete("424242424242000")))["enrolled"] == "N"


@pytest.mark.parametrize("pan", [DINERS, DISCOVER])
def test_scheme_without_3ds_gives_60031(flow, pan):
    record = flow.query(**card(pan))
    assert record["errorcode"] == "60031"
    assert record["errormessage"] == "Invalid acquirer for 3-D Secure"
    assert record["errordata"] == ["pan"]
    assert flow.next_step == STANDARD_AUTH


def test_60031_then_a_standard_auth_without_3ds(flow):
    flow.query(**card(DINERS))
    record = flow.auth()
    assert (
        record["errorcode"] == "0" and "enrolled" not in record and "parenttransactionreference" not in record
    )


def test_stored_card_through_parenttransactionreference(client, receiver):
    stored = client.store(
        pan=Y_CARD, expirydate=EXPIRY, accounttypedescription="CARDSTORE", billingfirstname="Ada"
    ).record
    f = ThreeDSecureFlow(client, receiver=receiver)
    record = f.query(parenttransactionreference=stored["transactionreference"], baseamount="2000")
    assert (
        record["enrolled"] == "Y" and record["parenttransactionreference"] == stored["transactionreference"]
    )
    assert record["maskedpan"] == "411111######0211"
    f.complete_acs("Y")
    auth = f.auth()
    assert auth["errorcode"] == "0" and auth["status"] == "Y" and auth["baseamount"] == "2000"
    assert auth["parenttransactionreference"] == record["transactionreference"]


def test_stored_diners_card_gives_60031(client, receiver):
    stored = client.store(pan=DINERS, expirydate=EXPIRY, accounttypedescription="CARDSTORE").record
    record = ThreeDSecureFlow(client, receiver=receiver).query(
        parenttransactionreference=stored["transactionreference"], baseamount="1050"
    )
    assert record["errorcode"] == "60031" and record["errordata"] == ["parenttransactionreference"]


@pytest.mark.parametrize(
    "fields, errordata",
    [
        ({"accounttypedescription": "MOTO"}, ["accounttypedescription"]),
        ({"termurl": None}, ["termurl"]),
        ({"termurl": "not a url"}, ["termurl"]),
        ({"pan": "4111110000000212"}, ["pan"]),
        ({"expirydate": "13/2030"}, ["expirydate"]),
        ({"expirydate": "01/2026"}, ["expirydate"]),  # expired on the sandbox clock
        ({"baseamount": "0"}, ["baseamount"]),
    ],
)
def test_invalid_threedquery_fields_give_30000(client, receiver, fields, errordata):
    request = {"accounttypedescription": "ECOM", "termurl": receiver.term_url, **card(), **fields}
    record = client.threedquery(validate=False, **{k: v for k, v in request.items() if v is not None}).record
    assert record["errorcode"] == "30000" and record["errormessage"] == "Invalid field"
    assert record["errordata"] == errordata


def test_threedquery_with_an_auth_as_parent_is_refused(client, receiver):
    auth = client.auth(
        pan="4111111111111111", expirydate=EXPIRY, baseamount="1050", accounttypedescription="ECOM"
    ).record
    record = client.threedquery(
        parenttransactionreference=auth["transactionreference"],
        baseamount="1050",
        accounttypedescription="ECOM",
        termurl=receiver.term_url,
    ).record
    assert record["errorcode"] == "30000" and record["errordata"] == ["parenttransactionreference"]


# -- the outcome table -------------------------------------------------------------------------------


def test_enrolled_and_authenticated_visa(client, receiver):
    f = authenticated(client, receiver, "Y")
    record = f.auth(billingfirstname="Ada", billinglastname="Lovelace")
    query = f.query_record
    assert record["errorcode"] == "0" and record["errormessage"] == "Ok"
    assert record["requesttypedescription"] == "AUTH"
    assert (record["enrolled"], record["status"], record["eci"]) == ("Y", "Y", "05")
    assert len(record["cavv"]) == 28 and record["xid"] == query["xid"]
    assert record["parenttransactionreference"] == query["transactionreference"]
    assert record["authcode"].startswith("TEST") and record["settlestatus"] == "0"
    assert record["baseamount"] == "1050" and record["accounttypedescription"] == "ECOM"
    assert record["maskedpan"] == "411111######0211"
    assert record["threedversion"] == "1.0.2"


def test_mastercard_eci_is_02(client, receiver):
    record = authenticated(client, receiver, "Y", pan=MASTERCARD_Y).auth()
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "02") and record["cavv"]


def test_enrolled_not_authenticated_is_60022_without_bank(client, receiver, gateway):
    f = authenticated(client, receiver, "N")
    record = f.auth()
    assert record["errorcode"] == "60022" and record["errormessage"] == "Unauthenticated"
    assert record["settlestatus"] == "3" and record["status"] == "N" and record["enrolled"] == "Y"
    assert not {"authcode", "acquirerresponsecode", "cavv", "eci"} & set(record)
    assert record["parenttransactionreference"] == f.query_record["transactionreference"]
    kept = client.transaction_query(transactionreference=record["transactionreference"]).query_records
    assert kept[0]["errorcode"] == "60022" and kept[0]["settlestatus"] == "3"


def test_cardholder_cancel_is_not_authenticated(client, receiver):
    record = authenticated(client, receiver, "cancel").auth()
    assert (record["errorcode"], record["status"]) == ("60022", "N")


def test_attempted_and_unavailable_outcomes(client, receiver):
    attempted = authenticated(client, receiver, "A").auth()
    assert (attempted["errorcode"], attempted["status"], attempted["eci"]) == ("0", "A", "06")
    assert attempted["cavv"]
    unavailable = authenticated(client, receiver, "U").auth()
    assert (unavailable["errorcode"], unavailable["status"], unavailable["eci"]) == ("0", "U", "07")
    assert "cavv" not in unavailable


@pytest.mark.parametrize("fields", [{"baseamount": "70000"}, {"pan": Y_DECLINED_CARD}])
def test_authenticated_but_bank_declines(client, receiver, fields):
    record = authenticated(client, receiver, "Y", **fields).auth()
    assert record["errorcode"] == "70000" and record["errormessage"] == "Decline"
    assert record["status"] == "Y" and record["cavv"] and record["settlestatus"] == "3"


def test_not_enrolled_then_auth_with_parent(flow):
    query = flow.query(**card(N_CARD, billingtown="Leeds"))
    record = flow.auth(billingfirstname="Ada")
    assert record["errorcode"] == "0" and record["enrolled"] == "N"
    assert record["parenttransactionreference"] == query["transactionreference"]
    assert "status" not in record and "cavv" not in record
    assert record["baseamount"] == "1050" and record["maskedpan"] == "400000######0721"


def test_unknown_enrolment_may_be_resent_then_auth_with_parent(flow):
    first = flow.query(**card(U_CARD))
    assert first["enrolled"] == "U" and flow.next_step == RESEND_OR_AUTH
    again = flow.requery()
    assert again["enrolled"] == "U" and again["transactionreference"] != first["transactionreference"]
    record = flow.auth()
    assert record["errorcode"] == "0" and record["enrolled"] == "U"
    assert record["parenttransactionreference"] == again["transactionreference"]


def test_altered_pares_is_refused_and_the_genuine_one_still_works(client, receiver):
    f = authenticated(client, receiver, "N")
    payload, signature = f.pares.split(".")
    data = pares_payload(f.pares)
    forged = base64.urlsafe_b64encode(json.dumps({**data, "status": "Y"}).encode()).decode().rstrip("=")
    for altered in (f"{forged}.{signature}", f.pares[:-1] + ("A" if f.pares[-1] != "A" else "B"), "x" * 40):
        record = client.auth(md=f.md, pares=altered).record
        assert record["errorcode"] == "30000" and record["errordata"] == ["pares"]
    assert f.auth()["errorcode"] == "60022"


def test_pares_of_another_session_is_refused(client, receiver):
    one, other = authenticated(client, receiver, "Y"), authenticated(client, receiver, "Y")
    record = client.auth(md=one.md, pares=other.pares).record
    assert record["errorcode"] == "30000" and record["errordata"] == ["pares"]


def test_md_completes_one_auth_only(client, receiver):
    f = authenticated(client, receiver, "Y")
    assert f.auth()["errorcode"] == "0"
    again = client.auth(md=f.md, pares=f.pares).record
    assert again["errorcode"] == "30000" and again["errordata"] == ["md"]


def test_parent_threedquery_completes_one_auth_only(client, flow):
    query = flow.query(**card(N_CARD))
    assert flow.auth()["errorcode"] == "0"
    again = client.auth(parenttransactionreference=query["transactionreference"]).record
    assert again["errorcode"] == "30000" and again["errordata"] == ["parenttransactionreference"]


def test_enrolled_threedquery_cannot_be_a_parent(client, flow):
    query = flow.query(**card())
    record = client.auth(parenttransactionreference=query["transactionreference"]).record
    assert record["errorcode"] == "30000" and record["errordata"] == ["parenttransactionreference"]


def test_unknown_md_and_other_amount_are_refused(client, receiver):
    record = client.auth(md="no-such-session", pares="x.y").record
    assert record["errorcode"] == "30000" and record["errordata"] == ["md"]
    f = authenticated(client, receiver, "Y")
    raw = {
        "requesttypedescriptions": ["AUTH"],
        "md": f.md,
        "pares": f.pares,
        "baseamount": "999",
        "sitereference": client.sitereference,
    }  # the spec does not let an enrolled AUTH carry baseamount
    record = client.send(raw, validate=False).record
    assert record["errorcode"] == "30000" and record["errordata"] == ["baseamount"]
    assert f.auth()["errorcode"] == "0"  # the refused request used nothing up


def test_maestro_ecommerce_needs_3ds(client, receiver):
    plain = client.auth(
        pan=MAESTRO_Y, expirydate=EXPIRY, securitycode="123", baseamount="1050", accounttypedescription="ECOM"
    ).record
    assert plain["errorcode"] == "60022" and plain["errormessage"] == "Unauthenticated"
    assert plain["errordata"] == ["md", "pares"] and "transactionreference" not in plain
    moto = client.auth(
        pan=MAESTRO_Y, expirydate=EXPIRY, securitycode="123", baseamount="1050", accounttypedescription="MOTO"
    ).record
    assert moto["errorcode"] == "0"
    secured = authenticated(client, receiver, "Y", pan=MAESTRO_Y).auth()
    assert (secured["errorcode"], secured["status"], secured["eci"]) == ("0", "Y", "02")
    attempted = authenticated(client, receiver, "A", pan=MAESTRO_Y).auth()
    assert (attempted["errorcode"], attempted["settlestatus"]) == ("60022", "3")


def test_maestro_not_enrolled_cannot_pay_online(flow):
    flow.query(**card(luhn_complete("675900000000002")))  # not a test card: not enrolled
    assert flow.next_step == AUTH_WITH_PARENT
    record = flow.auth()
    assert record["errorcode"] == "60022" and record["errordata"] == ["md", "pares"]


def test_3ds_auth_may_not_become_moto(client, flow):
    query = flow.query(**card(N_CARD))
    record = client.auth(
        parenttransactionreference=query["transactionreference"], accounttypedescription="MOTO"
    ).record
    assert record["errorcode"] == "30000" and record["errordata"] == ["accounttypedescription"]


def test_md_and_pan_are_not_kept_in_clear(client, receiver, module_db_path):
    f = authenticated(client, receiver, "Y")
    f.auth()
    kept = client.transaction_query(
        transactionreference=f.query_record["transactionreference"]
    ).query_records[0]
    assert "md" not in kept and kept["enrolled"] == "Y"
    data = Database(module_db_path).at_rest()
    assert f.md.encode() not in data and Y_CARD.encode() not in data


# -- the two-hour limit, on a sandbox of its own (the clock only moves forward) ---------------------


def test_session_older_than_two_hours_is_refused(db_path, receiver):
    with (
        gwkit.sandbox.start(db_path, clock_start=START) as handle,
        gwkit.Client(
            handle.base_url,
            handle.username,
            handle.password,
            sitereference=handle.sitereference,
            currencyiso3a="GBP",
        ) as client,
    ):
        late = authenticated(client, receiver, "Y")
        handle.advance(by="PT1H59M")
        in_time = authenticated(client, receiver, "Y")
        assert authenticated(client, receiver, "Y").auth()["errorcode"] == "0"
        handle.advance(by="PT2M")  # late: 2 h 1 min old; in_time: 2 min old
        refused = client.auth(md=late.md, pares=late.pares).record
        assert refused["errorcode"] == "30000" and refused["errordata"] == ["md"]
        assert in_time.auth()["errorcode"] == "0"
        expired = authenticated(client, receiver, "Y")
        handle.advance(by="PT2H1M")
        assert client.auth(md=expired.md, pares=expired.pares).record["errordata"] == ["md"]


def test_kept_records_after_reset_are_gone(db_path, receiver):
    with (
        gwkit.sandbox.start(db_path, clock_start=START) as handle,
        gwkit.Client(
            handle.base_url,
            handle.username,
            handle.password,
            sitereference=handle.sitereference,
            currencyiso3a="GBP",
        ) as client,
    ):
        f = authenticated(client, receiver, "Y")
        handle.reset()
        assert client.auth(md=f.md, pares=f.pares).record["errordata"] == ["md"]
        assert Database(db_path).count("threeds_sessions") == 0


def test_sessions_and_the_signing_key_survive_a_restart(db_path, receiver):
    path = db_path
    with (
        gwkit.sandbox.start(path, clock_start=START) as handle,
        gwkit.Client(
            handle.base_url,
            handle.username,
            handle.password,
            sitereference=handle.sitereference,
            currencyiso3a="GBP",
        ) as client,
    ):
        f = authenticated(client, receiver, "Y")
    with (
        gwkit.sandbox.start(path) as handle,
        gwkit.Client(
            handle.base_url,
            handle.username,
            handle.password,
            sitereference=handle.sitereference,
            currencyiso3a="GBP",
        ) as client,
    ):
        record = client.auth(md=f.md, pares=f.pares).record
        assert (record["errorcode"], record["status"]) == ("0", "Y")


def test_signed_values_detect_any_change():
    from gwkit.sandbox.gateway.threeds import BadToken, sign, verify

    key = "00" * 32
    token = sign(key, "pares", {"ref": "1-9-1", "status": "N"})
    assert verify(key, "pares", token) == {"ref": "1-9-1", "status": "N"}
    payload, signature = token.split(".")
    forged = base64.urlsafe_b64encode(b'{"ref":"1-9-1","status":"Y"}').decode().rstrip("=")
    for bad_key, purpose, value in [
        (key, "pares", f"{forged}.{signature}"),
        ("11" * 32, "pares", token),
        (key, "pareq", token),
        (key, "pares", payload),
        (key, "pares", ""),
    ]:
        with pytest.raises(BadToken):
            verify(bad_key, purpose, value)


def test_the_soft_decline_amount_is_authorised_once_the_customer_authenticated(client, receiver):
    """71000 (gwkit's soft-decline test amount) declines an e-commerce AUTH without 3-D Secure; the
    story continues with 3-D Secure, and the authenticated AUTH of the same amount is authorised."""
    soft = client.auth(**card(N_CARD, baseamount="71000"), accounttypedescription="ECOM")
    assert soft.record["errorcode"] == "71000"
    f = authenticated(client, receiver, "Y", baseamount="71000")
    try:
        record = f.auth()
        assert (record["errorcode"], record["status"], record["baseamount"]) == ("0", "Y", "71000")
    finally:
        f.close()


def test_a_store_without_its_signing_key_is_a_clear_error(tmp_path):
    from gwkit.sandbox.gateway.store import StoreError, open_store
    from gwkit.sandbox.gateway.threeds import KEY_NAME, SCHEMA, signing_key

    store = open_store(tmp_path / "s.db", schemas=[SCHEMA])
    try:
        assert len(signing_key(store)) == 64
        with store.write() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (KEY_NAME,))
        with pytest.raises(StoreError, match="3-D Secure signing key"):
            signing_key(store)
    finally:
        store.close()
