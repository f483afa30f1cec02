"""The informer's transform: every object, listed or watched, is transformed before the
store or a handler sees it; the default drops ``metadata.managedFields``."""

from __future__ import annotations

import asyncio
from typing import Any

from ksched.client.informer import Informer, share_unchanged, strip_managed_fields
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node

Obj = dict[str, Any]

MANAGED = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:metadata": {}}}]


def node(name: str) -> Obj:
    obj = make_node(name)
    obj["metadata"]["managedFields"] = list(MANAGED)
    return obj


async def test_listed_and_watched_objects_are_stored_and_handled_without_managed_fields() -> None:
    c = InMemoryCluster()
    c.create("nodes", node("listed"))
    handled: list[Obj] = []
    inf = Informer(
        c,
        "nodes",
        on_add=handled.append,
        on_update=lambda old, new: handled.append(new),
        on_delete=handled.append,
    )
    task = asyncio.get_running_loop().create_task(inf.run())
    await inf.synced.wait()
    c.create("nodes", node("watched"))
    updated = node("listed")
    updated["metadata"]["labels"]["x"] = "y"
    c.update("nodes", updated)
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    assert sorted(inf.store) == ["listed", "watched"]
    assert inf.store["listed"]["metadata"]["labels"]["x"] == "y"
    assert [o["metadata"]["name"] for o in handled] == ["listed", "watched", "listed"]
    for obj in [*inf.store.values(), *handled]:
        assert "managedFields" not in obj["metadata"]


async def test_a_transform_of_none_keeps_objects_as_served() -> None:
    c = InMemoryCluster()
    c.create("nodes", node("n"))
    inf = Informer(
        c, "nodes", on_add=lambda o: None, on_update=lambda a, b: None,
        on_delete=lambda o: None, transform=None,
    )  # fmt: skip
    task = asyncio.get_running_loop().create_task(inf.run())
    await inf.synced.wait()
    task.cancel()
    assert inf.store["n"]["metadata"]["managedFields"] == MANAGED


def test_strip_managed_fields_tolerates_objects_without_metadata() -> None:
    assert strip_managed_fields({}) == {}
    assert strip_managed_fields({"metadata": None}) == {"metadata": None}
    assert strip_managed_fields({"metadata": {"name": "a", "managedFields": []}}) == {
        "metadata": {"name": "a"}
    }


def pod(name: str, node: str = "", image: str = "pause") -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "a"}},
        "spec": {
            "containers": [{"name": "c", "image": image, "resources": {"requests": {"cpu": "1"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            **({"nodeName": node} if node else {}),
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled"}]},
    }


def test_an_update_shares_what_did_not_change_with_the_object_it_replaces() -> None:
    old = pod("p")
    new = pod("p", node="n1")
    new["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    share_unchanged(old, new)
    assert new == {**pod("p", node="n1"), "status": new["status"]}  # values unchanged
    assert new["spec"]["containers"] is old["spec"]["containers"]
    assert new["spec"]["tolerations"] is old["spec"]["tolerations"]
    assert new["metadata"]["labels"] is old["metadata"]["labels"]
    assert new["spec"] is not old["spec"] and new["spec"]["nodeName"] == "n1"
    assert new["status"]["conditions"] is not old["status"]["conditions"]
    assert new["status"]["conditions"][0]["status"] == "True"


def test_only_values_of_the_same_type_are_shared() -> None:
    old = {"spec": {"a": 1, "b": [1], "c": "x"}}
    new = {"spec": {"a": True, "b": [1], "c": "x"}}
    share_unchanged(old, new)
    assert new["spec"]["a"] is True
    assert new["spec"]["b"] is old["spec"]["b"]


async def test_siblings_share_their_template_and_updates_share_with_their_old_object() -> None:
    c = InMemoryCluster()
    for i in range(3):
        c.create("pods", pod(f"p{i}", image="other" if i == 2 else "pause"))
    inf = Informer(c, "pods", on_add=lambda o: None, on_update=lambda a, b: None,
                   on_delete=lambda o: None)  # fmt: skip
    task = asyncio.get_running_loop().create_task(inf.run())
    await inf.synced.wait()
    p0, p1, p2 = (inf.store[f"ns/p{i}"] for i in range(3))
    assert p1["spec"]["tolerations"] is p0["spec"]["tolerations"]
    assert p1["spec"]["containers"] is p0["spec"]["containers"]
    assert p2["spec"]["tolerations"] is p1["spec"]["tolerations"]
    assert p2["spec"]["containers"] is not p1["spec"]["containers"]  # a different image
    assert p2["spec"]["containers"][0]["image"] == "other"
    # An update arriving by watch shares with the object it replaces (not the last one).
    bound = pod("p2", node="n", image="other")
    c.update("pods", bound)
    for _ in range(20):
        await asyncio.sleep(0)
    task.cancel()
    assert inf.store["ns/p2"]["spec"]["nodeName"] == "n"
    assert inf.store["ns/p2"]["spec"]["containers"] is p2["spec"]["containers"]
