"""gwkit proxy: a validating, recording, fault-injecting proxy for any application's integration.

    >>> from gwkit import proxy, sandbox
    >>> box = sandbox.Sandbox(".gwkit/sandbox.db")
    >>> handle = proxy.start(proxy.Proxy(proxy.SandboxUpstream(box), strict=True))
    >>> handle.base_url          # the application's gateway base URL; it posts to base_url + "/json/"
    >>> handle.exchanges         # what it sent, what it got, the problems found
    >>> handle.stop()

It forwards the gateway's JSON endpoint (`POST /json/`) only. `gwkit proxy` runs it from the
command line (docs/proxy.md).
"""

from .answers import Answer
from .app import MAX_BODY_BYTES, ProxyHandle, create_app, start
from .drift import Shadow
from .exchanges import PROXY, UPSTREAM, ProxyExchange, ProxyProblem
from .faults import FaultsError, ProxyFaults
from .notes import ProxyNotes
from .proxy import Proxy
from .upstreams import (
    CassetteUpstream,
    GatewayUpstream,
    SandboxOverHttp,
    SandboxUpstream,
    Upstream,
    UpstreamError,
    is_sandbox,
)

__all__ = [
    "MAX_BODY_BYTES",
    "PROXY",
    "UPSTREAM",
    "Answer",
    "CassetteUpstream",
    "FaultsError",
    "GatewayUpstream",
    "Proxy",
    "ProxyExchange",
    "ProxyFaults",
    "ProxyHandle",
    "ProxyNotes",
    "ProxyProblem",
    "SandboxOverHttp",
    "SandboxUpstream",
    "Shadow",
    "Upstream",
    "UpstreamError",
    "create_app",
    "is_sandbox",
    "start",
]
