"""DefaultPreemption against the real kube-apiserver v1.36: a high-priority pod that fits
nowhere evicts exactly the victims upstream would choose and binds to its nominated node.

Priorities come from PriorityClasses through the apiserver's Priority admission, as in a
real cluster; a PodDisruptionBudget is read through ksched's informer. No kubelet runs:
victims with ``terminationGracePeriodSeconds: 0`` disappear at once, the others stay
terminating until the test deletes them as a kubelet would once they stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ksched.cluster import NotFound
from ksched.sim.workloads import make_node, make_pod
from tests.integration.test_client_scheduler import (
    Cluster,
    Running,
    config,
    eventually,
)
from tests.integration.test_client_scheduler import cluster as cluster  # the fixture

pytestmark = pytest.mark.integration

Obj = dict[str, Any]


@pytest.fixture
async def classes(cluster: Cluster) -> AsyncIterator[dict[str, str]]:
    """PriorityClasses "lowest" (5), "low" (10) and "high" (1000), unique per test."""
    suffix = uuid.uuid4().hex[:6]
    names = {level: f"{level}-{suffix}" for level in ("lowest", "low", "high")}
    values = {"lowest": 5, "low": 10, "high": 1000}
    for level, name in names.items():
        await cluster.rest.request_json(
            "POST",
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            body={
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": values[level],
            },
        )
    try:
        yield names
    finally:
        for name in names.values():
            with contextlib.suppress(NotFound):
                await cluster.rest.request(
                    "DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
                )


def pod(name: str, cls: str, cpu: str, *, node: str | None = None, **extra: Any) -> Obj:
    labels = extra.pop("labels", None)
    spec = {"priorityClassName": cls, **extra}
    return make_pod(name, cpu=cpu, memory="100Mi", node_name=node, labels=labels, extra_spec=spec)


async def _pod_or_none(cluster: Cluster, name: str) -> Obj | None:
    try:
        return await cluster.pod(name)
    except NotFound:
        return None


async def _bound_to(cluster: Cluster, name: str) -> str:
    obj = await _pod_or_none(cluster, name)
    return str(((obj or {}).get("spec") or {}).get("nodeName") or "")


async def test_high_priority_pod_preempts_the_cheapest_victims_and_binds_to_the_nominated_node(
    kubeconfig: Any, cluster: Cluster, classes: dict[str, str]
) -> None:
    await cluster.create_nodes(
        [make_node(n, cpu="2", memory="4Gi", pods="10") for n in ("n1", "n2")]
    )
    # n1 holds the cheapest pods by priority, but they are protected by a PDB that allows
    # no disruption (no disruption controller runs: its status stays at 0 allowed).
    # n2's pods violate nothing: the fewest PDB violations win. On n2 the more important
    # pod (priority "low") is reprieved, the "lowest" one is the victim.
    grace0 = {"terminationGracePeriodSeconds": 0}
    db = {"app": "db"}
    await cluster.create_pods(
        [
            pod("db-a", classes["lowest"], "1", node="n1", labels=db, **grace0),
            pod("db-b", classes["lowest"], "1", node="n1", labels=db, **grace0),
            pod("web-a", classes["low"], "1", node="n2", **grace0),
            pod("web-b", classes["lowest"], "1", node="n2", **grace0),
        ]
    )
    await cluster.rest.request_json(
        "POST",
        f"/apis/policy/v1/namespaces/{cluster.ns}/poddisruptionbudgets",
        body={
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": db}},
        },
    )
    async with Running(str(kubeconfig), config()) as sched:
        assert sched.pdb_informer is not None
        await eventually(
            lambda: _true(len(sched.pdb_informer.store) == 1 if sched.pdb_informer else False),
            what="the PDB in the informer",
        )
        seen: list[Obj] = []
        rv = (await cluster.api.list(kind="pods")).resource_version
        watching = asyncio.get_running_loop().create_task(_collect(cluster, rv, "vip", seen))
        created = await cluster.create_pod(pod("vip", classes["high"], "1"))
        uid = created["metadata"]["uid"]
        node = await eventually(lambda: _bound_to(cluster, "vip"), timeout=60, what="vip bound")
        assert node == "n2"
        await asyncio.sleep(0.5)
        watching.cancel()
        # The apiserver clears nominatedNodeName when it binds the pod (v1.34+): the
        # nomination shows in the pod's history, before the binding.
        nominated = [o["status"].get("nominatedNodeName") for o in seen]
        bound_at = next(i for i, o in enumerate(seen) if o["spec"].get("nodeName"))
        assert "n2" in nominated[:bound_at], nominated
        pods = await cluster.pods()
        assert set(pods) == {"db-a", "db-b", "web-a", "vip"}, "exactly web-b was preempted"
        events = await eventually(
            lambda: _events(cluster, "Preempted", 1), what="the Preempted event"
        )
        assert [(e["regarding"]["name"], e["note"]) for e in events] == [
            ("web-b", f"Preempted by pod {uid} on node n2")
        ]
        failed = [e for e in await cluster.events() if e["reason"] == "FailedScheduling"]
        assert [e["note"] for e in failed] == ["0/2 nodes are available: 2 Insufficient cpu."]
        assert sched.metrics.preemption_attempts.get() == 1


async def test_preemptor_waits_for_terminating_victims_then_binds(
    kubeconfig: Any, cluster: Cluster, classes: dict[str, str]
) -> None:
    await cluster.create_nodes([make_node("n1", cpu="2", memory="4Gi", pods="10")])
    # Default grace period: with no kubelet the victim stays terminating.
    await cluster.create_pods([pod("old", classes["low"], "2", node="n1")])
    async with Running(str(kubeconfig), config()) as sched:
        await cluster.create_pod(pod("vip", classes["high"], "1500m"))
        victim = await eventually(
            lambda: _terminating(cluster, "old"), what="the victim terminating"
        )
        cond = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
        assert {k: cond[k] for k in ("status", "reason", "message")} == {
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }
        vip = await eventually(lambda: _nominated(cluster, "vip"), what="vip nominated")
        assert vip["status"]["nominatedNodeName"] == "n1" and not vip["spec"].get("nodeName")
        # While the victim terminates the preemptor waits: it is not bound, and it does
        # not preempt again (the terminating victim on its nominated node).
        await asyncio.sleep(1.5)
        assert await _bound_to(cluster, "vip") == ""
        assert sched.metrics.preemption_victims.child(()).count == 1
        # The "kubelet" finishes the victim: the preemptor binds to its nominated node.
        await cluster.rest.request(
            "DELETE",
            f"/api/v1/namespaces/{cluster.ns}/pods/old",
            params={"gracePeriodSeconds": "0"},
        )
        assert await eventually(lambda: _bound_to(cluster, "vip"), what="vip bound") == "n1"


async def _collect(cluster: Cluster, rv: str, name: str, into: list[Obj]) -> None:
    async for ev in cluster.api.watch(kind="pods", resource_version=rv):
        if ev.object.get("metadata", {}).get("name") == name:
            into.append(ev.object)


async def _terminating(cluster: Cluster, name: str) -> Obj | None:
    obj = await _pod_or_none(cluster, name)
    return obj if obj is not None and obj["metadata"].get("deletionTimestamp") else None


async def _nominated(cluster: Cluster, name: str) -> Obj | None:
    obj = await _pod_or_none(cluster, name)
    return obj if obj is not None and obj["status"].get("nominatedNodeName") else None


async def _events(cluster: Cluster, reason: str, n: int) -> list[Obj] | None:
    events = [e for e in await cluster.events() if e["reason"] == reason]
    return events if len(events) >= n else None


async def _true(value: bool) -> bool:
    return value
