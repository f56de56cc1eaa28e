"""The EMV 3-D Secure messages gwkit reads and builds: the `threedresponse` JWT as the makers'
browser library builds it (V3 `threedresponse-converter/`, commit 337c1617: an unsigned JWT,
header `{"alg": "none"}`, parts in base64 without padding, the Payload's Validated, ActionCode,
ErrorNumber 0/1000, PAResStatus and ThreeDSVersion from the CRes, and the CRes itself), the
3DS method's `threeDSMethodData`, and base64url JSON read with or without padding."""

from __future__ import annotations

import base64
import json

import pytest

from gwkit.threeds import ThreeDSecureError, threedresponse_jwt
from gwkit.threeds.messages import decode_b64_json, encode_b64url_json, method_data, read_jwt

CRES = {
    "messageType": "CRes",
    "messageVersion": "2.1.0",
    "threeDSServerTransID": "8a880dc0-d2d2-4067-bcb1-b08d1690b26e",
    "acsTransID": "d7c1ee99-9478-44a6-b1f2-391e29c6b340",
    "transStatus": "Y",
    "challengeCompletionInd": "Y",
}


def part(text: str) -> dict:
    return json.loads(base64.b64decode(text + "=" * (-len(text) % 4)))


def test_a_successful_challenge_gives_the_libraries_jwt():
    cres = encode_b64url_json(CRES)
    token = threedresponse_jwt("SUCCESS", cres=cres, description="verification success", now=1_700_000_000)
    header, claims, signature = token.split(".")
    assert part(header) == {"alg": "none"} and signature == ""
    assert "=" not in header + claims  # padding stripped, as btoa(...).replace(/=+$/, '')
    body = part(claims)
    assert (body["iat"], body["exp"]) == (1_700_000_000, 1_700_000_000 + 7200)
    assert {k: body[k] for k in ("iss", "aud", "ConsumerSessionId", "ReferenceId")} == dict.fromkeys(
        ("iss", "aud", "ConsumerSessionId", "ReferenceId"), ""
    )
    payload = body["Payload"]
    assert payload["Validated"] is True and payload["ActionCode"] == "SUCCESS"
    assert payload["ErrorNumber"] == 0 and payload["ErrorDescription"] == "verification success"
    assert payload["CRes"] == cres
    extended = payload["Payment"]["ExtendedData"]
    assert payload["Payment"]["Type"] == "CCA"
    assert (extended["PAResStatus"], extended["ThreeDSVersion"], extended["SignatureVerification"]) == (
        "Y",
        "2.1.0",
        "Y",
    )
    assert read_jwt(token) == body


@pytest.mark.parametrize("code", ["FAILURE", "ERROR"])
def test_a_failed_or_broken_challenge_is_not_validated(code):
    cres = encode_b64url_json({**CRES, "transStatus": "N"}) if code == "FAILURE" else None
    payload = read_jwt(threedresponse_jwt(code, cres=cres, description="challenge error"))["Payload"]
    assert payload["Validated"] is False and payload["ErrorNumber"] == 1000 and payload["ActionCode"] == code
    assert payload["Payment"]["ExtendedData"]["PAResStatus"] == ("N" if cres else "")
    assert ("CRes" in payload) is (cres is not None)


def test_an_unreadable_cres_leaves_the_status_empty_as_the_library_does():
    payload = read_jwt(threedresponse_jwt("FAILURE", cres="invalid"))["Payload"]
    assert payload["CRes"] == "invalid" and payload["Payment"]["ExtendedData"]["PAResStatus"] == ""


def test_an_unknown_action_code_is_refused():
    with pytest.raises(ThreeDSecureError, match="action code 'MAYBE': expected one of SUCCESS"):
        threedresponse_jwt("MAYBE")


def test_base64url_json_with_or_without_padding_and_a_clear_error_otherwise():
    text = encode_b64url_json({"a": "ÿ>?"})
    assert "=" not in text and decode_b64_json(text, "x") == decode_b64_json(text + "==", "x") == {"a": "ÿ>?"}
    with pytest.raises(ThreeDSecureError, match="threedpayload is not base64-encoded JSON"):
        decode_b64_json("not json at all!", "threedpayload")
    with pytest.raises(ThreeDSecureError, match="cres is not a JSON object"):
        decode_b64_json(encode_b64url_json({}).replace("e30", "WzFd"), "cres")


def test_method_data_names_the_transaction_and_the_notification_url():
    data = decode_b64_json(method_data("tx-1", "https://gw.example/notify"), "threeDSMethodData")
    assert data == {
        "threeDSServerTransID": "tx-1",
        "threeDSMethodNotificationURL": "https://gw.example/notify",
    }
