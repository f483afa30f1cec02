"""``ksched explain`` (and ``ksched.testing``'s ``explain``) on the volume,
DynamicResources and pod group plugins: the per-node table names the plugin that
rejected each node with its upstream reason, the chosen node is the one the scheduler
then binds, the FailedScheduling message is the event's, and a pod group member is
said to be one. Built with the public fixtures (``ksched_cluster``,
``ksched_scheduler``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ksched.plugins import volume_binding, volume_restrictions, volume_zone
from ksched.testing import (
    Cluster,
    EmbeddedScheduler,
    device_class,
    persistent_volume,
    persistent_volume_claim,
    pod,
    pod_group,
    resource_claim,
    resource_slice,
    storage_class,
)

Obj = dict[str, Any]
GPU = "gpu.example.com"
ZONE = "topology.kubernetes.io/zone"


def _local_pv_on_n2(c: Cluster) -> Obj:
    c.add("storageclasses", storage_class("local"))
    c.add("persistentvolumes", persistent_volume("pv-n2", storage_class="local", node="n2"))
    c.add("persistentvolumeclaims", persistent_volume_claim("data", storage_class="local"))
    return pod("p", claims=["data"])


def _bound_pv_on_n2(c: Cluster) -> Obj:
    c.add("storageclasses", storage_class("local"))
    c.add(
        "persistentvolumes",
        persistent_volume("pv-n2", storage_class="local", node="n2", claim="default/data"),
    )
    c.add(
        "persistentvolumeclaims",
        persistent_volume_claim("data", storage_class="local", volume_name="pv-n2"),
    )
    return pod("p", claims=["data"])


def _zonal_pv_in_z2(c: Cluster) -> Obj:
    pv = persistent_volume("pv-z2", storage_class="", claim="default/data")
    pv["metadata"]["labels"] = {ZONE: "z2"}
    c.add("persistentvolumes", pv)
    c.add(
        "persistentvolumeclaims",
        persistent_volume_claim("data", storage_class="", volume_name="pv-z2"),
    )
    return pod("p", claims=["data"])


def _read_write_once_pod_claim_in_use(c: Cluster) -> Obj:
    c.add(
        "persistentvolumes",
        persistent_volume(
            "pv", storage_class="", claim="default/data", access_modes=["ReadWriteOncePod"]
        ),
    )
    c.add(
        "persistentvolumeclaims",
        persistent_volume_claim(
            "data", storage_class="", volume_name="pv", access_modes=["ReadWriteOncePod"]
        ),
    )
    c.add("pods", pod("user", claims=["data"], node_name="n1"))
    return pod("p", claims=["data"])


def _gpu_on_n3(c: Cluster) -> Obj:
    c.add("deviceclasses", device_class("gpu", driver=GPU))
    c.add("resourceslices", resource_slice("n3", driver=GPU, devices=1))
    c.add("resourceclaims", resource_claim("gpu", device_class="gpu"))
    return pod("p", resource_claims=["gpu"])


#: case → (setup returning the pod, chosen node, {node: (plugin, reasons)}).
CASES: dict[str, tuple[Callable[[Cluster], Obj], str | None, dict[str, tuple[str, list[str]]]]] = {
    "VolumeBinding-no-volume-on-the-node": (
        _local_pv_on_n2,
        "n2",
        {n: ("VolumeBinding", [volume_binding.ERR_REASON_BIND_CONFLICT]) for n in ("n1", "n3")},
    ),
    "VolumeBinding-bound-volume-elsewhere": (
        _bound_pv_on_n2,
        "n2",
        {n: ("VolumeBinding", [volume_binding.ERR_REASON_NODE_CONFLICT]) for n in ("n1", "n3")},
    ),
    "VolumeZone-volume-in-another-zone": (
        _zonal_pv_in_z2,
        "n2",
        {n: ("VolumeZone", [volume_zone.ERR_REASON_CONFLICT]) for n in ("n1", "n3")},
    ),
    "VolumeRestrictions-read-write-once-pod-in-use": (
        _read_write_once_pod_claim_in_use,
        None,
        {
            n: ("VolumeRestrictions", [volume_restrictions.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT])
            for n in ("n1", "n2", "n3")
        },
    ),
    "DynamicResources-device-on-one-node": (
        _gpu_on_n3,
        "n3",
        {n: ("DynamicResources", ["cannot allocate all claims"]) for n in ("n1", "n2")},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_table_names_the_volume_and_dra_rejections(
    case: str, ksched_cluster: Cluster, ksched_scheduler: Callable[..., EmbeddedScheduler]
) -> None:
    setup, chosen, rejected = CASES[case]
    for i, zone in ((1, "z1"), (2, "z2"), (3, "z1")):
        ksched_cluster.add_node(f"n{i}", labels={ZONE: zone})
    target = setup(ksched_cluster)
    sched = ksched_scheduler()
    expl = sched.explain(target, all_nodes=True)
    got = {n: (v.plugin, list(v.reasons)) for n, v in expl.rejected.items()}
    assert got == rejected
    assert expl.chosen == chosen
    out = sched.schedule(target)
    if chosen is not None:
        assert out.placements == {"default/p": chosen}
    else:
        # explain's FailedScheduling text is the event the scheduler writes.
        assert out.unschedulable["default/p"] == expl.failed_scheduling


def test_a_pod_group_member_is_explained_as_one(
    ksched_cluster: Cluster, ksched_scheduler: Callable[..., EmbeddedScheduler]
) -> None:
    ksched_cluster.add_nodes(2, name="n{i}", cpu="1")
    ksched_cluster.add("PodGroup", pod_group("gang", min_count=3))
    sched = ksched_scheduler(feature_gates="GenericWorkload=true,GangScheduling=true")
    out = sched.schedule([pod(f"m{i}", cpu="300m", pod_group="gang") for i in range(3)])
    assert sorted(out.placements) == ["default/m0", "default/m1", "default/m2"]
    # A late member: the gang has its three, so one more member fits on its own.
    expl = sched.explain(pod("m3", cpu="300m", pod_group="gang"))
    assert any(
        "pod group default/gang" in n and "at least 1 of them must fit" in n for n in expl.notes
    ), expl.notes
    assert expl.chosen in ("n0", "n1")
    # Without the workload gates the same pod is a plain pod: no pod group note.
    plain = ksched_scheduler(cluster=Cluster()).explain(pod("m3", cpu="300m", pod_group="gang"))
    assert not any("pod group" in n for n in plain.notes)
