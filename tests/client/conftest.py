"""Fixtures of the client tests: a gwkit.Client on an in-process fake gateway."""

from __future__ import annotations

import pytest

from support.fakes import FakeGateway, make_client


@pytest.fixture
def gateway():
    return FakeGateway()


@pytest.fixture
def client(gateway):
    client, _ = make_client(gateway)
    with client:
        yield client
