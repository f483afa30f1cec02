"""Helpers for the workload-aware scheduling tests: profiles built from a config with
the workload gates, objects shaped like the API's, a scheduler on the embedded cluster."""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

from ksched.config import DEFAULT_FEATURE_GATES, FeatureGates, load_config_bytes
from ksched.framework.profile import Profile
from ksched.profiles import build_profiles
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_pod

GANG_GATES = DEFAULT_FEATURE_GATES.with_(generic_workload=True, gang_scheduling=True)

Obj = dict[str, Any]


def profiles(config: str = "", gates: FeatureGates = GANG_GATES) -> dict[str, Profile]:
    head = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    cfg = load_config_bytes((head + textwrap.dedent(config)).encode(), gates=gates)
    return build_profiles(cfg, gates=gates)


def pod_group(name: str, min_count: int | None, namespace: str = "default", **spec: Any) -> Obj:
    policy: Obj = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"schedulingPolicy": policy, **spec},
    }


def member(name: str, group: str, **kwargs: Any) -> Obj:
    """A pod of scheduling.k8s.io PodGroup ``group``."""
    obj = make_pod(name, **kwargs)
    obj["spec"]["schedulingGroup"] = {"podGroupName": group}
    return obj


def cosched_member(name: str, group: str, **kwargs: Any) -> Obj:
    """A pod of Coscheduling PodGroup ``group`` (the scheduler-plugins label)."""
    obj = make_pod(name, labels={"scheduling.x-k8s.io/pod-group": group}, **kwargs)
    return obj


def cosched_group(name: str, min_member: int, namespace: str = "default", **spec: Any) -> Obj:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"minMember": min_member, **spec},
    }


def bound(cluster: InMemoryCluster, prefix: str = "") -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in cluster.objects("pods")
        if p["spec"].get("nodeName") and p["metadata"]["name"].startswith(prefix)
    }


def events_of(cluster: InMemoryCluster, pod: str, reason: str = "FailedScheduling") -> list[str]:
    return [
        e["note"] for e in cluster.events if e["reason"] == reason and e["regarding"]["name"] == pod
    ]


class Running:
    """A scheduler with ``profiles`` running on ``cluster`` for a test's duration."""

    def __init__(
        self,
        cluster: InMemoryCluster,
        profile_map: dict[str, Profile],
        gates: FeatureGates = GANG_GATES,
        **kwargs: Any,
    ) -> None:
        self.sched = Scheduler(cluster, profile_map, seed=1, feature_gates=gates, **kwargs)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
