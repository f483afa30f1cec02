"""The informer's transform: every object, listed or watched, is transformed before the
store or a handler sees it; the default drops ``metadata.managedFields``."""

from __future__ import annotations

import asyncio
from typing import Any

from ksched.client.informer import Informer, strip_managed_fields
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
