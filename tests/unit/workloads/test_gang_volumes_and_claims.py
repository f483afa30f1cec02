"""Gangs whose members use volumes or ResourceClaims, on the embedded cluster: the pod
group cycle runs the volume plugins' and DynamicResources' PreFilter, Filter, Reserve
and PreBind for each member as the single-pod cycle does, so members never share a
device, land where their volumes are, and a gang that cannot get a device for every
member binds nothing (its claims are left unallocated)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node
from tests.helpers import wait_for
from tests.plugins.dynamic_resources.fixtures import device, device_class, slice_with_devices
from tests.unit.workloads.helpers import Running, bound, events_of, member, pod_group, profiles

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


def gpu_slice(node: str, n: int) -> Obj:
    devs = [device(f"gpu-{i}", {"memory": "40Gi"}, {}) for i in range(n)]
    return slice_with_devices(f"{node}-gpus", node, node, DRIVER, *devs)


def gpu_claim(name: str) -> Obj:
    exactly = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def with_claim(pod: Obj, claim: str) -> Obj:
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return pod


def allocation(c: InMemoryCluster, claim: str) -> list[tuple[str, str]]:
    obj = c.get("resourceclaims", f"default/{claim}") or {}
    alloc = (obj.get("status") or {}).get("allocation") or {}
    return [(r["pool"], r["device"]) for r in (alloc.get("devices") or {}).get("results") or []]


def gpu_cluster(nodes: int, gpus_per_node: int) -> InMemoryCluster:
    c = InMemoryCluster()
    c.create("deviceclasses", device_class("gpu", DRIVER))
    for i in range(nodes):
        # Room for every member on every node: only the devices tell them apart.
        c.create("nodes", make_node(f"n{i}", cpu="8", memory="32Gi"))
        c.create("resourceslices", gpu_slice(f"n{i}", gpus_per_node))
    return c


@pytest.mark.parametrize(("nodes", "gpus", "members"), [(2, 1, 2), (3, 1, 3), (1, 3, 3)])
async def test_gang_members_with_claims_get_distinct_devices_and_are_reserved(
    nodes: int, gpus: int, members: int
) -> None:
    c = gpu_cluster(nodes, gpus)
    c.create("podgroups", pod_group("train", members))
    async with Running(c, profiles()):
        for i in range(members):
            c.create("resourceclaims", gpu_claim(f"gpu-{i}"))
            c.create("pods", with_claim(member(f"w{i}", "train", cpu="100m"), f"gpu-{i}"))
        await wait_for(lambda: len(bound(c, "w")) == members)
        # PreBind wrote each claim's allocation and reservation.
        await wait_for(lambda: all(allocation(c, f"gpu-{i}") for i in range(members)))
    devices = [d for i in range(members) for d in allocation(c, f"gpu-{i}")]
    # Each member's Reserve made its device in flight for the next members' Filter.
    assert len(set(devices)) == members
    for i in range(members):
        claim = c.get("resourceclaims", f"default/gpu-{i}") or {}
        (pool, _), node = allocation(c, f"gpu-{i}")[0], bound(c)[f"w{i}"]
        assert pool == node  # the device is on the member's node
        reserved = [r["name"] for r in claim["status"]["reservedFor"]]
        assert reserved == [f"w{i}"]


async def test_gang_with_members_with_and_without_claims_allocates_the_claims() -> None:
    """The group's framework is the full one when only some members name claims (the
    view without DynamicResources would skip their allocation)."""
    c = gpu_cluster(nodes=2, gpus_per_node=1)
    c.create("podgroups", pod_group("mixed", 3))
    async with Running(c, profiles()):
        for i in range(2):
            c.create("resourceclaims", gpu_claim(f"gpu-{i}"))
            c.create("pods", with_claim(member(f"w{i}", "mixed", cpu="100m"), f"gpu-{i}"))
        c.create("pods", member("w2", "mixed", cpu="100m"))  # last in the group's order
        await wait_for(lambda: len(bound(c, "w")) == 3)
        await wait_for(lambda: all(allocation(c, f"gpu-{i}") for i in range(2)))
    assert {allocation(c, f"gpu-{i}")[0][0] for i in range(2)} == {"n0", "n1"}
    assert {bound(c)["w0"], bound(c)["w1"]} == {"n0", "n1"}


async def test_gang_short_of_devices_binds_nothing_until_a_slice_appears() -> None:
    c = gpu_cluster(nodes=2, gpus_per_node=1)
    c.create("podgroups", pod_group("train", 3))
    async with Running(c, profiles()):
        for i in range(3):
            c.create("resourceclaims", gpu_claim(f"gpu-{i}"))
            c.create("pods", with_claim(member(f"w{i}", "train", cpu="100m"), f"gpu-{i}"))
        await wait_for(lambda: all(events_of(c, f"w{i}") for i in range(3)))
        assert bound(c, "w") == {}
        # All or nothing: the members that found a device did not keep it.
        assert all(allocation(c, f"gpu-{i}") == [] for i in range(3))
        # The member that found none has DynamicResources' own diagnosis.
        notes = [n for i in range(3) for n in events_of(c, f"w{i}")]
        assert any("cannot allocate all claims" in n for n in notes), notes
        c.create(
            "resourceslices",
            slice_with_devices(
                "n1-more", "n1", "n1-more", DRIVER, device("gpu-9", {"memory": "40Gi"}, {})
            ),
        )
        await wait_for(lambda: len(bound(c, "w")) == 3)
        await wait_for(lambda: all(allocation(c, f"gpu-{i}") for i in range(3)))
    devices = [d for i in range(3) for d in allocation(c, f"gpu-{i}")]
    assert len(set(devices)) == 3


def local_pv(name: str, node: str) -> Obj:
    """A PV usable on ``node`` only (a local volume's node affinity)."""
    term = {
        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]
    }
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
    }


def bound_pvc(name: str, pv: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": pv,
        },
        "status": {"phase": "Bound"},
    }


def with_pvc(pod: Obj, claim: str) -> Obj:
    pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


async def test_gang_members_with_volumes_land_where_their_volumes_are() -> None:
    c = InMemoryCluster()
    for i in range(4):
        c.create("nodes", make_node(f"n{i}", cpu="8", memory="32Gi"))
    # Member i's volume lives on node n(3 - i): VolumeBinding's Filter decides.
    for i in range(3):
        c.create("persistentvolumes", local_pv(f"pv-{i}", f"n{3 - i}"))
        c.create("persistentvolumeclaims", bound_pvc(f"data-{i}", f"pv-{i}"))
    c.create("podgroups", pod_group("db", 3))
    async with Running(c, profiles()):
        for i in range(3):
            c.create("pods", with_pvc(member(f"db{i}", "db", cpu="100m"), f"data-{i}"))
        await wait_for(lambda: len(bound(c, "db")) == 3)
    assert bound(c, "db") == {"db0": "n3", "db1": "n2", "db2": "n1"}


async def test_gang_member_whose_claim_is_missing_fails_as_a_single_pod_would() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="8", memory="32Gi"))
    c.create("persistentvolumes", local_pv("pv-0", "n0"))
    c.create("persistentvolumeclaims", bound_pvc("data-0", "pv-0"))
    c.create("podgroups", pod_group("db", 2))
    async with Running(c, profiles()):
        c.create("pods", with_pvc(member("db0", "db", cpu="100m"), "data-0"))
        c.create("pods", with_pvc(member("db1", "db", cpu="100m"), "missing"))
        await wait_for(lambda: bool(events_of(c, "db1")))
        assert bound(c, "db") == {}
        # VolumeBinding's PreFilter rejected it before DynamicResources' PreFilter ran.
        assert events_of(c, "db1")[0] == (
            '0/2 nodes are available: persistentvolumeclaim "missing" not found. not found'
        )
