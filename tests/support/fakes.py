"""An in-process gateway for client tests: an httpx.MockTransport handler and a client wired to it."""

from __future__ import annotations

import json

import httpx

import gwkit

PAN = "4111111111111111"
MASKED = "411111######1111"
SECURITYCODE = "737"
CARD = {
    "accounttypedescription": "ECOM",
    "baseamount": 1050,
    "pan": PAN,
    "expirydate": "12/2030",
    "securitycode": SECURITYCODE,
}


class FakeGateway:
    """A MockTransport handler: answers one Ok record per request type, or what a test asks for.

    `errors` are raised one per call before any answer; `records`, `status`, `body` and `reference`
    replace parts of the answer."""

    def __init__(self, *, records=None, status=200, body=None, reference=None, errors=()):
        self.requests: list[httpx.Request] = []
        self.records, self.status, self.body, self.reference = records, status, body, reference
        self.errors = list(errors)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.errors:
            raise self.errors.pop(0)
        if self.body is not None:
            return httpx.Response(self.status, content=self.body)
        envelope = json.loads(request.content)
        objects = envelope["request"]
        records = self.records
        if records is None:
            records = [
                {
                    "requesttypedescription": t,
                    "errorcode": "0",
                    "errormessage": "Ok",
                    "transactionreference": f"23-9-{n}",
                }
                for n, t in enumerate(t for obj in objects for t in obj["requesttypedescriptions"])
            ]
        reference = self.reference or objects[0].get("requestreference", "W23-5rd2wbjv")
        return httpx.Response(
            self.status,
            json={"requestreference": reference, "version": "1.00", "secrand": "x7Rq", "response": records},
        )

    @property
    def calls(self) -> int:
        return len(self.requests)

    def envelope(self, index: int = -1) -> dict:
        return json.loads(self.requests[index].content)

    def sent(self, index: int = -1) -> dict:
        """The (first) request object of a call."""
        return self.envelope(index)["request"][0]


def make_client(gateway=None, cls=gwkit.Client, **options):
    gateway = gateway or FakeGateway()
    options = {"sitereference": "test_site12345", "currencyiso3a": "GBP", **options}
    return cls(
        "http://gateway.test:8080/stpp",
        "webservices@example.com",
        "s3cret!",
        transport=httpx.MockTransport(gateway),
        **options,
    ), gateway
