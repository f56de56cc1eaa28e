"""gwkit.AsyncClient: the same behaviour as Client, awaited."""

from __future__ import annotations

import asyncio
import base64
import inspect

import httpx
import pytest

import gwkit
from gwkit import (
    AuthenticationError,
    ConnectError,
    GatewayError,
    ResponseFormatError,
    TransportError,
    ValidationError,
)
from support.fakes import CARD, MASKED, PAN, FakeGateway, make_client


def run(coroutine):
    return asyncio.run(coroutine)


def async_client(gateway=None, **options):
    return make_client(gateway, cls=gwkit.AsyncClient, **options)


def test_same_public_methods_as_the_sync_client():
    public = {n for n in dir(gwkit.Client) if not n.startswith("_")}
    assert public == {n for n in dir(gwkit.AsyncClient) if not n.startswith("_")} - {"aclose"}
    assert (
        inspect.signature(gwkit.Client.__init__).parameters.keys()
        == inspect.signature(gwkit.AsyncClient.__init__).parameters.keys()
    )


def test_posts_json_with_basic_auth_to_the_path_of_the_base_url():
    async def main():
        client, gateway = async_client()
        async with client:
            response = await client.auth(**CARD)
        return response, gateway

    response, gateway = run(main())
    [request] = gateway.requests
    assert str(request.url) == "http://gateway.test:8080/stpp/json/"
    assert (
        request.headers["authorization"]
        == "Basic " + base64.b64encode(b"webservices@example.com:s3cret!").decode()
    )
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "application/json"
    sent = gateway.sent()
    assert sent["pan"] == PAN and sent["baseamount"] == "1050" and sent["sitereference"] == "test_site12345"
    assert response.ok and response.requestreference == sent["requestreference"]


def test_every_request_method():
    async def main():
        client, gateway = async_client()
        async with client:
            await client.store(accounttypedescription="CARDSTORE", pan=PAN, expirydate="12/2030")
            await client.threedquery(
                termurl="https://m.example/t",
                accounttypedescription="ECOM",
                baseamount=1050,
                pan=PAN,
                expirydate="12/2030",
            )
            await client.cachetokenise(pan=PAN, expirymonth="12", expiryyear="2030")
            await client.transaction_query(transactionreference="1-2-3")
            await client.transaction_update(transactionreference="1-2-3", updates={"transactionactive": 0})
            await client.send(
                {
                    "requesttypedescriptions": ["AUTH"],
                    "sitereference": "test_site12345",
                    "parenttransactionreference": "23-9-1",
                }
            )
            await client.auth_subscription(
                accounttypedescription="ECOM",
                baseamount=1050,
                orderreference="s-1",
                pan=PAN,
                expirydate="12/2030",
                subscriptiontype="RECURRING",
                subscriptionunit="MONTH",
                subscriptionfrequency=1,
                subscriptionnumber=1,
                subscriptionfinalnumber=12,
                subscriptionbegindate="2030-01-31",
                credentialsonfile=1,
            )
        return gateway

    gateway = run(main())
    assert [gateway.sent(i)["requesttypedescriptions"] for i in range(gateway.calls)] == [
        ["STORE"],
        ["THREEDQUERY"],
        ["CACHETOKENISE"],
        ["TRANSACTIONQUERY"],
        ["TRANSACTIONUPDATE"],
        ["AUTH"],
        ["AUTH", "SUBSCRIPTION"],
    ]
    assert gateway.sent(4)["updates"] == {"transactionactive": "0"}
    assert gateway.sent(3)["filter"]["sitereference"] == [{"value": "test_site12345"}]


def test_validation_errors_are_raised_when_awaited_and_nothing_is_sent():
    async def main():
        client, gateway = async_client()
        pending = client.auth(pan="4111111111111112")  # nothing happens until awaited
        with pytest.raises(ValidationError) as caught:
            await pending
        await client.aclose()
        return caught.value, gateway

    error, gateway = run(main())
    assert gateway.calls == 0 and "pan" in error.fields and "4111111111111112" not in str(error)


def test_gateway_errors_raise_only_when_asked():
    gateway = FakeGateway(
        records=[
            {
                "requesttypedescription": "AUTH",
                "errorcode": "70000",
                "errormessage": "Decline",
                "settlestatus": "3",
            }
        ]
    )

    async def main():
        client, _ = async_client(gateway)
        async with client:
            return await client.auth(**CARD)

    response = run(main())
    assert not response.ok
    with pytest.raises(GatewayError) as caught:
        response.raise_for_errors()
    assert caught.value.errorcode == 70000 and caught.value.requestreference == response.requestreference


@pytest.mark.parametrize(
    "status,body,error",
    [
        (401, b"Unauthorized", AuthenticationError),
        (200, b"<html>oops</html>", ResponseFormatError),
        (500, b"down", gwkit.HTTPStatusError),
    ],
)
def test_the_error_hierarchy(status, body, error):
    gateway = FakeGateway(status=status, body=body)

    async def main():
        client, _ = async_client(gateway)
        async with client:
            await client.auth(**CARD)

    with pytest.raises(error):
        run(main())
    assert gateway.calls == 1


@pytest.mark.parametrize("exc", [httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout])
def test_no_re_send_after_the_request_may_have_arrived(exc):
    gateway = FakeGateway(errors=[exc("dropped")])

    async def main():
        client, _ = async_client(gateway, retries=3)
        async with client:
            await client.auth(**CARD)

    with pytest.raises(TransportError) as caught:
        run(main())
    assert gateway.calls == 1 and caught.value.sent is True and not isinstance(caught.value, ConnectError)


def test_connect_errors_are_retried():
    gateway = FakeGateway(errors=[httpx.ConnectError("refused"), httpx.ConnectError("refused")])

    async def main():
        client, _ = async_client(gateway, retries=2)
        async with client:
            return await client.auth(**CARD)

    assert run(main()).ok and gateway.calls == 3

    gateway = FakeGateway(errors=[httpx.ConnectError("refused")] * 5)
    with pytest.raises(ConnectError):
        run(main())
    assert gateway.calls == 3


def test_hooks_may_be_plain_functions_or_coroutines():
    seen, awaited = [], []

    async def journal(exchange):
        await asyncio.sleep(0)
        awaited.append(exchange)

    async def main():
        client, _ = async_client(on_exchange=[seen.append])
        client.add_exchange_hook(journal)
        async with client:
            await client.auth(**CARD)

    run(main())
    assert len(seen) == 1 and awaited == seen
    assert seen[0].request["request"][0]["pan"] == MASKED


def test_hook_exceptions_propagate():
    async def broken(exchange):
        raise RuntimeError("journal down")

    async def main():
        client, _ = async_client(on_exchange=broken)
        async with client:
            await client.auth(**CARD)

    with pytest.raises(RuntimeError, match="journal down"):
        run(main())


def test_concurrent_requests_share_one_client():
    async def main():
        client, gateway = async_client()
        async with client:
            responses = await asyncio.gather(
                *(client.auth(**CARD, orderreference=f"o-{i}") for i in range(5))
            )
        return responses, gateway

    responses, gateway = run(main())
    assert gateway.calls == 5 and all(r.ok for r in responses)
    assert len({r.requestreference for r in responses}) == 5


def test_repr_and_close():
    async def main():
        client, gateway = async_client()
        assert "s3cret" not in repr(client) and repr(client).startswith("AsyncClient(")
        await client.close()
        with pytest.raises(RuntimeError):
            await client.auth(**CARD)
        return gateway

    assert run(main()).calls == 0
