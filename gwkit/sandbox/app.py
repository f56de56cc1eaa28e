"""The sandbox over HTTP: a Starlette app that hands every request to the Sandbox core."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .core import Sandbox, SandboxRequest, SandboxResponse

METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]


def create_app(sandbox: Sandbox) -> Starlette:
    async def endpoint(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > sandbox.max_body_bytes:
            answer = SandboxResponse.json({"error": "request body too large",
                                           "limit_bytes": sandbox.max_body_bytes}, status=413)
        else:
            body = await _read_limited(request, sandbox.max_body_bytes)
            answer = sandbox.handle(SandboxRequest(
                method=request.method, path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()}, body=body,
                query=dict(request.query_params), base_url=f"{request.url.scheme}://{request.url.netloc}",
            ))
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=METHODS)])


async def _read_limited(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            break  # the core refuses it as too large
    return b"".join(chunks)
