"""The HTTPS endpoint server of ``ksched run`` (kube-scheduler's secure port, 10259).

``aiohttp.web`` on the scheduler's event loop. Every request is authenticated and then
authorized (:mod:`.auth`) before it reaches a handler, as upstream's handler chain
does, so an unknown path is 403 for an anonymous client and 404 only for one allowed to
see it. Paths:

* ``/healthz``, ``/livez``, ``/readyz`` and ``/<group>/<check>`` (:mod:`.healthz`);
* ``/metrics`` — the Prometheus text of the scheduler's registry;
* ``/configz`` — ``{"componentconfig": <the effective KubeSchedulerConfiguration>}``,
  as upstream's configz handler renders it.

Errors are ``Status`` objects in JSON, like the API server's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from ksched.server.auth import ALWAYS_ALLOW_PATHS, AuthError, DelegatingAuth, UserInfo
from ksched.server.certs import server_ssl_context
from ksched.server.healthz import HealthGroup

__all__ = ["EndpointServer", "ServingOptions"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(slots=True)
class ServingOptions:
    """kube-scheduler's secure serving and delegated auth flags."""

    bind_address: str = "0.0.0.0"
    #: 0 disables serving, as upstream.
    secure_port: int = 10259
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    always_allow_paths: Sequence[str] = field(default=ALWAYS_ALLOW_PATHS)


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return web.Response(status=code, body=orjson.dumps(body), content_type="application/json")


_REASONS = {401: "Unauthorized", 403: "Forbidden", 500: "InternalError"}


def _cert_user(request: web.Request) -> UserInfo | None:
    transport = request.transport
    peer: Any = transport.get_extra_info("peercert") if transport is not None else None
    if not peer:
        return None
    cn = ""
    groups: list[str] = []
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                groups.append(value)
    if not cn:
        return None
    return UserInfo(cn, groups=(*groups, "system:authenticated"))


class EndpointServer:
    """Serves the endpoints until :meth:`stop`."""

    def __init__(
        self,
        options: ServingOptions,
        *,
        auth: DelegatingAuth,
        healthz: HealthGroup,
        livez: HealthGroup,
        readyz: HealthGroup,
        metrics: Callable[[], bytes],
        configz: Callable[[], dict[str, Any]],
    ) -> None:
        self.options = options
        self.auth = auth
        self.groups = {g.name: g for g in (healthz, livez, readyz)}
        self.metrics = metrics
        self.configz = configz
        self._runner: web.AppRunner | None = None
        #: The bound port (useful with an ephemeral one).
        self.port = 0

    # ---- handlers ------------------------------------------------------------------

    @web.middleware
    async def _authn_authz(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            user = await self.auth.authenticate(
                authorization=request.headers.get("Authorization"),
                cert_user=_cert_user(request),
            )
            await self.auth.authorize(user, verb=request.method.lower(), path=request.path)
        except AuthError as exc:
            return _status(exc.status, _REASONS.get(exc.status, "Unknown"), exc.message)
        response = await handler(request)
        response.headers.setdefault("Cache-Control", "no-cache, private")
        return response

    async def _health(self, request: web.Request) -> web.StreamResponse:
        group = self.groups[request.path.strip("/").split("/")[0]]
        check = request.match_info.get("check")
        if check is not None:
            one = group.run_one(check)
            if one is None:
                raise web.HTTPNotFound()
            result = one
        else:
            result = group.run(
                verbose="verbose" in request.query, exclude=request.query.getall("exclude", [])
            )
        return web.Response(
            status=result.status,
            text=result.body,
            content_type="text/plain",
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        body = self.metrics()
        return web.Response(body=body, headers={"Content-Type": PROMETHEUS_TEXT})

    async def _configz(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=orjson.dumps(self.configz()), content_type="application/json")

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._authn_authz])
        for name in self.groups:
            app.router.add_get(f"/{name}", self._health)
            app.router.add_get(f"/{name}/{{check}}", self._health)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/configz", self._configz)
        return app

    # ---- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        opts = self.options
        ctx = server_ssl_context(
            cert_file=opts.tls_cert_file,
            key_file=opts.tls_private_key_file,
            client_ca_file=opts.client_ca_file,
            bind_address=opts.bind_address,
        )
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(
            runner, opts.bind_address or None, opts.secure_port, ssl_context=ctx, backlog=128
        )
        await site.start()
        self._runner = runner
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or ()
        self.port = sockets[0].getsockname()[1] if sockets else opts.secure_port
        log.info("serving securely on %s:%d", opts.bind_address or "0.0.0.0", self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
