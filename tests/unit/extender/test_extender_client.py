"""The HTTP extender client against a real extender served on loopback: the wire
format of every verb (upstream's Go field names), interest, and failure handling."""

from __future__ import annotations

import asyncio
import base64
import ssl
import tempfile
from typing import Any

import pytest
from aiohttp import web

from ksched.config import Duration, Extender, ExtenderManagedResource, ExtenderTLSConfig
from ksched.framework.extender import (
    ExtenderError,
    ExtenderVictims,
    HTTPExtender,
    build_extenders,
)
from ksched.server.certs import self_signed_pair
from tests.helpers import parsed_node, parsed_pod
from tests.unit.extender.fake_extender import FakeExtender, names_of

NODES = [parsed_node(n) for n in ("n1", "n2", "n3")]


def ext(url: str, **kw: Any) -> HTTPExtender:
    kw.setdefault("http_timeout", Duration.seconds(5))
    return HTTPExtender(Extender(url_prefix=url, **kw))


# ---- filter -----------------------------------------------------------------------------


@pytest.mark.parametrize("cache_capable", [False, True], ids=["node-objects", "node-names"])
async def test_filter_sends_the_pod_and_candidates_and_reads_the_answer(cache_capable: bool):
    pod = parsed_pod("p")
    async with FakeExtender() as fake:

        def answer(args: Any) -> Any:
            keep = [n for n in names_of(args) if n != "n2"]
            out: dict[str, Any] = {
                "FailedNodes": {"n2": "n2 is out of licenses"},
                "FailedAndUnresolvableNodes": {"n3": "n3 is retired"},
                "Error": "",
            }
            keep.remove("n3")
            if cache_capable:
                out["NodeNames"] = keep
            else:
                out["Nodes"] = {"metadata": {}, "items": [{"metadata": {"name": n}} for n in keep]}
            return out

        fake.handlers["filter"] = answer
        e = ext(fake.url, filter_verb="filter", node_cache_capable=cache_capable)
        res = await e.filter(pod, NODES)
        e.close()
    assert res.nodes == ["n1"]
    assert res.failed == {"n2": "n2 is out of licenses"}
    assert res.failed_and_unresolvable == {"n3": "n3 is retired"}
    (args,) = fake.calls("filter")
    assert args["Pod"]["metadata"]["name"] == "p"
    assert set(args) == {"Pod", "Nodes", "NodeNames"}
    if cache_capable:
        assert args["NodeNames"] == ["n1", "n2", "n3"]
        assert args["Nodes"] is None
    else:
        assert args["NodeNames"] is None
        assert [n["metadata"]["name"] for n in args["Nodes"]["items"]] == ["n1", "n2", "n3"]
        # Whole Node objects, as the API server serves them.
        assert args["Nodes"]["items"][0]["status"]["allocatable"]["cpu"] == "4"
    assert fake.headers[0]["Content-Type"] == "application/json"


async def test_filter_answer_fields_match_case_insensitively_as_go_decodes_them():
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda a: {"nodeNames": ["n3"], "failedNodes": {"n1": "no"}}
        e = ext(fake.url, filter_verb="filter", node_cache_capable=True)
        res = await e.filter(parsed_pod("p"), NODES)
        e.close()
    assert res.nodes == ["n3"]
    assert res.failed == {"n1": "no"}


async def test_filter_answer_without_nodes_keeps_none():
    """Upstream: neither NodeNames (cache-capable) nor Nodes in the answer → no node."""
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda a: {"NodeNames": ["n1"]}
        e = ext(fake.url, filter_verb="filter", node_cache_capable=False)
        res = await e.filter(parsed_pod("p"), NODES)
        e.close()
    assert res.nodes == []


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"Error": "license server down"}, "license server down"),
        ({"NodeNames": ["n9"]}, 'claims a filtered node "n9" which is not found'),
        ((500, b"oops"), "failed filter with extender at URL http://127.0.0.1:"),
        ((200, b"{not json"), "decoding the filter answer"),
    ],
    ids=["error-field", "unknown-node", "http-500", "bad-json"],
)
async def test_filter_failures_raise_with_upstream_messages(answer: Any, message: str):
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda a: answer
        e = ext(fake.url, filter_verb="filter", node_cache_capable=True)
        with pytest.raises(ExtenderError, match=message) as err:
            await e.filter(parsed_pod("p"), NODES)
        e.close()
    if answer == (500, b"oops"):
        assert str(err.value).endswith("/ext/filter, code 500")


async def test_timeout_and_refused_connection_raise():
    async with FakeExtender() as fake:

        async def slow(args: Any) -> Any:
            await asyncio.sleep(5)
            return {}

        fake.handlers["filter"] = slow
        e = ext(fake.url, filter_verb="filter", http_timeout=Duration(200_000_000))
        with pytest.raises(ExtenderError, match=r"Client\.Timeout exceeded"):
            await e.filter(parsed_pod("p"), NODES)
        e.close()
        url = fake.url
    e = ext(url, filter_verb="filter")
    with pytest.raises(ExtenderError, match=r'Post "http://127\.0\.0\.1:\d+/ext/filter": connect'):
        await e.filter(parsed_pod("p"), NODES)


async def test_connections_are_reused_and_a_dropped_idle_connection_is_replaced():
    async with FakeExtender() as fake:
        fake.handlers["filter"] = lambda a: {"NodeNames": names_of(a)}
        e = ext(fake.url, filter_verb="filter", node_cache_capable=True)
        for _ in range(3):
            assert (await e.filter(parsed_pod("p"), NODES)).nodes == ["n1", "n2", "n3"]
        assert len(e._transport._idle) == 1
        # The server goes away and comes back on the same port: the idle connection is
        # dead, the next call opens a new one.
        port = fake.port
    async with FakeExtender() as again:
        again.handlers["filter"] = lambda a: {"NodeNames": ["n2"]}
        e._transport._port = again.port
        assert port  # (the port differs; the stale connection is what matters)
        assert (await e.filter(parsed_pod("p"), NODES)).nodes == ["n2"]
        e.close()


async def test_chunked_answers_are_read():
    app = web.Application()

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        resp.content_type = "application/json"
        await resp.prepare(request)
        await resp.write(b'{"NodeNames": ["n1",')
        await resp.write(b' "n3"]}')
        await resp.write_eof()
        return resp

    app.router.add_post("/x/filter", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        e = ext(f"http://127.0.0.1:{port}/x/", filter_verb="filter", node_cache_capable=True)
        assert (await e.filter(parsed_pod("p"), NODES)).nodes == ["n1", "n3"]
        e.close()
    finally:
        await runner.cleanup()


# ---- prioritize -------------------------------------------------------------------------


async def test_prioritize_returns_the_host_priority_list():
    async with FakeExtender() as fake:
        fake.handlers["prioritize"] = lambda a: [
            {"Host": n, "Score": i} for i, n in enumerate(names_of(a))
        ]
        e = ext(fake.url, prioritize_verb="prioritize", weight=3)
        assert await e.prioritize(parsed_pod("p"), NODES) == [("n1", 0), ("n2", 1), ("n3", 2)]
        assert e.weight() == 3
        e.close()
    (args,) = fake.calls("prioritize")
    assert args["NodeNames"] is None and len(args["Nodes"]["items"]) == 3


async def test_verbs_not_configured_make_no_call():
    e = ext("http://127.0.0.1:1", weight=1)
    assert (await e.filter(parsed_pod("p"), NODES)).nodes == ["n1", "n2", "n3"]
    assert await e.prioritize(parsed_pod("p"), NODES) == [("n1", 0), ("n2", 0), ("n3", 0)]
    assert not (e.is_filter() or e.is_prioritizer() or e.is_binder() or e.supports_preemption())


# ---- interest ---------------------------------------------------------------------------


def _pod_with(resources: dict[str, Any], *, init: bool = False) -> Any:
    container = {"name": "c", "image": "i", "resources": resources}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "i"}]}
    if init:
        spec["initContainers"] = [container]
    else:
        spec["containers"].append(container)
    return parsed_pod("p", cpu=None, memory=None, extra_spec=spec)


@pytest.mark.parametrize(
    ("managed", "pod", "interested"),
    [
        ([], _pod_with({}), True),
        (["example.com/gpu"], _pod_with({"requests": {"example.com/gpu": "1"}}), True),
        (["example.com/gpu"], _pod_with({"limits": {"example.com/gpu": "1"}}), True),
        (["example.com/gpu"], _pod_with({"limits": {"example.com/gpu": "1"}}, init=True), True),
        (["example.com/gpu"], _pod_with({"requests": {"cpu": "1"}}), False),
        (["example.com/gpu"], _pod_with({}), False),
    ],
    ids=[
        "no-managed-resources-wants-every-pod",
        "container-request",
        "container-limit",
        "init-container-limit",
        "other-resource",
        "no-resources",
    ],
)
def test_is_interested(managed: list[str], pod: Any, interested: bool):
    e = ext(
        "http://127.0.0.1:1",
        managed_resources=[ExtenderManagedResource(name=m) for m in managed],
    )
    assert e.is_interested(pod) is interested


# ---- bind -------------------------------------------------------------------------------


async def test_bind_sends_the_binding_args():
    async with FakeExtender() as fake:
        fake.handlers["bind"] = lambda a: {"Error": ""}
        e = ext(fake.url, bind_verb="bind")
        pod = parsed_pod("p", uid="u-1")
        await e.bind(pod, "n2")
        fake.handlers["bind"] = lambda a: {"Error": "node n2 is fenced"}
        with pytest.raises(ExtenderError, match="node n2 is fenced"):
            await e.bind(pod, "n2")
        e.close()
    assert fake.calls("bind")[0] == {
        "PodName": "p",
        "PodNamespace": "default",
        "PodUID": "u-1",
        "Node": "n2",
    }


# ---- preempt ----------------------------------------------------------------------------


@pytest.mark.parametrize("cache_capable", [False, True], ids=["victims", "meta-victims"])
async def test_process_preemption_sends_victims_and_resolves_the_answer(cache_capable: bool):
    preemptor = parsed_pod("big", uid="u-big")
    a, b, c = (parsed_pod(n, uid=f"u-{n}") for n in ("a", "b", "c"))
    victims = {"n1": ExtenderVictims([a, b], 1), "n2": ExtenderVictims([c], 0)}
    on_node = {"n1": [a, b], "n2": [c]}
    async with FakeExtender() as fake:
        # The extender drops n2 and spares b on n1.
        fake.handlers["preempt"] = lambda args: {
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-a"}], "NumPDBViolations": 0}}
        }
        e = HTTPExtender(
            Extender(url_prefix=fake.url, preempt_verb="preempt", node_cache_capable=cache_capable),
            node_pods=on_node.get,
        )
        out = await e.process_preemption(preemptor, victims)
        e.close()
    assert out == {"n1": ExtenderVictims([a], 0)}
    assert victims["n1"].pods == [a, b]  # the input is not modified
    (args,) = fake.calls("preempt")
    assert args["Pod"]["metadata"]["uid"] == "u-big"
    if cache_capable:
        assert args["NodeNameToVictims"] is None
        assert args["NodeNameToMetaVictims"] == {
            "n1": {"Pods": [{"UID": "u-a"}, {"UID": "u-b"}], "NumPDBViolations": 1},
            "n2": {"Pods": [{"UID": "u-c"}], "NumPDBViolations": 0},
        }
    else:
        assert args["NodeNameToMetaVictims"] is None
        sent = args["NodeNameToVictims"]
        assert [p["metadata"]["uid"] for p in sent["n1"]["Pods"]] == ["u-a", "u-b"]
        assert sent["n1"]["NumPDBViolations"] == 1
        assert sent["n2"]["Pods"][0]["metadata"]["name"] == "c"


async def test_process_preemption_rejects_pods_or_nodes_it_does_not_know():
    a = parsed_pod("a", uid="u-a")
    victims = {"n1": ExtenderVictims([a], 0)}
    async with FakeExtender() as fake:
        e = HTTPExtender(Extender(url_prefix=fake.url, preempt_verb="preempt"))
        fake.handlers["preempt"] = lambda args: {
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-zzz"}]}}
        }
        with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: &\{u-zzz\}\)"):
            await e.process_preemption(a, victims)
        fake.handlers["preempt"] = lambda args: {"NodeNameToMetaVictims": {"n7": {"Pods": []}}}
        with pytest.raises(ExtenderError, match='nodeinfo not found for node name "n7"'):
            await e.process_preemption(a, victims)
        # Without a node cache attached, the pods passed in are what UIDs resolve to.
        fake.handlers["preempt"] = lambda args: {
            "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-a"}], "NumPDBViolations": 2}}
        }
        assert await e.process_preemption(a, victims) == {"n1": ExtenderVictims([a], 2)}
        e.close()
    assert e.supports_preemption() and not ext("http://x").supports_preemption()


# ---- TLS --------------------------------------------------------------------------------


async def test_https_with_ca_data_verifies_and_enable_https_alone_skips_verification():
    chain, key = self_signed_pair()
    with tempfile.NamedTemporaryFile() as cf, tempfile.NamedTemporaryFile() as kf:
        cf.write(chain)
        cf.flush()
        kf.write(key)
        kf.flush()
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ctx.load_cert_chain(cf.name, kf.name)
    async with FakeExtender(ssl_context=server_ctx) as fake:
        fake.handlers["filter"] = lambda a: {"NodeNames": ["n1"]}
        verified = ext(
            fake.url,
            filter_verb="filter",
            node_cache_capable=True,
            tls_config=ExtenderTLSConfig(ca_data=base64.b64encode(chain).decode()),
        )
        assert (await verified.filter(parsed_pod("p"), NODES)).nodes == ["n1"]
        verified.close()
        # No CA: upstream turns enableHTTPS into an insecure connection.
        insecure = ext(fake.url, filter_verb="filter", node_cache_capable=True, enable_https=True)
        assert (await insecure.filter(parsed_pod("p"), NODES)).nodes == ["n1"]
        insecure.close()
        # Neither: the system roots do not know this CA.
        strict = ext(fake.url, filter_verb="filter", node_cache_capable=True)
        with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
            await strict.filter(parsed_pod("p"), NODES)
        strict.close()


def test_tls_settings_that_cannot_work_are_refused_when_building():
    with pytest.raises(ExtenderError, match="insecure flag is not allowed"):
        build_extenders(
            [
                Extender(
                    url_prefix="https://x",
                    tls_config=ExtenderTLSConfig(insecure=True, ca_data="Zm9v"),
                )
            ]
        )
    with pytest.raises(ExtenderError, match="must be given together"):
        build_extenders(
            [Extender(url_prefix="https://x", tls_config=ExtenderTLSConfig(cert_file="/a"))]
        )
    with pytest.raises(ExtenderError, match="not an http"):
        build_extenders([Extender(url_prefix="ftp://x")])
