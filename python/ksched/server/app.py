"""The HTTPS endpoint server of ``ksched run`` (kube-scheduler's secure port, 10259).

``aiohttp.web`` on the scheduler's event loop. Every request is authenticated and then
authorized (:mod:`.auth`) before it reaches a handler, as upstream's handler chain
does, so an unknown path is 403 for an anonymous client and 404 only for one allowed to
see it. Paths, as kube-scheduler's ``newEndpointsHandler`` installs them:

* ``/healthz``, ``/livez``, ``/readyz`` and ``/<group>/<check>`` (:mod:`.healthz`);
* ``/metrics`` — the Prometheus text of the scheduler's registry (``DELETE`` resets the
  resettable metrics, as ``HandlerWithReset``);
* ``/metrics/resources`` — ``kube_pod_resource_request``/``kube_pod_resource_limit`` per
  pod, only while this replica leads (an empty answer otherwise, as upstream);
* ``/metrics/slis`` — ``kubernetes_healthcheck`` and ``kubernetes_healthchecks_total``
  for the health checks;
* ``/configz`` — ``{"componentconfig": <the effective KubeSchedulerConfiguration>}``;
* ``/flagz`` and ``/statusz`` (:mod:`.zpages`) when ComponentFlagz/ComponentStatusz are on;
* with ``enableProfiling``: ``/debug/pprof/...`` (:mod:`.pprof`) and ``/debug/flags/v``
  (``PUT`` a number to change the log verbosity).

Errors are ``Status`` objects in JSON, like the API server's. The server speaks HTTP/1.1
only (no HTTP/2: aiohttp has no HTTP/2 server).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from aiohttp import web

from ksched.server import pprof, zpages
from ksched.server.auth import ALWAYS_ALLOW_PATHS, AuthError, DelegatingAuth, UserInfo
from ksched.server.certs import ServingTLS, server_ssl_context
from ksched.server.healthz import HealthGroup

__all__ = ["EndpointServer", "Profiling", "ServingOptions", "ZPages"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
COMPONENT = "kube-scheduler"


@dataclass(slots=True)
class ServingOptions:
    """kube-scheduler's secure serving flags."""

    bind_address: str = "0.0.0.0"
    #: 0 disables serving, as upstream.
    secure_port: int = 10259
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    client_ca_file: str = ""
    always_allow_paths: Sequence[str] = field(default=ALWAYS_ALLOW_PATHS)
    cert_dir: str = ""
    tls_min_version: str = ""
    cipher_suites: Sequence[str] = ()
    curve_preferences: Sequence[int] = ()
    sni: Sequence[tuple[str, str, Sequence[str]]] = ()
    #: PEM bundles of client CAs (client CA and request-header CA) for the handshake.
    client_ca_pems: Sequence[bytes] = ()
    #: ``--permit-address-sharing`` (SO_REUSEADDR), ``--permit-port-sharing`` (SO_REUSEPORT).
    reuse_address: bool = False
    reuse_port: bool = False


class RequestMetrics(Protocol):
    """Where the handler chain records authentication and authorization results."""

    def authenticated(self, result: str, username: str, seconds: float) -> None: ...

    def authorized(self, result: str, seconds: float) -> None: ...


@dataclass(slots=True)
class ZPages:
    """What ``/flagz`` and ``/statusz`` show (None: the page is off)."""

    flags: Callable[[], Mapping[str, str]] | None = None
    statusz: bool = False
    start_time: float = 0.0
    binary_version: str = ""
    emulation_version: str = ""


@dataclass(slots=True)
class Profiling:
    """``enableProfiling`` / ``enableContentionProfiling`` and the verbosity setter."""

    contention: bool = False
    set_verbosity: Callable[[int], None] | None = None


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


def _peer_cert(request: web.Request) -> bytes | None:
    transport = request.transport
    if transport is None:
        return None
    ssl_object: Any = transport.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return bytes(der) if der else None


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
        resource_metrics: Callable[[], bytes] | None = None,
        sli_metrics: Callable[[], bytes] | None = None,
        reset_metrics: Callable[[], None] | None = None,
        zpages_: ZPages | None = None,
        profiling: Profiling | None = None,
        request_metrics: RequestMetrics | None = None,
    ) -> None:
        self.options = options
        self.auth = auth
        self.groups = {g.name: g for g in (healthz, livez, readyz)}
        self.metrics = metrics
        self.configz = configz
        self.resource_metrics = resource_metrics
        self.sli_metrics = sli_metrics
        self.reset_metrics = reset_metrics
        self.zpages = zpages_ if zpages_ is not None else ZPages()
        self.profiling = profiling
        self.request_metrics = request_metrics
        self.profiler = pprof.Profiler(contention=bool(profiling and profiling.contention))
        self._runner: web.AppRunner | None = None
        #: The bound port (useful with an ephemeral one).
        self.port = 0
        self.paths: list[str] = []

    # ---- handlers ------------------------------------------------------------------

    @web.middleware
    async def _authn_authz(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        rm = self.request_metrics
        began = time.monotonic()
        try:
            user: UserInfo = await self.auth.authenticate(
                authorization=request.headers.get("Authorization"),
                peer_cert=_peer_cert(request),
                headers=request.headers,
            )
        except AuthError as exc:
            if rm is not None:
                rm.authenticated("error", "", time.monotonic() - began)
            return _status(exc.status, _REASONS.get(exc.status, "Unknown"), exc.message)
        authorized = time.monotonic()
        if rm is not None:
            rm.authenticated("success", user.name, authorized - began)
        try:
            await self.auth.authorize(user, verb=request.method.lower(), path=request.path)
        except AuthError as exc:
            if rm is not None:
                result = "denied" if exc.status == 403 else "error"
                rm.authorized(result, time.monotonic() - authorized)
            return _status(exc.status, _REASONS.get(exc.status, "Unknown"), exc.message)
        if rm is not None:
            rm.authorized("allowed", time.monotonic() - authorized)
        try:
            response = await handler(request)
        except web.HTTPException as exc:
            response = exc
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
        if request.method == "DELETE":
            if self.reset_metrics is not None:
                self.reset_metrics()
            return web.Response(text="metrics reset\n", content_type="text/plain")
        body = self.metrics()
        return web.Response(body=body, headers={"Content-Type": PROMETHEUS_TEXT})

    async def _resource_metrics(self, request: web.Request) -> web.StreamResponse:
        assert self.resource_metrics is not None
        return web.Response(body=self.resource_metrics(), headers={"Content-Type": PROMETHEUS_TEXT})

    async def _slis(self, request: web.Request) -> web.StreamResponse:
        assert self.sli_metrics is not None
        return web.Response(body=self.sli_metrics(), headers={"Content-Type": PROMETHEUS_TEXT})

    async def _configz(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=orjson.dumps(self.configz()), content_type="application/json")

    def _zpage(self, page: zpages.ZPage) -> web.Response:
        resp = web.Response(status=page.status, body=page.body, headers=page.headers)
        resp.headers["Content-Type"] = page.content_type
        return resp

    async def _flagz(self, request: web.Request) -> web.StreamResponse:
        reader = self.zpages.flags
        assert reader is not None
        flags = dict(reader())
        return self._zpage(
            zpages.negotiate(
                request.headers.get("Accept", ""),
                "Flagz",
                lambda: zpages.flagz_text(COMPONENT, flags),
                lambda v: zpages.flagz_object(COMPONENT, flags, v),
            )
        )

    async def _statusz(self, request: web.Request) -> web.StreamResponse:
        z = self.zpages
        kw: dict[str, Any] = {
            "start": z.start_time,
            "binary_version": z.binary_version,
            "emulation_version": z.emulation_version,
            "paths": self.paths,
        }
        return self._zpage(
            zpages.negotiate(
                request.headers.get("Accept", ""),
                "Statusz",
                lambda: zpages.statusz_text(COMPONENT, **kw),
                lambda v: zpages.statusz_object(COMPONENT, v, **kw),
            )
        )

    # ---- profiling ---------------------------------------------------------------

    @staticmethod
    def _text(body: str, status: int = 200, ctype: str = "text/plain") -> web.Response:
        return web.Response(
            status=status,
            text=body,
            content_type=ctype,
            charset="utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )

    async def _pprof(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info.get("name", "")
        contention = self.profiler.contention
        if name == "":
            return self._text(pprof.index(contention), ctype="text/html")
        if name == "profile":
            try:
                seconds = float(request.query.get("seconds", "30") or 30)
            except ValueError:
                return self._text('invalid value for "seconds"\n', 400)
            if seconds <= 0:
                seconds = 30.0
            try:
                stacks, total = await asyncio.to_thread(self.profiler.cpu_profile, seconds)
            except pprof.ProfileBusy as exc:
                return self._text(f"Could not enable CPU profiling: {exc}\n", 500)
            text = pprof.folded_text(stacks)
            return self._text(text or f"# no busy samples in {total} samples\n")
        if name == "goroutine":
            debug = int(request.query.get("debug", "1") or 1)
            return self._text(pprof.goroutines(debug))
        if name in ("heap", "allocs"):
            return self._text(await asyncio.to_thread(pprof.heap))
        if name == "threadcreate":
            return self._text(pprof.threads())
        if name in ("block", "mutex") and contention:
            return self._text(pprof.folded_text(self.profiler.blocked()))
        return self._text("Unknown profile\n", 404)

    async def _pprof_redirect(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound("/debug/pprof/")

    async def _debug_flags_v(self, request: web.Request) -> web.StreamResponse:
        if request.method != "PUT":
            return self._text("unsupported http method", 406)
        text = (await request.text()).strip()
        try:
            level = int(text)
            if level < 0:
                raise ValueError(text)
        except ValueError:
            return self._text(
                f"failed set klog.logging.verbosity {text}: strconv.ParseInt: parsing "
                f'"{text}": invalid syntax',
                400,
            )
        assert self.profiling is not None and self.profiling.set_verbosity is not None
        self.profiling.set_verbosity(level)
        return self._text(f"successfully set klog.logging.verbosity to {level}")

    # ---- routing -----------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._authn_authz])
        listed: list[str] = []

        def route(path: str, handler: Handler, *, method: str = "*", list_it: bool = True) -> None:
            app.router.add_route(method, path, handler)
            if list_it:
                listed.append(path)

        for name in self.groups:
            route(f"/{name}", self._health, method="GET")
            app.router.add_get(f"/{name}/{{check}}", self._health)
        route("/configz", self._configz)
        route("/metrics", self._metrics)
        if self.resource_metrics is not None:
            route("/metrics/resources", self._resource_metrics)
        if self.sli_metrics is not None:
            route("/metrics/slis", self._slis)
        prof = self.profiling
        if prof is not None:
            app.router.add_route("*", "/debug/pprof", self._pprof_redirect)
            app.router.add_route("*", "/debug/pprof/", self._pprof)
            app.router.add_route("*", "/debug/pprof/{name}", self._pprof)
            if prof.set_verbosity is not None:
                route("/debug/flags/v", self._debug_flags_v, list_it=False)
        if self.zpages.flags is not None:
            route("/flagz", self._flagz)
        self.paths = sorted(listed)
        if self.zpages.statusz:
            route("/statusz", self._statusz, list_it=False)
        return app

    # ---- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        opts = self.options
        ctx = server_ssl_context(
            ServingTLS(
                cert_file=opts.tls_cert_file,
                key_file=opts.tls_private_key_file,
                cert_dir=opts.cert_dir,
                bind_address=opts.bind_address,
                client_ca_pems=opts.client_ca_pems,
                min_version=opts.tls_min_version,
                cipher_suites=opts.cipher_suites,
                curve_preferences=opts.curve_preferences,
                sni=opts.sni,
            )
        )
        if opts.client_ca_file and not opts.client_ca_pems:
            ctx.load_verify_locations(cafile=opts.client_ca_file)
            import ssl

            ctx.verify_mode = ssl.CERT_OPTIONAL
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(
            runner,
            opts.bind_address or None,
            opts.secure_port,
            ssl_context=ctx,
            backlog=128,
            reuse_address=True if opts.reuse_address else None,
            reuse_port=True if opts.reuse_port else None,
        )
        await site.start()
        self._runner = runner
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or ()
        self.port = sockets[0].getsockname()[1] if sockets else opts.secure_port
        host = opts.bind_address or "0.0.0.0"
        shown = f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"
        log.info("Serving securely on %s", shown)
        if self.profiling is not None and self.profiling.contention:
            self.profiler.start_contention()

    async def stop(self) -> None:
        self.profiler.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
