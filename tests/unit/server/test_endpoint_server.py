"""ksched.server without an API server: health groups render like k8s.io/apiserver's
healthz, delegated auth follows upstream's order and caches, and the HTTPS server
serves a self-signed certificate, with reviews answered by the embedded cluster."""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import pytest

from ksched.server import (
    ANONYMOUS,
    AuthError,
    DelegatingAuth,
    EndpointServer,
    HealthCheck,
    HealthGroup,
    ServingOptions,
)
from ksched.server.auth import path_allowed
from ksched.sim.cluster import InMemoryCluster


def test_health_group_output_matches_upstream() -> None:
    broken = HealthCheck("sched-handler-sync", lambda: "waiting for handlers to sync")
    ok = HealthCheck("shutdown", lambda: None)
    group = HealthGroup("readyz", [ok, broken])
    res = group.run()
    assert res.status == 500
    assert res.body == (
        "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
    )
    assert group.run(exclude=["sched-handler-sync"]).body == "ok"
    res = group.run(verbose=True, exclude=["sched-handler-sync", "nope"])
    assert res.body.splitlines() == [
        "[+]shutdown ok",
        "[+]sched-handler-sync excluded: ok",
        'warn: some health checks cannot be excluded: no matches for "nope"',
        "readyz check passed",
    ]
    one = group.run_one("sched-handler-sync")
    assert one is not None
    assert (one.status, one.body) == (500, "internal server error: waiting for handlers to sync\n")
    assert group.run_one("missing") is None
    assert HealthGroup("livez", []).names() == ["ping"]


@pytest.mark.parametrize(
    ("path", "allowed"),
    [("/healthz", True), ("/healthz/ping", False), ("/metrics", False), ("/debug/x", True)],
)
def test_always_allow_paths(path: str, allowed: bool) -> None:
    assert path_allowed(path, ["/healthz", "/readyz", "/livez", "/debug/*"]) is allowed


async def test_delegated_auth_order_and_cache() -> None:
    api = InMemoryCluster()
    api.tokens["good"] = {"username": "prom", "groups": ["monitoring"]}
    seen: list[dict[str, Any]] = []

    def authorize(spec: dict[str, Any]) -> bool:
        seen.append(spec)
        return bool(spec["user"] == "prom")

    api.authorize = authorize
    auth = DelegatingAuth(api, authz_reviewer=api)
    assert await auth.authenticate(authorization=None) == ANONYMOUS
    with pytest.raises(AuthError) as err:
        await auth.authenticate(authorization="Bearer bad")
    assert err.value.status == 401
    user = await auth.authenticate(authorization="Bearer good")
    assert user.name == "prom" and user.groups == ("monitoring", "system:authenticated")
    await auth.authorize(user, verb="get", path="/metrics")
    await auth.authorize(user, verb="get", path="/metrics")
    await auth.authenticate(authorization="Bearer good")
    assert (auth.token_reviews, auth.access_reviews) == (2, 1)  # cached for 10s
    assert seen[0]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    with pytest.raises(AuthError) as err:
        await auth.authorize(ANONYMOUS, verb="get", path="/metrics")
    assert err.value.status == 403
    assert err.value.message.startswith(
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )
    await auth.authorize(ANONYMOUS, verb="get", path="/readyz")  # always allowed


async def test_https_server_with_a_self_signed_certificate() -> None:
    api = InMemoryCluster()
    api.tokens["t"] = {"username": "admin"}
    api.authorize = lambda spec: spec["user"] == "admin"
    server = EndpointServer(
        ServingOptions(bind_address="127.0.0.1", secure_port=0),
        auth=DelegatingAuth(api, authz_reviewer=api),
        healthz=HealthGroup("healthz", []),
        livez=HealthGroup("livez", []),
        readyz=HealthGroup("readyz", [HealthCheck("shutdown", lambda: None)]),
        metrics=lambda: b"# HELP x y\n",
        configz=lambda: {"componentconfig": {"kind": "KubeSchedulerConfiguration"}},
    )
    await server.start()
    try:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        base = f"https://127.0.0.1:{server.port}"
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{base}/healthz", ssl=ctx) as r:
                assert (r.status, await r.text()) == (200, "ok")
            async with s.get(f"{base}/metrics", ssl=ctx) as r:
                assert r.status == 403
            hdr = {"Authorization": "Bearer t"}
            async with s.get(f"{base}/metrics", ssl=ctx, headers=hdr) as r:
                assert r.status == 200
                assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            async with s.get(f"{base}/configz", ssl=ctx, headers=hdr) as r:
                assert (await r.json())["componentconfig"]["kind"] == "KubeSchedulerConfiguration"
            async with s.get(f"{base}/nope", ssl=ctx, headers=hdr) as r:
                assert r.status == 404
            async with s.get(f"{base}/nope", ssl=ctx) as r:
                assert r.status == 403  # authorization comes before routing, as upstream
    finally:
        await server.stop()
