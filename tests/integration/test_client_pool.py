"""ksched.client against a real kube-apiserver v1.36, at the scale of a backlog: the
informers store objects without ``managedFields`` (list and watch paths), and a burst of
bindings far beyond the connection bound all succeed over a few keep-alive connections
while the watches stay open."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ksched.client.api import KubeClusterAPI, connect
from ksched.client.informer import Informer
from ksched.sim.workloads import make_pod
from ksched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.integration

Obj = dict[str, Any]


@pytest.fixture
async def api(kubeconfig: Path) -> AsyncIterator[KubeClusterAPI]:
    client = connect(kubeconfig=str(kubeconfig), qps=-1, burst=0, max_connections=4)
    try:
        yield client
    finally:
        await client.close()


async def create_pod(api: KubeClusterAPI, namespace: str, name: str) -> Obj:
    obj = make_pod(name, namespace=namespace)
    obj.pop("status")
    pod: Obj = await api.rest.request_json("POST", f"/api/v1/namespaces/{namespace}/pods", body=obj)
    return pod


def connections_to(port: int) -> int:
    """Established TCP connections of this process to ``127.0.0.1:port``."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    n = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                cols = line.split()
                remote, state, inode = cols[2], cols[3], cols[9]
                if state == "01" and inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
                    n += 1
    return n


async def test_informer_stores_no_managed_fields_from_the_list_or_the_watch(
    api: KubeClusterAPI, namespace: str
) -> None:
    listed = await create_pod(api, namespace, "listed")
    # The apiserver does send them: the test would see any that slipped through.
    assert listed["metadata"]["managedFields"]
    handled: list[Obj] = []
    informer = Informer(
        api,
        "pods",
        on_add=handled.append,
        on_update=lambda old, new: handled.append(new),
        on_delete=handled.append,
    )
    task = asyncio.ensure_future(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 30)
        watched = await create_pod(api, namespace, "watched")
        assert watched["metadata"]["managedFields"]
        key = f"{namespace}/watched"
        for _ in range(300):
            if key in informer.store:
                break
            await asyncio.sleep(0.05)
        mine = [informer.store[f"{namespace}/{n}"] for n in ("listed", "watched")]
        assert [p["metadata"]["uid"] for p in mine] == [
            listed["metadata"]["uid"],
            watched["metadata"]["uid"],
        ]
        assert all("managedFields" not in p["metadata"] for p in informer.store.values())
        assert handled and all("managedFields" not in p["metadata"] for p in handled)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_burst_of_bindings_all_succeed_over_a_few_connections(
    api: KubeClusterAPI, namespace: str, control_plane: ControlPlane
) -> None:
    names = [f"p{i:03d}" for i in range(300)]
    await asyncio.gather(*(create_pod(api, namespace, n) for n in names))
    rv = (await api.list(kind="pods")).resource_version
    # Watches (more of them than the bound) are open during the burst...
    watches = [api.watch(kind="pods", resource_version=rv) for _ in range(6)]
    readers = [asyncio.ensure_future(w.__anext__()) for w in watches]
    await asyncio.sleep(0.2)
    before = connections_to(control_plane.port)
    await asyncio.gather(
        *(
            api.bind(namespace=namespace, name=n, uid="", node_name=f"node-{i % 7}")
            for i, n in enumerate(names)
        )
    )
    during = connections_to(control_plane.port)
    # ... and still deliver: the first binding's event arrives on every one of them.
    events = await asyncio.wait_for(asyncio.gather(*readers), 30)
    assert all(ev.object["spec"].get("nodeName") for ev in events)
    for w in watches:
        await w.aclose()  # type: ignore[attr-defined]
    assert api.rest.max_in_flight == 4
    assert during - before <= 4, (before, during)
    pods = await api.rest.request_json("GET", f"/api/v1/namespaces/{namespace}/pods")
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods["items"]}
    assert bound == {n: f"node-{i % 7}" for i, n in enumerate(names)}
