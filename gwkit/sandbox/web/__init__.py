"""The sandbox over HTTP: routes, pages, fault injection, the Starlette app and the httpx transports."""
