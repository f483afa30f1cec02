"""ksched.client against a real kube-apiserver v1.36: every verb the scheduler uses,
the errors it maps, the credentials it loads, and its rate limit."""

from __future__ import annotations

import asyncio
import json
import stat
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ksched.client.api import KubeClusterAPI, connect
from ksched.client.rest import MERGE_PATCH
from ksched.cluster import APIError, Conflict, Gone, NotFound, WatchEvent
from ksched.sim.workloads import make_pod
from ksched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.integration

Obj = dict[str, Any]


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[KubeClusterAPI]:
    client = connect(kubeconfig=str(kubeconfig), qps=-1, burst=0)
    try:
        yield client
    finally:
        await client.close()


async def create_pod(api: KubeClusterAPI, namespace: str, name: str, **kw: Any) -> Obj:
    obj = make_pod(name, namespace=namespace, **kw)
    obj.pop("status")
    pod: Obj = await api.rest.request_json("POST", f"/api/v1/namespaces/{namespace}/pods", body=obj)
    return pod


async def get_pod(api: KubeClusterAPI, namespace: str, name: str) -> Obj:
    pod: Obj = await api.rest.request_json("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return pod


async def next_events(
    stream: AsyncIterator[WatchEvent], until: Callable[[WatchEvent], bool], timeout: float = 20.0
) -> list[WatchEvent]:
    """Events from ``stream`` (bookmarks aside) up to the first one ``until`` accepts."""
    out: list[WatchEvent] = []

    async def take() -> None:
        async for ev in stream:
            if ev.type != "BOOKMARK":
                out.append(ev)
                if until(ev):
                    return

    await asyncio.wait_for(take(), timeout)
    return out


def deleted(name: str) -> Callable[[WatchEvent], bool]:
    return lambda ev: ev.type == "DELETED" and ev.object["metadata"]["name"] == name


async def test_list_pages_through_the_collection_and_skips_finished_pods(
    api: KubeClusterAPI, namespace: str
) -> None:
    names = {f"p{i:02d}" for i in range(25)}
    await asyncio.gather(*(create_pod(api, namespace, n) for n in names))
    # A finished pod is not the scheduler's business (kube-scheduler's field selector).
    await api.rest.request_json(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/p00/status",
        body={"status": {"phase": "Succeeded"}},
        content_type=MERGE_PATCH,
    )
    api.page_size = 10
    before = api.rest.requests
    listing = await api.list(kind="pods")
    mine = {p["metadata"]["name"] for p in listing.items if p["metadata"]["namespace"] == namespace}
    assert mine == names - {"p00"}
    assert api.rest.requests - before >= 3  # 24+ pods in pages of 10
    assert int(listing.resource_version) > 0
    # Every page came from the same snapshot: no duplicates across pages.
    keys = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in listing.items]
    assert len(keys) == len(set(keys))


async def test_watch_reads_large_objects_and_reports_changes_in_order(
    api: KubeClusterAPI, namespace: str
) -> None:
    rv = (await api.list(kind="pods")).resource_version
    stream = api.watch(kind="pods", resource_version=rv)
    # One watch line of ~1.5 MiB: far beyond a default 64 KiB line limit.
    big = make_pod("big", namespace=namespace)
    big.pop("status")
    big["spec"]["containers"][0]["env"] = [{"name": "BLOB", "value": "x" * 1_500_000}]
    await api.rest.request_json("POST", f"/api/v1/namespaces/{namespace}/pods", body=big)
    small = await create_pod(api, namespace, "small")
    await api.rest.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/small")
    events = await next_events(stream, deleted("small"))
    await stream.aclose()  # type: ignore[attr-defined]
    seen = [(e.type, e.object["metadata"]["name"]) for e in events]
    # Deletion first sets deletionTimestamp (MODIFIED), then removes the pod.
    assert seen[:2] == [("ADDED", "big"), ("ADDED", "small")]
    assert seen[-1] == ("DELETED", "small")
    assert set(seen[2:-1]) <= {("MODIFIED", "small")}
    env = events[0].object["spec"]["containers"][0]["env"]
    assert env[0]["value"] == "x" * 1_500_000
    assert events[1].object["metadata"]["uid"] == small["metadata"]["uid"]


async def test_a_pod_that_finishes_leaves_the_watch_as_deleted(
    api: KubeClusterAPI, namespace: str
) -> None:
    await create_pod(api, namespace, "job")
    rv = (await api.list(kind="pods")).resource_version
    stream = api.watch(kind="pods", resource_version=rv)
    await api.rest.request_json(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/job/status",
        body={"status": {"phase": "Failed"}},
        content_type=MERGE_PATCH,
    )
    events = await next_events(stream, deleted("job"))
    await stream.aclose()  # type: ignore[attr-defined]
    assert [e.type for e in events] == ["DELETED"]


async def test_writes_and_their_errors(api: KubeClusterAPI, namespace: str) -> None:
    node = f"node-{uuid.uuid4().hex[:6]}"  # a binding may name a node that does not exist
    pod = await create_pod(api, namespace, "p")
    uid = pod["metadata"]["uid"]

    with pytest.raises(NotFound):
        await api.bind(namespace=namespace, name="missing", uid="", node_name=node)
    with pytest.raises(Conflict, match="Precondition failed"):
        await api.bind(namespace=namespace, name="p", uid="not-the-uid", node_name=node)

    # PodScheduled=False twice: the strategic merge keys conditions by type.
    for message in ("first", "second"):
        await api.patch_pod_status(
            namespace=namespace,
            name="p",
            patch={
                "status": {
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": message,
                        }
                    ],
                    "nominatedNodeName": node,
                }
            },
        )
    got = await get_pod(api, namespace, "p")
    conds = [c for c in got["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert [(c["status"], c["message"]) for c in conds] == [("False", "second")]
    assert got["status"]["nominatedNodeName"] == node
    with pytest.raises(NotFound):
        await api.patch_pod_status(namespace=namespace, name="missing", patch={"status": {}})

    await api.bind(namespace=namespace, name="p", uid=uid, node_name=node)
    got = await get_pod(api, namespace, "p")
    assert got["spec"]["nodeName"] == node
    with pytest.raises(Conflict, match="already assigned"):
        await api.bind(namespace=namespace, name="p", uid=uid, node_name=node)

    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"p.{uuid.uuid4().hex[:8]}", "namespace": namespace},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "default-scheduler",
        "reportingInstance": "ksched-test",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": "p"},
        "note": f"Successfully assigned {namespace}/p to {node}",
        "type": "Normal",
    }
    await api.create_event(event=event)
    with pytest.raises(Conflict) as exc:  # same name again: 409 AlreadyExists
        await api.create_event(event=event)
    assert exc.value.reason == "AlreadyExists"
    bad = {**event, "metadata": {"name": "bad", "namespace": namespace}, "type": "Sideways"}
    with pytest.raises(APIError) as err:
        await api.create_event(event=bad)
    assert err.value.status == 422 and err.value.reason == "Invalid"

    other = await create_pod(api, namespace, "victim")
    with pytest.raises(Conflict):
        await api.delete_pod(namespace=namespace, name="victim", uid="not-the-uid")
    await api.delete_pod(namespace=namespace, name="victim", uid=other["metadata"]["uid"])
    with pytest.raises(NotFound):  # an unbound pod goes at once
        await get_pod(api, namespace, "victim")
    with pytest.raises(NotFound):
        await api.delete_pod(namespace=namespace, name="victim", uid="")


async def test_watch_from_before_an_apiserver_restart_is_gone(
    control_plane: ControlPlane, api: KubeClusterAPI, namespace: str
) -> None:
    rv = (await api.list(kind="nodes")).resource_version
    # Any write moves etcd's revision past rv; the restarted apiserver's watch cache
    # starts there, so it cannot replay from rv.
    await api.rest.request_json(
        "POST", f"/api/v1/namespaces/{namespace}/configmaps", body={"metadata": {"name": "bump"}}
    )
    await asyncio.to_thread(control_plane.restart_apiserver, kill=True)

    async def watch_nodes() -> None:
        async for _ in api.watch(kind="nodes", resource_version=rv):
            pass

    with pytest.raises(Gone, match="too old resource version"):
        await asyncio.wait_for(watch_nodes(), 30)


async def test_an_identity_without_rights_gets_forbidden(control_plane: ControlPlane) -> None:
    kubeconfig = control_plane.kubeconfig_for("nobody")
    async with connect(kubeconfig=str(kubeconfig)) as api:
        with pytest.raises(APIError) as exc:
            await api.list(kind="nodes")
    assert exc.value.status == 403 and exc.value.reason == "Forbidden"
    assert 'User "nobody" cannot list resource "nodes"' in exc.value.message


# ------------------------------------------------------------------------ credentials


async def scheduler_token(api: KubeClusterAPI, namespace: str) -> str:
    """A token of a ServiceAccount bound to the upstream ``system:kube-scheduler`` role."""
    sa = "ksched"
    await api.rest.request_json(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        body={"metadata": {"name": sa}},
    )
    await api.rest.request_json(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        body={
            "metadata": {"name": f"ksched-{namespace}"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:kube-scheduler",
            },
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
        },
    )
    answer = await api.rest.request_json(
        "POST",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/{sa}/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    token: str = answer["status"]["token"]
    return token


def write_kubeconfig(control_plane: ControlPlane, path: Path, user: Obj) -> Path:
    admin = json.loads(control_plane.kubeconfig.read_text())
    cfg = {
        **admin,
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "ksched-test", "user": "u"}}],
        "current-context": "c",
    }
    path.write_text(json.dumps(cfg))
    return path


async def test_bearer_token_token_file_and_exec_plugin_credentials(
    control_plane: ControlPlane, api: KubeClusterAPI, namespace: str, tmp_path: Path
) -> None:
    token = await scheduler_token(api, namespace)
    token_file = tmp_path / "token"
    token_file.write_text(token)
    plugin = tmp_path / "credential-plugin"
    cred = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    plugin.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(cred)}\nEOF\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    users = {
        "token": {"token": token},
        "tokenFile": {"tokenFile": str(token_file)},
        "exec": {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": str(plugin),
                "interactiveMode": "Never",
            }
        },
    }
    try:
        for kind, user in users.items():
            path = write_kubeconfig(control_plane, tmp_path / f"{kind}.kubeconfig", user)
            async with connect(kubeconfig=str(path)) as sa_api:
                # The scheduler's role may list nodes and pods, but not delete nodes.
                assert (await sa_api.list(kind="nodes")).resource_version, kind
                await sa_api.list(kind="pods")
                with pytest.raises(APIError) as exc:
                    await sa_api.rest.request("DELETE", "/api/v1/nodes/whatever")
                assert exc.value.status == 403, kind
    finally:
        await api.rest.request(
            "DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/ksched-{namespace}"
        )


async def test_requests_respect_the_qps_and_burst_rate_limit(kubeconfig: Path) -> None:
    async with connect(kubeconfig=str(kubeconfig), qps=10, burst=2) as api:
        t0 = time.monotonic()
        await asyncio.gather(*(api.rest.request("GET", "/version") for _ in range(12)))
        elapsed = time.monotonic() - t0
    # 2 at once, then 10 more at 10 per second.
    assert 0.9 <= elapsed < 3.0, elapsed
