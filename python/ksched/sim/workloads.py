"""Workload generators modelled on kube-scheduler's scheduler_perf suite.

Nodes follow scheduler_perf's default node template (capacity cpu 4, memory 32Gi,
pods 110) and pods its default pod template (one container requesting cpu 100m and
memory 500Mi). A workload names how many nodes, existing (already bound) pods and new
pods to create, and how to shape each.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
) -> Obj:
    """A Node as the API server would return it."""
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
    #: New pods that cannot be scheduled by design (excluded from the completion count).
    unschedulable_fraction: float = 0.0


def _basic_node(i: int, rng: random.Random) -> Obj:
    return make_node(f"node-{i}")


def _basic_existing(i: int, node: str, rng: random.Random) -> Obj:
    return make_pod(f"existing-{i}", namespace="sched-setup", node_name=node)


def _basic_new(i: int, rng: random.Random) -> Obj:
    return make_pod(f"pod-{i}", namespace="sched-test")


WORKLOADS: dict[str, Workload] = {
    "basic": Workload(
        name="basic",
        description="SchedulingBasic: default pods (100m cpu, 500Mi) on default nodes",
        node=_basic_node,
        existing_pod=_basic_existing,
        new_pod=_basic_new,
    ),
}
