"""A scheduler extender served over loopback HTTP(S) by aiohttp.web, for tests.

Each verb's answer comes from a handler ``(args) -> answer`` (any JSON value, or an
``(status, body)`` tuple for a raw HTTP answer; coroutines allowed, so a handler can
stall to test timeouts). Every request is recorded as ``(verb, args)``.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

Handler = Callable[[Any], Any]


class FakeExtender:
    def __init__(self, *, ssl_context: ssl.SSLContext | None = None, prefix: str = "/ext") -> None:
        self.handlers: dict[str, Handler] = {}
        self.requests: list[tuple[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._ssl = ssl_context
        self._prefix = prefix
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}{self._prefix}"

    def calls(self, verb: str) -> list[Any]:
        return [args for v, args in self.requests if v == verb]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        args = orjson.loads(await request.read())
        self.requests.append((verb, args))
        self.headers.append(dict(request.headers))
        handler = self.handlers.get(verb)
        if handler is None:
            return web.Response(status=404)
        answer = handler(args)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, tuple):
            status, body = answer
            return web.Response(status=status, body=body)
        return web.Response(body=orjson.dumps(answer), content_type="application/json")

    async def __aenter__(self) -> FakeExtender:
        app = web.Application()
        app.router.add_post(self._prefix + "/{verb}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()


def names_of(args: Any) -> list[str]:
    """The candidate node names of an ExtenderArgs, in either form."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"]]
