"""The names `gwkit` exports at its root, listed exactly, so that a change to them is deliberate;
and `import gwkit` stays light (no pandas, ipywidgets, starlette, ...)."""

from __future__ import annotations

import subprocess
import sys

import gwkit

PUBLIC = {
    "AsyncClient",
    "AuthenticationError",
    "CardStoreError",
    "Client",
    "ConfigError",
    "ConnectError",
    "Connection",
    "DemoShop",
    "Exchange",
    "GatewayError",
    "GwkitError",
    "HTTPStatusError",
    "Journal",
    "Notification",
    "NotificationListener",
    "NotificationMismatch",
    "Record",
    "RequestTimeoutError",
    "Response",
    "ResponseFormatError",
    "Subscription",
    "SubscriptionError",
    "ThreeDSecureError",
    "ThreeDSecureFlow",
    "TransportError",
    "ValidationError",
    "connect",
    "mask_data",
    "mask_pan",
    "validate_request",
}
HEAVY = (
    "pandas",
    "pyarrow",
    "matplotlib",
    "ipywidgets",
    "IPython",
    "starlette",
    "uvicorn",
    "gwkit.sandbox",
    "gwkit.report",
    "gwkit.widgets",
)


def test_the_root_exports_exactly_these_names():
    assert set(gwkit.__all__) == PUBLIC and len(gwkit.__all__) == len(PUBLIC)
    assert all(hasattr(gwkit, name) for name in PUBLIC)


def test_no_builtin_is_shadowed():
    import builtins

    assert not [name for name in gwkit.__all__ if hasattr(builtins, name)]


def test_import_gwkit_loads_no_lab_library():
    script = f"import sys, gwkit; print(sorted(n for n in {HEAVY!r} if n in sys.modules))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_notebook_sandbox_loads_no_postgresql_driver(tmp_path):
    script = (
        "import sys, gwkit\n"
        f"gw = gwkit.connect(notebook='light', sandbox_db={str(tmp_path / 'sandbox.db')!r}, journal=False)\n"
        "assert gw.sandbox is not None\n"
        "print(sorted(n for n in ('psycopg', 'psycopg_pool') if n in sys.modules))\n"
        "gw.close()"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
