"""Preemption with the volume plugins: their AddPod/RemovePod in the dry run.

Ported from test/integration/scheduler/preemption/misc (TestReadWriteOncePodPreemption:
preempt single pod, preempt two pods, preempt single pod with two volumes) on the
embedded cluster with the default profile: a ReadWriteOncePod claim in use by a
lower-priority pod blocks the preemptor on every node (VolumeRestrictions' PreFilter
state counts the claim's users cluster-wide), and removing exactly the pods using the
claims in the dry run unblocks it. ksched's own cases: a disk conflict (Filter on the
node's pods) and a CSI attach limit (NodeVolumeLimits counts the node's pods' volumes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest

from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

Obj = dict[str, Any]
LOW, HIGH = 0, 1000
NS = "default"


def rwop_pv(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "accessModes": ["ReadWriteOncePod"],
            "capacity": {"storage": "1Mi"},
            "hostPath": {"path": f"/mnt/{name}", "type": "DirectoryOrCreate"},
        },
    }


def bound_pvc(name: str, pv: str, modes: Iterable[str] = ("ReadWriteOncePod",)) -> Obj:
    """A claim bound to ``pv`` (bind-completed and the volume name, as upstream's test)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": list(modes),
            "resources": {"requests": {"storage": "1Mi"}},
            "volumeName": pv,
        },
        "status": {"phase": "Bound"},
    }


PV1, PV2 = "pv-with-read-write-once-pod-1", "pv-with-read-write-once-pod-2"
PVC1, PVC2 = "pvc-with-read-write-once-pod-1", "pvc-with-read-write-once-pod-2"


def pause_pod(name: str, prio: int, *claims: str, node: str | None = None) -> Obj:
    volumes = [
        {"name": f"volume-{i}", "persistentVolumeClaim": {"claimName": c}}
        for i, c in enumerate(claims)
    ]
    return make_pod(
        name,
        cpu=None,
        memory=None,
        priority=prio,
        node_name=node,
        extra_spec={"volumes": volumes, "terminationGracePeriodSeconds": 0},
    )


async def _wait_for(cond: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


def _node_of(c: InMemoryCluster, name: str) -> str:
    obj = c.get("pods", f"{NS}/{name}")
    return str(((obj or {}).get("spec") or {}).get("nodeName") or "")


async def _run(c: InMemoryCluster, existing: list[Obj], preemptor: Obj) -> tuple[set[str], str]:
    """Schedule ``existing`` one by one, then ``preemptor``: (the pods preempted, the
    preemptor's node)."""
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=1)
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        for p in existing:
            c.create("pods", p)
            name = p["metadata"]["name"]
            await _wait_for(lambda name=name: _node_of(c, name) != "")
        before = {p["metadata"]["name"] for p in c.objects("pods")}
        c.create("pods", preemptor)
        await _wait_for(lambda: _node_of(c, preemptor["metadata"]["name"]) != "")
        left = {p["metadata"]["name"] for p in c.objects("pods")}
        return before - left, _node_of(c, preemptor["metadata"]["name"])
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def cluster(*objects: tuple[str, Obj]) -> InMemoryCluster:
    c = InMemoryCluster()
    c.create("nodes", make_node("node1", cpu="500m", memory="500", pods="32"))
    for kind, obj in objects:
        c.create(kind, obj)
    return c


BOTH = [
    ("persistentvolumes", rwop_pv(PV1)),
    ("persistentvolumes", rwop_pv(PV2)),
    ("persistentvolumeclaims", bound_pvc(PVC1, PV1)),
    ("persistentvolumeclaims", bound_pvc(PVC2, PV2)),
]


@pytest.mark.parametrize(
    ("objects", "existing", "preemptor", "preempted"),
    [
        pytest.param(
            BOTH[::2],
            [pause_pod("victim-pod", LOW, PVC1)],
            pause_pod("preemptor-pod", HIGH, PVC1),
            {"victim-pod"},
            id="preempt single pod",
        ),
        pytest.param(
            BOTH,
            [pause_pod("victim-pod-1", LOW, PVC1), pause_pod("victim-pod-2", LOW, PVC2)],
            pause_pod("preemptor-pod", HIGH, PVC1, PVC2),
            {"victim-pod-1", "victim-pod-2"},
            id="preempt two pods",
        ),
        pytest.param(
            BOTH,
            [pause_pod("victim-pod", LOW, PVC1, PVC2)],
            pause_pod("preemptor-pod", HIGH, PVC1, PVC2),
            {"victim-pod"},
            id="preempt single pod with two volumes",
        ),
    ],
)
async def test_read_write_once_pod_preemption(
    objects: list[tuple[str, Obj]], existing: list[Obj], preemptor: Obj, preempted: set[str]
) -> None:
    c = cluster(*objects)
    got, node = await _run(c, existing, preemptor)
    assert got == preempted
    assert node == "node1"


async def test_only_the_pods_using_the_claim_are_victims() -> None:
    # Two low pods on node1; only one uses the claim: the other survives the dry run's
    # minimal victim set.
    c = cluster(*BOTH[::2])
    existing = [pause_pod("bystander", LOW), pause_pod("holder", LOW, PVC1)]
    got, node = await _run(c, existing, pause_pod("preemptor", HIGH, PVC1))
    assert got == {"holder"}
    assert node == "node1"


def gce_pod(name: str, prio: int) -> Obj:
    vol = {"name": "disk", "gcePersistentDisk": {"pdName": "disk-1", "fsType": "ext4"}}
    return make_pod(
        name,
        cpu=None,
        memory=None,
        priority=prio,
        extra_spec={"volumes": [vol], "terminationGracePeriodSeconds": 0},
    )


async def test_a_disk_conflict_is_resolved_by_preempting_the_disk_user() -> None:
    c = cluster()
    got, node = await _run(c, [gce_pod("disk-user", LOW)], gce_pod("vip", HIGH))
    assert got == {"disk-user"}
    assert node == "node1"


def csi_pv(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Mi"},
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": name},
        },
    }


async def test_an_attach_limit_is_resolved_by_preempting_a_volume_user() -> None:
    objects: list[tuple[str, Obj]] = [
        (
            "csinodes",
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": "node1"},
                "spec": {
                    "drivers": [
                        {"name": "ebs.csi.aws.com", "nodeID": "node1", "allocatable": {"count": 1}}
                    ]
                },
            },
        )
    ]
    for i in range(2):
        objects += [
            ("persistentvolumes", csi_pv(f"pv-{i}")),
            ("persistentvolumeclaims", bound_pvc(f"data-{i}", f"pv-{i}", ("ReadWriteOnce",))),
        ]
    c = cluster(*objects)
    got, node = await _run(c, [pause_pod("user", LOW, "data-0")], pause_pod("vip", HIGH, "data-1"))
    assert got == {"user"}
    assert node == "node1"
