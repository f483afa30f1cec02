"""ksched's HTTPS endpoints: health, metrics and configuration, behind delegated
authentication and authorization (kube-scheduler's secure port).

* :mod:`.healthz` — the check groups of ``/healthz``, ``/livez``, ``/readyz``;
* :mod:`.auth` — TokenReview / SubjectAccessReview through a
  :class:`ksched.cluster.ReviewAPI`, the always-allowed paths, anonymous requests;
* :mod:`.certs` — the serving certificate (given, in ``--cert-dir``, or self-signed)
  and the TLS flags;
* :mod:`.zpages` — ``/flagz`` and ``/statusz``;
* :mod:`.pprof` — ``/debug/pprof/``, a sampling profiler and stack dumps;
* :mod:`.app` — the ``aiohttp.web`` server.

This package uses aiohttp only as an HTTP *server*; it never talks to the API server
itself (import-linter forbids ``ksched.client`` and ``kubernetes`` here): reviews go
through the ReviewAPI object ``ksched run`` hands it.
"""

from ksched.server.app import EndpointServer, Profiling, ServingOptions, ZPages
from ksched.server.auth import (
    ALWAYS_ALLOW_PATHS,
    ANONYMOUS,
    AuthError,
    ClientCA,
    DelegatingAuth,
    RequestHeaderConfig,
    UserInfo,
)
from ksched.server.healthz import PING, HealthCheck, HealthGroup, HealthResult, named_check

__all__ = [
    "ALWAYS_ALLOW_PATHS",
    "ANONYMOUS",
    "PING",
    "AuthError",
    "ClientCA",
    "DelegatingAuth",
    "EndpointServer",
    "HealthCheck",
    "HealthGroup",
    "HealthResult",
    "Profiling",
    "RequestHeaderConfig",
    "ServingOptions",
    "UserInfo",
    "ZPages",
    "named_check",
]
