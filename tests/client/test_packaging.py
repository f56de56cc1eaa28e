"""The package's shape: the core client needs only httpx; the public API is at the root."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB_ONLY = (
    "pandas",
    "ipywidgets",
    "IPython",
    "starlette",
    "uvicorn",
    "cryptography",
    "matplotlib",
    "pyarrow",
)


def test_the_core_client_imports_and_validates_with_only_httpx():
    script = f"""
import sys
for name in {LAB_ONLY!r}:
    sys.modules[name] = None  # any import of these now fails
import httpx, gwkit
problems = gwkit.validate_request({{"requesttypedescriptions": ["AUTH"], "pan": "4111111111111112"}})
assert any(p.field == "pan" for p in problems), problems
def answer(request):
    return httpx.Response(200, json={{"requestreference": "Aabc12345", "version": "1.00", "secrand": "x1",
                                      "response": [{{"errorcode": "0", "errormessage": "Ok",
                                                     "requesttypedescription": "TRANSACTIONQUERY", "records": []}}]}})
with gwkit.Client("http://127.0.0.1:9", "user", "pass", transport=httpx.MockTransport(answer)) as client:
    client.send({{"requesttypedescriptions": ["TRANSACTIONQUERY"], "requestreference": "Aabc12345",
                 "filter": {{"transactionreference": [{{"value": "1-9-1"}}]}}}})
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_core_dependencies_are_httpx_and_sniffio_and_the_lab_extra_brings_the_rest():
    """sniffio is httpcore's (it asks it which event loop runs); declared, so it is installed."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d.split(">")[0] for d in project["dependencies"]] == ["httpx", "sniffio"]
    lab = " ".join(project["optional-dependencies"]["lab"])
    for name in ("jupyterlab", "ipywidgets", "pandas"):
        assert name in lab


def test_the_public_api_is_reexported_from_the_root():
    import gwkit
    import gwkit.widgets

    for name in (
        "Client",
        "AsyncClient",
        "Response",
        "Record",
        "ValidationError",
        "GatewayError",
        "TransportError",
        "connect",
        "ThreeDSecureFlow",
        "Subscription",
        "Journal",
    ):
        assert name in gwkit.__all__ and hasattr(gwkit, name)
    for name in (
        "RequestForm",
        "ResponseView",
        "RequestExplorer",
        "ThreeDSecureStepper",
        "SubscriptionPanel",
        "CardStorePanel",
    ):
        assert hasattr(gwkit.widgets, name)
