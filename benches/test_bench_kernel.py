"""The Rust kernel alone: Filter + Score + select for one pod over N nodes.

Target (issue 2): a resource-only pod over 5,000 nodes in ≤ 30 µs median on the 2-core
machine. With the adaptive percentageOfNodesToScore, 5,000 nodes means 500 feasible
nodes are looked for and scored.
"""

from __future__ import annotations

import pytest

from ksched._core import CompiledPod, Snapshot
from ksched.framework.profile import default_profile

GI = 1024**3


def _snapshot(n: int) -> Snapshot:
    snap = Snapshot(1)
    for i in range(n):
        snap.upsert_node(f"node-{i}", {"cpu": 4000, "memory": 32 * GI, "pods": 110})
    # Some load so scores differ.
    for i in range(0, n, 3):
        p = CompiledPod(
            f"e{i}",
            "ns",
            f"e{i}",
            requests={"cpu": 100 * (i % 7), "memory": GI},
            non_zero_cpu=max(100, 100 * (i % 7)),
            non_zero_memory=GI,
        )
        snap.add_pod(p, f"node-{i}")
    return snap


POD = CompiledPod(
    "uid",
    "default",
    "pod",
    requests={"cpu": 100, "memory": 500 * 1024**2},
    non_zero_cpu=100,
    non_zero_memory=500 * 1024**2,
)


@pytest.mark.parametrize("nodes", [500, 5000, 15000])
def test_kernel_one_pod(benchmark, nodes: int) -> None:  # type: ignore[no-untyped-def]
    snap = _snapshot(nodes)
    profile = default_profile().kernels
    result = benchmark(snap.schedule, POD, profile)
    assert result.node is not None


def test_kernel_resource_profile_5000(benchmark) -> None:  # type: ignore[no-untyped-def]
    """Issue 2's kernel target: NodeUnschedulable, NodeName and NodeResourcesFit with
    LeastAllocated, one resource-only pod, 5,000 nodes."""
    snap = _snapshot(5000)
    profile = default_profile(
        filters=("NodeUnschedulable", "NodeName", "NodeResourcesFit"),
        scores=(("NodeResourcesFit", 1),),
    ).kernels
    result = benchmark(snap.schedule, POD, profile)
    assert result.node is not None


def test_kernel_all_nodes_scored_5000(benchmark) -> None:  # type: ignore[no-untyped-def]
    snap = _snapshot(5000)
    profile = default_profile(percentage_of_nodes_to_score=100).kernels
    result = benchmark(snap.schedule, POD, profile)
    assert result.evaluated_nodes == 5000
