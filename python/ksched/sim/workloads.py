"""Workload generators modelled on kube-scheduler's scheduler_perf suite.

Nodes follow scheduler_perf's default node template (capacity cpu 4, memory 32Gi,
pods 110) and pods its default pod template (one container requesting cpu 100m and
memory 500Mi). A workload names how many nodes, existing (already bound) pods and new
pods to create, and how to shape each.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ksched.cluster import Kind

Obj = dict[str, Any]

ZONES = ("zone-a", "zone-b", "zone-c")


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
    declared_features: Sequence[str] | None = None,
) -> Obj:
    """A Node as the API server would return it; ``declared_features`` becomes its
    ``status.declaredFeatures`` (sorted, as kube-apiserver requires)."""
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
        },
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "conditions": [{"type": "Ready", "status": "True"}],
            **(
                {"declaredFeatures": sorted(declared_features)}
                if declared_features is not None
                else {}
            ),
        },
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "500Mi",
    scheduler_name: str | None = None,
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    extra_spec: Obj | None = None,
) -> Obj:
    """A Pod like scheduler_perf's default pod template."""
    requests: Obj = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container: Obj = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10",
        "ports": [{"containerPort": 80}],
        "resources": {"requests": requests, "limits": dict(requests)},
    }
    spec: Obj = {"containers": [container]}
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    if priority is not None:
        spec["priority"] = priority
    if node_name is not None:
        spec["nodeName"] = node_name
    if extra_spec:
        spec.update(extra_spec)
    status: Obj = {"phase": "Running" if node_name else "Pending"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": spec,
        "status": status,
    }


@dataclass(frozen=True, slots=True)
class Workload:
    """How to build one benchmark scenario."""

    name: str
    description: str
    node: Callable[[int, random.Random], Obj]
    existing_pod: Callable[[int, str, random.Random], Obj]
    new_pod: Callable[[int, random.Random], Obj]
    #: ``(nodes, existing pods, new pods)`` when the command line gives none; every new
    #: pod fits at these sizes (and at any number of nodes, sizes scaled with it).
    sizes: tuple[int, int, int] = (5000, 0, 10000)
    #: Objects created with a node, after it (e.g. its CSINode): ``(kind, object)``.
    node_objects: Callable[[Obj], list[tuple[Kind, Obj]]] | None = None
    #: Objects created with a pod, before it (e.g. its claim and volume).
    pod_objects: Callable[[Obj], list[tuple[Kind, Obj]]] | None = None


def _basic_node(i: int, rng: random.Random) -> Obj:
    return make_node(f"node-{i}")


def _basic_existing(i: int, node: str, rng: random.Random) -> Obj:
    return make_pod(f"existing-{i}", namespace="sched-setup", node_name=node)


def _basic_new(i: int, rng: random.Random) -> Obj:
    return make_pod(f"pod-{i}", namespace="sched-test")


def _zoned_node(i: int, rng: random.Random) -> Obj:
    return make_node(f"node-{i}", labels={"topology.kubernetes.io/zone": f"zone-{i % 10}"})


def _anti_affinity_spec() -> Obj:
    return {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }


def _anti_existing(i: int, node: str, rng: random.Random) -> Obj:
    return make_pod(
        f"existing-{i}",
        namespace="sched-setup",
        node_name=node,
        labels={"color": "green"},
        extra_spec=_anti_affinity_spec(),
    )


def _anti_new(i: int, rng: random.Random) -> Obj:
    return make_pod(
        f"pod-{i}",
        namespace="sched-setup",
        labels={"color": "green"},
        extra_spec=_anti_affinity_spec(),
    )


def _affinity_spec() -> Obj:
    return {
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"foo": "bar"}},
                        "topologyKey": "topology.kubernetes.io/zone",
                        "namespaces": ["sched-setup", "sched-test"],
                    }
                ]
            }
        }
    }


def _affinity_existing(i: int, node: str, rng: random.Random) -> Obj:
    return make_pod(f"existing-{i}", namespace="sched-setup", node_name=node, labels={"foo": "bar"})


def _affinity_new(i: int, rng: random.Random) -> Obj:
    return make_pod(
        f"pod-{i}", namespace="sched-test", labels={"foo": "bar"}, extra_spec=_affinity_spec()
    )


def _spread_spec() -> Obj:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            },
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            },
        ]
    }


def _spread_existing(i: int, node: str, rng: random.Random) -> Obj:
    return make_pod(
        f"existing-{i}", namespace="sched-test", node_name=node, labels={"app": "spread"}
    )


def _spread_new(i: int, rng: random.Random) -> Obj:
    return make_pod(
        f"pod-{i}", namespace="sched-test", labels={"app": "spread"}, extra_spec=_spread_spec()
    )


def _node_affinity_node(i: int, rng: random.Random) -> Obj:
    return make_node(f"node-{i}", labels={"group": "a" if i % 2 else "b"})


def _node_affinity_new(i: int, rng: random.Random) -> Obj:
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "group", "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        }
    }
    return make_pod(f"pod-{i}", namespace="sched-test", extra_spec=spec)


def _low_priority_existing(i: int, node: str, rng: random.Random) -> Obj:
    pod = make_pod(
        f"low-{i}",
        namespace="sched-setup",
        node_name=node,
        cpu="900m",
        extra_spec={"terminationGracePeriodSeconds": 0},
    )
    pod["status"]["startTime"] = "2026-01-01T00:00:00Z"
    return pod


def _high_priority_new(i: int, rng: random.Random) -> Obj:
    return make_pod(f"high-{i}", namespace="sched-test", cpu="3", priority=10)


EBS_CSI = "ebs.csi.aws.com"


def _csi_node(node: Obj) -> list[tuple[Kind, Obj]]:
    """scheduler_perf's ``nodeAllocatableStrategy`` of SchedulingCSIPVs: a CSINode
    allowing 39 ``ebs.csi.aws.com`` attachments."""
    name = node["metadata"]["name"]
    csinode = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {
            "name": name,
            "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": ""},
        },
        "spec": {"drivers": [{"name": EBS_CSI, "nodeID": name, "allocatable": {"count": 39}}]},
    }
    return [("csinodes", csinode)]


def _csi_volume_node(i: int, rng: random.Random) -> Obj:
    node = make_node(f"node-{i}")
    node["status"]["allocatable"][f"attachable-volumes-csi-{EBS_CSI}"] = "39"
    return node


def _claimed_volume(pod: Obj, source: Obj) -> list[tuple[Kind, Obj]]:
    """Upstream ``CreatePodWithPersistentVolume``: claim ``pvc-<pod>`` (ReadOnlyMany,
    1Gi, bind-completed) bound to volume ``<namespace>-vol-<pod>`` with ``source``, and
    the pod mounting the claim."""
    meta = pod["metadata"]
    ns, name = meta["namespace"], meta["name"]
    claim, volume = f"pvc-{name}", f"{ns}-vol-{name}"
    pv_source = {
        key: {**value, "volumeHandle" if key == "csi" else "volumeID": volume}
        for key, value in source.items()
    }
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": volume},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": ns,
                "name": claim,
                "apiVersion": "v1",
            },
            **pv_source,
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim,
            "namespace": ns,
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": volume,
        },
        "status": {"phase": "Bound"},
    }
    pod["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]
    return [("persistentvolumeclaims", pvc), ("persistentvolumes", pv)]


def _csi_volume(pod: Obj) -> list[tuple[Kind, Obj]]:
    return _claimed_volume(pod, {"csi": {"driver": EBS_CSI}})


def _ebs_volume(pod: Obj) -> list[tuple[Kind, Obj]]:
    return _claimed_volume(pod, {"awsElasticBlockStore": {}})


WORKLOADS: dict[str, Workload] = {
    "pod-anti-affinity": Workload(
        name="pod-anti-affinity",
        description="SchedulingPodAntiAffinity: required anti-affinity on hostname "
        "(at most one pod per node, existing ones included)",
        node=_zoned_node,
        existing_pod=_anti_existing,
        new_pod=_anti_new,
        sizes=(5000, 1000, 2000),
    ),
    "pod-affinity": Workload(
        name="pod-affinity",
        description="SchedulingPodAffinity: required affinity to existing pods' zone",
        node=_zoned_node,
        existing_pod=_affinity_existing,
        new_pod=_affinity_new,
        sizes=(5000, 5000, 5000),
    ),
    "topology-spreading": Workload(
        name="topology-spreading",
        description="TopologySpreading: zone (maxSkew 5) and hostname (maxSkew 1) constraints",
        node=_zoned_node,
        existing_pod=_spread_existing,
        new_pod=_spread_new,
        sizes=(5000, 5000, 5000),
    ),
    "node-affinity": Workload(
        name="node-affinity",
        description="SchedulingNodeAffinity: required node affinity to half the nodes",
        node=_node_affinity_node,
        existing_pod=_basic_existing,
        new_pod=_node_affinity_new,
        sizes=(5000, 5000, 10000),
    ),
    "preemption": Workload(
        name="preemption",
        description="PreemptionBasic: high-priority pods (3 cpu, priority 10) preempt "
        "low-priority ones (900m, priority 0) on full nodes (4 low-priority pods and "
        "1 preemptor per node)",
        node=_basic_node,
        existing_pod=_low_priority_existing,
        new_pod=_high_priority_new,
        sizes=(5000, 20000, 5000),
    ),
    "csi-pvs": Workload(
        name="csi-pvs",
        description="SchedulingCSIPVs: every pod mounts its own claim, pre-bound to a CSI "
        "volume (ebs.csi.aws.com); every node's CSINode allows 39 attachments",
        node=_csi_volume_node,
        existing_pod=_basic_existing,
        new_pod=_basic_new,
        sizes=(5000, 5000, 5000),
        node_objects=_csi_node,
        pod_objects=_csi_volume,
    ),
    "in-tree-pvs": Workload(
        name="in-tree-pvs",
        description="SchedulingInTreePVs: every pod mounts its own claim, pre-bound to an "
        "in-tree AWS EBS volume",
        node=_basic_node,
        existing_pod=_basic_existing,
        new_pod=_basic_new,
        sizes=(5000, 1000, 2000),
        pod_objects=_ebs_volume,
    ),
    "basic": Workload(
        name="basic",
        description="SchedulingBasic: default pods (100m cpu, 500Mi) on default nodes",
        node=_basic_node,
        existing_pod=_basic_existing,
        new_pod=_basic_new,
    ),
}
