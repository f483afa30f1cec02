"""PodTopologySpread's System default constraints follow the pod's workload, as
upstream's DefaultSelector: Services selecting the pod and its controller's selector."""

from __future__ import annotations

import asyncio
from typing import Any

from ksched.api.pod import Pod
from ksched.backend.controllers import ControllerIndex
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": True}


def _rs(selector: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "web-1", "namespace": "default"}, "spec": {"selector": selector}}


def _svc(selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return {"metadata": {"name": "svc", "namespace": "default"}, "spec": spec}


def test_services_and_controller_make_the_selector() -> None:
    idx = ControllerIndex()
    labels = {"app": "web", "tier": "front"}
    assert idx.default_selector("default", labels, [RS_OWNER]) is None
    idx.upsert("services", _svc({"app": "web"}))
    idx.upsert(
        "services", {**_svc({"app": "db"}), "metadata": {"name": "db", "namespace": "default"}}
    )
    assert idx.default_selector("default", labels, []) == {"matchLabels": {"app": "web"}}
    idx.upsert("replicasets", _rs({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}))
    assert idx.default_selector("default", labels, [RS_OWNER]) == {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
    }
    # Another namespace's objects do not count; a non-controller owner does not count.
    assert idx.default_selector("other", labels, [RS_OWNER]) is None
    assert idx.default_selector("default", labels, [{**RS_OWNER, "controller": False}]) == {
        "matchLabels": {"app": "web"}
    }


def test_generation_changes_only_when_a_selector_does() -> None:
    idx = ControllerIndex()
    idx.upsert("replicasets", _rs({"matchLabels": {"app": "web"}}))
    g = idx.generation
    status_update = _rs({"matchLabels": {"app": "web"}})
    status_update["status"] = {"replicas": 3}
    idx.upsert("replicasets", status_update)
    assert idx.generation == g
    idx.delete("replicasets", status_update)
    assert idx.generation == g + 1


async def test_pods_of_a_replicaset_are_spread_by_the_default_constraints() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", labels={"topology.kubernetes.io/zone": f"z{i}"}))
    c.create("replicasets", _rs({"matchLabels": {"app": "web"}}))
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=1)
    await sched.start()
    try:
        for i in range(3):
            obj = make_pod(f"old-{i}", labels={"app": "web"}, node_name="n0")
            c.create("pods", obj)
        await asyncio.sleep(0.05)
        obj = make_pod("new", labels={"app": "web"})
        obj["metadata"]["ownerReferences"] = [RS_OWNER]
        obj["metadata"]["uid"] = "uid-new"
        pod = Pod.from_dict(obj)
        rows = {
            r["node"]: r["scores"]["PodTopologySpread"]["normalized"]
            for r in sched.cache.snapshot.explain(sched.compile(pod), default_profile().kernels)
        }
        # n0 already runs three pods of the workload: spreading prefers n1.
        assert rows["n1"] > rows["n0"]
        bare = Pod.from_dict({**obj, "metadata": {**obj["metadata"], "ownerReferences": []}})
        bare_rows = sched.cache.snapshot.explain(sched.compile(bare), default_profile().kernels)
        assert all(r["scores"]["PodTopologySpread"]["normalized"] == 0 for r in bare_rows)
    finally:
        await sched.shutdown()
