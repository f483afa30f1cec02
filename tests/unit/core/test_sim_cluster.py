"""The embedded cluster keeps the API server's contract: versions, watch, Gone, conflicts."""

from __future__ import annotations

import asyncio

import pytest

from ksched.cluster import Conflict, Gone, NotFound
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod


async def _next(it, timeout: float = 1.0):  # type: ignore[no-untyped-def]
    return await asyncio.wait_for(it.__anext__(), timeout)


async def test_watch_replays_changes_after_the_version_then_follows() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("a"))
    listing = await c.list(kind="nodes")
    c.create("nodes", make_node("b"))
    watch = c.watch(kind="nodes", resource_version=listing.resource_version)
    ev = await _next(watch)
    assert (ev.type, ev.object["metadata"]["name"]) == ("ADDED", "b")
    c.delete("nodes", "a")
    ev = await _next(watch)
    assert (ev.type, ev.object["metadata"]["name"]) == ("DELETED", "a")
    await watch.aclose()


async def test_compacted_version_is_gone() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("a"))
    c.create("nodes", make_node("b"))
    c.compact()
    with pytest.raises(Gone):
        await _next(c.watch(kind="nodes", resource_version="1"))


async def test_bind_sets_node_name_once() -> None:
    c = InMemoryCluster()
    pod = c.create("pods", make_pod("p"))
    uid = pod["metadata"]["uid"]
    await c.bind(namespace="default", name="p", uid=uid, node_name="n1")
    stored = c.get("pods", "default/p")
    assert stored is not None and stored["spec"]["nodeName"] == "n1"
    assert pod["spec"].get("nodeName") is None, "objects handed out are never mutated"
    with pytest.raises(Conflict, match="already assigned"):
        await c.bind(namespace="default", name="p", uid=uid, node_name="n2")
    with pytest.raises(Conflict, match="UID"):
        await c.bind(namespace="default", name="p", uid="other", node_name="n2")
    with pytest.raises(NotFound):
        await c.bind(namespace="default", name="nope", uid="", node_name="n2")


async def test_bind_clears_the_nominated_node_as_the_api_server_does() -> None:
    c = InMemoryCluster()
    pod = make_pod("p")
    pod["status"]["nominatedNodeName"] = "n1"
    uid = c.create("pods", pod)["metadata"]["uid"]
    await c.bind(namespace="default", name="p", uid=uid, node_name="n1")
    stored = c.get("pods", "default/p")
    assert stored is not None and "nominatedNodeName" not in stored["status"]


async def test_status_patch_merges_conditions_by_type() -> None:
    c = InMemoryCluster()
    c.create("pods", make_pod("p"))
    patch = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    await c.patch_pod_status(namespace="default", name="p", patch=patch)
    await c.patch_pod_status(namespace="default", name="p", patch=patch)
    stored = c.get("pods", "default/p")
    assert stored is not None
    assert stored["status"]["conditions"] == [{"type": "PodScheduled", "status": "False"}]
