"""``ksched_cluster`` with the volume, DynamicResources and pod group kinds: PVs, PVCs,
StorageClasses, ResourceClaims, slices and PodGroups from code or YAML, a scheduler that
binds pods with unbound claims (the embedded PV controller and provisioner of
:mod:`ksched.sim.volume_controller`), allocates their devices, and places gangs with the
workload gates."""

from __future__ import annotations

from collections.abc import Callable

import pytest

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
)

Scheduler = Callable[..., EmbeddedScheduler]

PROVISIONED = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: ksched.test/provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
"""


def test_a_claim_to_provision_is_provisioned_on_the_chosen_node(
    ksched_cluster: Cluster, ksched_scheduler: Scheduler
) -> None:
    ksched_cluster.add_nodes(3, name="n{i}")
    ksched_cluster.add_yaml(PROVISIONED)
    out = ksched_scheduler().schedule(pod("p", claims=["data"]))
    node = out.placements["default/p"]
    claim = ksched_cluster.get("PersistentVolumeClaim", "default/data")
    assert claim is not None and claim["status"]["phase"] == "Bound"
    pv = ksched_cluster.get("persistentvolumes", claim["spec"]["volumeName"])
    assert pv is not None and pv["spec"]["capacity"] == {"storage": "5Gi"}
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]


@pytest.mark.parametrize(
    ("volumes", "want_nodes"),
    [
        pytest.param({"pv-a": "n1"}, {"n1"}, id="one-local-volume"),
        pytest.param({"pv-a": "n1", "pv-b": "n2"}, {"n1", "n2"}, id="two-local-volumes"),
    ],
)
def test_a_waiting_claim_binds_to_a_local_volume_where_the_pod_goes(
    volumes: dict[str, str],
    want_nodes: set[str],
    ksched_cluster: Cluster,
    ksched_scheduler: Scheduler,
) -> None:
    ksched_cluster.add_nodes(3, name="n{i}")
    for name, where in volumes.items():
        ksched_cluster.add(
            "persistentvolumes", persistent_volume(name, storage_class="local", node=where)
        )
    ksched_cluster.add("StorageClass", {"metadata": {"name": "local"},
                                        "provisioner": "kubernetes.io/no-provisioner",
                                        "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    ksched_cluster.add(
        "persistentvolumeclaims", persistent_volume_claim("data", storage_class="local")
    )
    out = ksched_scheduler().schedule(pod("p", claims=["data"]))
    assert out.placements["default/p"] in want_nodes
    claim = ksched_cluster.get("persistentvolumeclaims", "default/data")
    assert claim is not None
    volume = claim["spec"]["volumeName"]
    assert volumes[volume] == out.placements["default/p"]
    pv = ksched_cluster.get("persistentvolumes", volume)
    assert pv is not None and pv["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]


def test_a_claim_gets_a_device_of_the_node_the_pod_goes_to(
    ksched_cluster: Cluster, ksched_scheduler: Scheduler
) -> None:
    ksched_cluster.add_nodes(3, name="n{i}")
    ksched_cluster.add("deviceclasses", device_class("gpu", driver="gpu.example.com"))
    ksched_cluster.add("resourceslices", resource_slice("n2", driver="gpu.example.com", devices=2))
    ksched_cluster.add("resourceclaims", resource_claim("gpu", device_class="gpu", count=2))
    out = ksched_scheduler().schedule(pod("p", resource_claims=["gpu"]))
    assert out.placements == {"default/p": "n2"}
    claim = ksched_cluster.get("resourceclaims", "default/gpu")
    assert claim is not None
    results = claim["status"]["allocation"]["devices"]["results"]
    assert sorted(r["device"] for r in results) == ["dev-0", "dev-1"]


def test_a_gang_is_placed_whole_or_not_at_all_with_the_workload_gates(
    ksched_cluster: Cluster, ksched_scheduler: Scheduler
) -> None:
    ksched_cluster.add_nodes(2, name="n{i}", cpu="1")
    ksched_cluster.add("PodGroup", pod_group("fits", min_count=2))
    sched = ksched_scheduler(feature_gates={"GenericWorkload": True, "GangScheduling": True})
    out = sched.schedule([pod(f"a{i}", cpu="600m", pod_group="fits") for i in range(2)])
    assert sorted(out.placements.values()) == ["n0", "n1"]


@pytest.mark.parametrize(
    ("api_version", "resource"),
    [
        ("scheduling.k8s.io/v1alpha2", "podgroups"),
        ("scheduling.x-k8s.io/v1alpha1", "podgroups.scheduling.x-k8s.io"),
    ],
)
def test_a_kind_two_groups_share_is_told_apart_by_its_api_version(
    api_version: str, resource: str, ksched_cluster: Cluster
) -> None:
    obj = {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
    }
    ksched_cluster.add("PodGroup", obj)
    assert ksched_cluster.get(resource, "default/g") is not None


def test_a_shared_kind_without_api_version_is_refused_by_name(ksched_cluster: Cluster) -> None:
    with pytest.raises(ValueError, match=r"podgroups and podgroups\.scheduling\.x-k8s\.io"):
        ksched_cluster.add("PodGroup", {"metadata": {"name": "g", "namespace": "default"}})
