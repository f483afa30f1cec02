"""The failure reasons the Python plugin modules name are exactly what the Rust kernels
report (one plugin, one name and one text everywhere)."""

from __future__ import annotations

from typing import Any

from ksched._core import CompiledPod, Profile, Snapshot
from ksched.plugins import (
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    taint_toleration,
)

GI = 1024**3


def _pod(**kwargs: Any) -> CompiledPod:
    base: dict[str, Any] = {"requests": {"cpu": 100}, "non_zero_cpu": 100, "non_zero_memory": 0}
    base.update(kwargs)
    return CompiledPod("uid", "default", "p", **base)


def _reasons(snap: Snapshot, pod: CompiledPod, plugin: str) -> list[str]:
    result = snap.schedule(pod, Profile([plugin], []))
    assert result.node is None
    return [r for _, _, _, reasons in result.statuses for r in reasons]


def test_reason_texts_match_the_kernels() -> None:
    snap = Snapshot(1)
    snap.upsert_node(
        "n1",
        {"cpu": 1000, "memory": GI, "pods": 0},
        {"kubernetes.io/hostname": "n1"},
        [("dedicated", "gpu", "NoSchedule")],
        True,
    )
    snap.add_pod(_pod(host_ports=[("TCP", "", 8080)]), "n1")
    assert _reasons(snap, _pod(), "NodeUnschedulable") == [
        node_unschedulable.ERR_REASON_UNSCHEDULABLE
    ]
    assert _reasons(snap, _pod(node_name="other"), "NodeName") == [node_name.ERR_REASON]
    assert _reasons(snap, _pod(), "TaintToleration") == [taint_toleration.ERR_REASON_UNTOLERATED]
    assert _reasons(snap, _pod(node_selector={"zone": "a"}), "NodeAffinity") == [
        node_affinity.ERR_REASON_POD
    ]
    other = CompiledPod(
        "uid2",
        "default",
        "q",
        requests={},
        non_zero_cpu=0,
        non_zero_memory=0,
        host_ports=[("TCP", "", 8080)],
    )
    assert _reasons(snap, other, "NodePorts") == [node_ports.ERR_REASON]
    assert _reasons(snap, _pod(requests={"cpu": 5000}), "NodeResourcesFit") == [
        node_resources_fit.REASON_TOO_MANY_PODS,
        node_resources_fit.insufficient("cpu"),
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
    assert _reasons(snap, _pod(topology_spread_constraints=spread), "PodTopologySpread") == [
        pod_topology_spread.ERR_REASON_NODE_LABEL_NOT_MATCH
    ]
