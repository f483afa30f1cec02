"""NodeResourcesBalancedAllocation: upstream's Score table.

Ported from pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go
(TestNodeResourcesBalancedAllocation), v1.36.

Since v1.36 (kubernetes/kubernetes#135573) the plugin scores how much placing the pod
*improves* the balance of the node, not the balance after placing it:

* per configured resource the fraction requested/allocatable, capped at 1, using plain
  requests (no 100m / 200Mi defaults); a resource the node has none of is left out, and
  so is a scalar resource the pod does not request;
* balance(fractions) = int64((1 - std) * 100), where std is |f1 - f2| / 2 for two
  fractions, the population standard deviation for more, and 0 for fewer;
* score = 50 + (50 + balance(with the pod) - balance(without it)) / 2, integer
  division, so 75 means "no change", 100 "from worst to perfect", 50 the reverse.

A pod requesting none of the configured resources makes PreScore return Skip: the plugin
scores 0 on every node. There is no NormalizeScore. The DRA-backed extended resource
cases are not ported (the snapshot has no DeviceClasses or ResourceSlices).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.plugins.harness import Obj, cluster, container, explain, node, normalized, pod, raw

PLUGIN = "NodeResourcesBalancedAllocation"
GPU = "nvidia.com/gpu"

DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = [*DEFAULT_RESOURCES, {"name": GPU, "weight": 1}]


def make_node(
    name: str, milli_cpu: int, memory: int, scalars: Mapping[str, int] | None = None
) -> Obj:
    """upstream's makeNode(name, milliCPU, memory, extendedResource): 100 pods."""
    return node(
        name, allocatable={"cpu": milli_cpu, "memory": memory, "pods": 100, **(scalars or {})}
    )


def spec_pod(*requests: Mapping[str, str], node_name: str | None = None, name: str = "p") -> Obj:
    """A pod with one container per request map (upstream's PodSpec literals)."""
    return pod(
        name,
        node=node_name,
        containers=[container(dict(r), name=f"c{i}") for i, r in enumerate(requests)],
    )


def cpu_and_memory(node_name: str | None = None) -> Obj:
    return spec_pod(
        {"cpu": "1000m", "memory": "2000"},
        {"cpu": "2000m", "memory": "3000"},
        node_name=node_name,
        name="cpu-and-memory",
    )


def cpu_only(node_name: str | None = None) -> Obj:
    return spec_pod(
        {"cpu": "1000m", "memory": "0"},
        {"cpu": "2000m", "memory": "0"},
        node_name=node_name,
        name="cpu-only",
    )


def memory_only() -> Obj:
    return spec_pod({"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"})


def cpu_memory_and_gpu(node_name: str) -> Obj:
    return spec_pod(
        {"cpu": "1000m", "memory": "2000"},
        {"cpu": "2000m", "memory": "3000", GPU: "3"},
        node_name=node_name,
        name="cpu-memory-and-gpu",
    )


def balanced_scores(
    nodes: list[Obj], existing: list[Obj], incoming: Obj, resources: list[Obj]
) -> dict[str, int]:
    """The plugin's scores; checks that normalized equals raw (no NormalizeScore)."""
    args = {PLUGIN: {"resources": resources}}
    result = explain(cluster(nodes, existing), incoming, [], [(PLUGIN, 1)], args)
    got = normalized(result, PLUGIN)
    assert raw(result, PLUGIN) == got
    return got


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "resources", "want"),
    [
        pytest.param(
            pod("p"),
            [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)],
            [],
            DEFAULT_RESOURCES,
            (0, 0),
            id="best-effort-pod-skipped-in-prescore",
        ),
        # node1: cpu 0 -> 75%, memory 0 -> 50%: balance 100 -> 87.
        # node2: cpu 0 -> 50%, memory 0 -> 50%: balance 100 -> 100.
        pytest.param(
            cpu_and_memory(),
            [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)],
            [],
            DEFAULT_RESOURCES,
            (68, 75),
            id="nothing-scheduled-resources-requested-differently-sized-nodes",
        ),
        # node1: cpu 30% -> 60%, memory 0 -> 25%: 85 -> 82.
        # node2: cpu 30% -> 60%, memory 25% -> 50%: 97 -> 95.
        pytest.param(
            cpu_and_memory(),
            [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
            [cpu_only("node1"), cpu_and_memory("node2")],
            DEFAULT_RESOURCES,
            (73, 74),
            id="resources-requested-pods-scheduled-with-resources",
        ),
        # node2: cpu 30% -> 60%, memory 10% -> 20%: 90 -> 80.
        pytest.param(
            cpu_and_memory(),
            [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
            [cpu_only("node1"), cpu_and_memory("node2")],
            DEFAULT_RESOURCES,
            (73, 70),
            id="resources-requested-pods-scheduled-with-resources-differently-sized-nodes",
        ),
        # node1: cpu 100% -> 100%, memory 0 -> 100%: 50 -> 100.
        # node2: cpu 0 -> 0, memory 0 -> 100%: 100 -> 50.
        pytest.param(
            memory_only(),
            [make_node("node1", 3000, 5000), make_node("node2", 3000, 5000)],
            [cpu_only("node1")],
            DEFAULT_RESOURCES,
            (100, 50),
            id="nodes-to-reach-min-and-max-score",
        ),
        # node1: cpu 50% -> 100%, memory 0 -> 0: 75 -> 50.
        # node2: cpu 50% -> 100%, memory 50% -> 50%: 100 -> 75.
        pytest.param(
            cpu_only(),
            [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
            [cpu_only("node1"), cpu_and_memory("node2")],
            DEFAULT_RESOURCES,
            (62, 62),
            id="requested-resources-at-node-capacity",
        ),
        # node1: cpu 85.7%, memory 12.5%, gpu 37.5% -> 50%: 69 -> 70.
        # node2: cpu 85.7%, memory 12.5%, gpu 0 -> 12.5%: 62 -> 65.
        pytest.param(
            spec_pod({"memory": "0", GPU: "1"}),
            [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000, {GPU: 8})],
            [cpu_and_memory("node2"), cpu_memory_and_gpu("node1")],
            WITH_GPU,
            (75, 76),
            id="scalar-resource-included",
        ),
        # The pod does not request the gpu: it is left out on both nodes. 100 -> 63.
        pytest.param(
            cpu_and_memory(),
            [make_node("node1", 3500, 40000, {GPU: 8}), make_node("node2", 3500, 40000)],
            [],
            WITH_GPU,
            (56, 56),
            id="scalar-resource-not-requested-skipped",
        ),
        # Derived: PreScore's best-effort check looks at the configured resources only.
        pytest.param(
            spec_pod({"ephemeral-storage": "1Gi"}),
            [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)],
            [cpu_only("node1")],
            DEFAULT_RESOURCES,
            (0, 0),
            id="pod-requesting-no-configured-resource-skipped",
        ),
        # Derived: explicit zero requests are still best effort.
        pytest.param(
            spec_pod({"cpu": "0", "memory": "0"}),
            [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)],
            [cpu_only("node1")],
            DEFAULT_RESOURCES,
            (0, 0),
            id="zero-requests-skipped",
        ),
        # Derived: fractions are capped at 1. node1: cpu 0 -> 100% (capped), memory
        # 0 -> 50%: 100 -> 75, so 50 + (50 - 25) / 2 = 62. node2 has no memory: only cpu
        # counts, one fraction has std 0: 100 -> 100.
        pytest.param(
            spec_pod({"cpu": "2000m", "memory": "500"}),
            [make_node("node1", 1000, 1000), make_node("node2", 1000, 0)],
            [],
            DEFAULT_RESOURCES,
            (62, 75),
            id="fraction-capped-and-resource-without-allocatable-left-out",
        ),
        # Derived: plain requests, not the 100m / 200Mi defaults. The existing pod has a
        # container without requests: it counts 0, so node1 goes 100 -> 75 like node2.
        pytest.param(
            spec_pod({"cpu": "1000m", "memory": "0"}),
            [make_node("node1", 2000, 1000), make_node("node2", 2000, 1000)],
            [pod("no-requests", node="node1", containers=[container()])],
            DEFAULT_RESOURCES,
            (62, 62),
            id="containers-without-requests-count-zero",
        ),
    ],
)
def test_balanced_allocation(
    incoming: Obj,
    nodes: list[Obj],
    existing: list[Obj],
    resources: list[Obj],
    want: tuple[int, int],
) -> None:
    got = balanced_scores(nodes, existing, incoming, resources)
    assert got == dict(zip(("node1", "node2"), want, strict=True))


def test_scores_only_feasible_nodes() -> None:
    """Rejected nodes get no score; the rest are scored as without the filter."""
    nodes = [
        node("node1", allocatable={"cpu": 4000, "memory": 10000, "pods": 100}, unschedulable=True),
        node("node2", allocatable={"cpu": 6000, "memory": 10000, "pods": 100}),
    ]
    args = {PLUGIN: {"resources": DEFAULT_RESOURCES}}
    result = explain(cluster(nodes), cpu_and_memory(), ["NodeUnschedulable"], [(PLUGIN, 2)], args)
    assert result["node1"]["scores"] == {}
    assert result["node1"]["total"] == 0
    assert normalized(result, PLUGIN) == {"node2": 75}
    assert result["node2"]["total"] == 150
