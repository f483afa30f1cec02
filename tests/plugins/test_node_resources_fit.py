"""NodeResourcesFit: upstream's Filter and Score tables.

Ported from pkg/scheduler/framework/plugins/noderesources:

* fit_test.go: TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests,
  TestRestartableInitContainers (Filter) and TestFitScore (Score);
* least_allocated_test.go: TestLeastAllocatedScoringStrategy;
* most_allocated_test.go: TestMostAllocatedScoringStrategy;
* requested_to_capacity_ratio_test.go: TestRequestedToCapacityRatioScoringStrategy,
  TestResourceBinPackingSingleExtended, TestResourceBinPackingMultipleExtended.

Filter semantics (v1.36): "Too many pods" first, then, unless the pod requests nothing,
cpu, memory, ephemeral-storage and each scalar resource in turn, every failing one adding
"Insufficient <name>". The code is UnschedulableAndUnresolvable as soon as one request
exceeds the node's whole allocatable (preemption cannot help), else Unschedulable.
Ignored resources (exact names, or the group before "/") apply to extended resources only.

Score semantics: cpu and memory use the non-zero requests (100m / 200Mi for a container
that names none), the pod included; a scalar resource the pod does not request, or one
the node does not have, is left out of the weighted average. LeastAllocated and
MostAllocated divide with integers; RequestedToCapacityRatio scales the shape's scores
by 10, interpolates with Go's truncating integer division, leaves resources that score 0
out of the average altogether and rounds the average half away from zero.
NodeResourcesFit has no NormalizeScore, so the normalized score is the raw one.
Pod-level requests (``spec.resources``) count in Filter but not in Score: v1.36.5's
NewFit builds its scorer without pod-level resources (BalancedAllocation's has them).

Upstream's DRA-backed extended resource cases and its config validation cases (weights
out of range) are not ported: the snapshot has no DeviceClasses and validation belongs to
the configuration layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from tests.plugins.harness import (
    MI,
    Obj,
    cluster,
    container,
    explain,
    node,
    normalized,
    pod,
    raw,
    statuses,
)

PLUGIN = "NodeResourcesFit"

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGEPAGES = "hugepages-2Mi"
INTEL_FOO = "intel.com/foo"
INTEL_BAR = "intel.com/bar"

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"


def insufficient(name: str) -> str:
    return f"Insufficient {name}"


# --- Filter ---------------------------------------------------------------------------

#: upstream's makeAllocatableResources(10, 20, 32, 5, 20, 5)
FILTER_NODE: dict[str, int] = {
    "cpu": 10,
    "memory": 20,
    "pods": 32,
    EXT_A: 5,
    "ephemeral-storage": 20,
    HUGEPAGES: 5,
}


def usage(
    cpu_m: int = 0, memory: int = 0, *, storage: int = 0, scalars: Mapping[str, int] | None = None
) -> dict[str, str]:
    """Container requests as upstream's newResourcePod writes them: cpu, memory and
    ephemeral-storage always present (possibly "0"), plus scalar resources."""
    requests = {"cpu": f"{cpu_m}m", "memory": str(memory), "ephemeral-storage": str(storage)}
    for name, amount in (scalars or {}).items():
        requests[name] = str(amount)
    return requests


def resource_pod(
    *app: Mapping[str, str],
    init: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
    pod_requests: Mapping[str, str] | None = None,
    name: str = "p",
    node_name: str | None = None,
) -> Obj:
    """A pod with one app container per ``app`` entry and one init container per ``init``."""
    return pod(
        name,
        node=node_name,
        containers=[container(r, name=f"c{i}") for i, r in enumerate(app)],
        init_containers=[container(r, name=f"i{i}") for i, r in enumerate(init)],
        overhead=overhead,
        pod_requests=pod_requests,
    )


def fit_status(
    incoming: Obj,
    existing: Sequence[Obj],
    allocatable: Mapping[str, int],
    args: Obj | None = None,
) -> tuple[str, ...] | None:
    """The Filter status of ``incoming`` on node "n" holding ``existing`` pods."""
    c = cluster([node("n", allocatable=allocatable)], existing)
    result = explain(c, incoming, [PLUGIN], [], {PLUGIN: args} if args is not None else None)
    return statuses(result)["n"]


def on_node(*app: Mapping[str, str]) -> list[Obj]:
    """upstream's framework.NewNodeInfo(newResourcePod(...)): one pod on the node."""
    return [resource_pod(*app, name="existing", node_name="n")]


ENOUGH_REQUESTS = [
    pytest.param(pod("p"), on_node(usage(10, 20)), None, None, id="no-resources-requested"),
    pytest.param(
        resource_pod(usage(1, 1)),
        on_node(usage(10, 20)),
        None,
        (UNSCHEDULABLE, insufficient("cpu"), insufficient("memory")),
        id="too-many-resources-fails",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(3, 1)]),
        on_node(usage(8, 19)),
        None,
        (UNSCHEDULABLE, insufficient("cpu")),
        id="init-container-cpu",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(3, 1), usage(2, 1)]),
        on_node(usage(8, 19)),
        None,
        (UNSCHEDULABLE, insufficient("cpu")),
        id="highest-init-container-cpu",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(1, 3)]),
        on_node(usage(9, 19)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="init-container-memory",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(1, 3), usage(1, 2)]),
        on_node(usage(9, 19)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="highest-init-container-memory",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(1, 1)]),
        on_node(usage(9, 19)),
        None,
        None,
        id="init-container-max-not-sum",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(1, 1), usage(1, 1)]),
        on_node(usage(9, 19)),
        None,
        None,
        id="multiple-init-containers-max-not-sum",
    ),
    pytest.param(resource_pod(usage(1, 1)), on_node(usage(5, 5)), None, None, id="both-fit"),
    pytest.param(
        resource_pod(usage(2, 1)),
        on_node(usage(9, 5)),
        None,
        (UNSCHEDULABLE, insufficient("cpu")),
        id="only-memory-fits",
    ),
    pytest.param(
        resource_pod(usage(1, 2)),
        on_node(usage(5, 19)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="only-cpu-fits",
    ),
    pytest.param(
        resource_pod(usage(5, 1)), on_node(usage(5, 19)), None, None, id="equal-edge-case"
    ),
    pytest.param(
        resource_pod(usage(4, 1), init=[usage(5, 1)]),
        on_node(usage(5, 19)),
        None,
        None,
        id="equal-edge-case-init-container",
    ),
    pytest.param(
        resource_pod(usage(scalars={EXT_A: 1})),
        on_node(usage()),
        None,
        None,
        id="extended-resource-fits",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(scalars={EXT_A: 1})]),
        on_node(usage()),
        None,
        None,
        id="extended-resource-fits-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_A: 10})),
        on_node(usage(scalars={EXT_A: 0})),
        None,
        (UNRESOLVABLE, insufficient(EXT_A)),
        id="extended-resource-capacity-enforced",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(1, 1, scalars={EXT_A: 10})]),
        on_node(usage(scalars={EXT_A: 0})),
        None,
        (UNRESOLVABLE, insufficient(EXT_A)),
        id="extended-resource-capacity-enforced-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_A: 1})),
        on_node(usage(scalars={EXT_A: 5})),
        None,
        (UNSCHEDULABLE, insufficient(EXT_A)),
        id="extended-resource-allocatable-enforced",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(1, 1, scalars={EXT_A: 1})]),
        on_node(usage(scalars={EXT_A: 5})),
        None,
        (UNSCHEDULABLE, insufficient(EXT_A)),
        id="extended-resource-allocatable-enforced-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_A: 3}), usage(1, 1, scalars={EXT_A: 3})),
        on_node(usage(scalars={EXT_A: 2})),
        None,
        (UNRESOLVABLE, insufficient(EXT_A)),
        id="extended-resource-allocatable-enforced-multiple-containers",
    ),
    pytest.param(
        resource_pod(
            usage(), init=[usage(1, 1, scalars={EXT_A: 3}), usage(1, 1, scalars={EXT_A: 3})]
        ),
        on_node(usage(scalars={EXT_A: 2})),
        None,
        None,
        id="extended-resource-admits-multiple-init-containers",
    ),
    pytest.param(
        resource_pod(
            usage(), init=[usage(1, 1, scalars={EXT_A: 6}), usage(1, 1, scalars={EXT_A: 3})]
        ),
        on_node(usage(scalars={EXT_A: 2})),
        None,
        (UNRESOLVABLE, insufficient(EXT_A)),
        id="extended-resource-enforced-multiple-init-containers",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_B: 1})),
        on_node(usage()),
        None,
        (UNRESOLVABLE, insufficient(EXT_B)),
        id="unknown-extended-resource",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(1, 1, scalars={EXT_B: 1})]),
        on_node(usage()),
        None,
        (UNRESOLVABLE, insufficient(EXT_B)),
        id="unknown-extended-resource-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={K8S_IO_A: 10})),
        on_node(usage()),
        None,
        (UNRESOLVABLE, insufficient(K8S_IO_A)),
        id="kubernetes.io-resource-capacity-enforced",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(1, 1, scalars={K8S_IO_B: 10})]),
        on_node(usage()),
        None,
        (UNRESOLVABLE, insufficient(K8S_IO_B)),
        id="subdomain.kubernetes.io-resource-capacity-enforced-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={HUGEPAGES: 10})),
        on_node(usage(scalars={HUGEPAGES: 0})),
        None,
        (UNRESOLVABLE, insufficient(HUGEPAGES)),
        id="hugepages-capacity-enforced",
    ),
    pytest.param(
        resource_pod(usage(), init=[usage(1, 1, scalars={HUGEPAGES: 10})]),
        on_node(usage(scalars={HUGEPAGES: 0})),
        None,
        (UNRESOLVABLE, insufficient(HUGEPAGES)),
        id="hugepages-capacity-enforced-init-container",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={HUGEPAGES: 3}), usage(1, 1, scalars={HUGEPAGES: 3})),
        on_node(usage(scalars={HUGEPAGES: 2})),
        None,
        (UNRESOLVABLE, insufficient(HUGEPAGES)),
        id="hugepages-allocatable-enforced-multiple-containers",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_B: 1})),
        on_node(usage()),
        {"ignoredResources": [EXT_B]},
        None,
        id="ignored-extended-resource",
    ),
    pytest.param(
        resource_pod(usage(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        on_node(usage(5, 5)),
        None,
        None,
        id="requests-plus-overhead-fit",
    ),
    pytest.param(
        resource_pod(usage(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        on_node(usage(5, 5)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="requests-plus-overhead-memory-does-not-fit",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_B: 1, K8S_IO_A: 1})),
        on_node(usage()),
        {"ignoredResourceGroups": ["example.com"]},
        (UNRESOLVABLE, insufficient(K8S_IO_A)),
        id="ignored-resource-group-does-not-cover-kubernetes.io",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_A: 0})),
        on_node(usage(scalars={EXT_A: 6})),
        None,
        None,
        id="zero-extended-request-not-checked",
    ),
    pytest.param(
        resource_pod(usage(scalars={EXT_A: 1})),
        on_node(usage(20, 30, scalars={EXT_A: 1})),
        None,
        None,
        id="zero-cpu-and-memory-requests-not-checked",
    ),
    pytest.param(
        resource_pod(usage(1, 1), pod_requests={"cpu": "1m", "memory": "2"}),
        on_node(usage(5, 5)),
        None,
        None,
        id="pod-level-and-container-level-fit",
    ),
    pytest.param(
        resource_pod(usage(1, 1), pod_requests={"cpu": "7m", "memory": "2"}),
        on_node(usage(5, 5)),
        None,
        (UNSCHEDULABLE, insufficient("cpu")),
        id="pod-level-cpu-does-not-fit",
    ),
    pytest.param(
        resource_pod(usage(1, 1), pod_requests={"cpu": "3m", "memory": "2"}),
        on_node(usage(5, 19)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="pod-level-memory-does-not-fit",
    ),
    pytest.param(
        resource_pod(pod_requests={"cpu": "3m", "memory": "2", HUGEPAGES: "5"}),
        [],
        None,
        None,
        id="pod-level-hugepages-fit",
    ),
    pytest.param(
        resource_pod(
            usage(1, 1, scalars={HUGEPAGES: 3}),
            pod_requests={"cpu": "3m", "memory": "2", HUGEPAGES: "5"},
        ),
        [],
        None,
        None,
        id="pod-level-and-container-level-hugepages-fit",
    ),
    pytest.param(
        resource_pod(pod_requests={"cpu": "3m", "memory": "2", HUGEPAGES: "10"}),
        [],
        None,
        (UNRESOLVABLE, insufficient(HUGEPAGES)),
        id="pod-level-hugepages-do-not-fit",
    ),
    pytest.param(
        resource_pod(usage(1, 1), init=[usage(1, 1)], pod_requests={"cpu": "3m", "memory": "2"}),
        on_node(usage(5, 19)),
        None,
        (UNSCHEDULABLE, insufficient("memory")),
        id="pod-level-cpu-fits-memory-does-not",
    ),
    # Derived from fitsRequest: every failing resource adds its reason, in the order
    # cpu, memory, ephemeral-storage, scalars; one over the whole node is enough to make
    # the status unresolvable.
    pytest.param(
        resource_pod(usage(11, 1, storage=1)),
        on_node(usage(0, 20, storage=20)),
        None,
        (
            UNRESOLVABLE,
            insufficient("cpu"),
            insufficient("memory"),
            insufficient("ephemeral-storage"),
        ),
        id="cpu-over-allocatable-makes-all-reasons-unresolvable",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={EXT_A: 1})),
        on_node(usage(10, 20, scalars={EXT_A: 5})),
        None,
        (UNSCHEDULABLE, insufficient("cpu"), insufficient("memory"), insufficient(EXT_A)),
        id="scalar-reason-after-cpu-and-memory",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={HUGEPAGES: 10})),
        on_node(usage()),
        {"ignoredResources": [HUGEPAGES], "ignoredResourceGroups": ["hugepages-2Mi"]},
        (UNRESOLVABLE, insufficient(HUGEPAGES)),
        id="hugepages-cannot-be-ignored",
    ),
    pytest.param(
        resource_pod(usage(1, 1, scalars={K8S_IO_A: 1})),
        on_node(usage()),
        {"ignoredResources": [K8S_IO_A], "ignoredResourceGroups": ["kubernetes.io"]},
        (UNRESOLVABLE, insufficient(K8S_IO_A)),
        id="kubernetes.io-resources-cannot-be-ignored",
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "args", "want"), ENOUGH_REQUESTS)
def test_enough_requests(
    incoming: Obj, existing: list[Obj], args: Obj | None, want: tuple[str, ...] | None
) -> None:
    assert fit_status(incoming, existing, FILTER_NODE, args) == want


#: upstream's makeAllocatableResources(10, 20, 1, 0, 0, 0): room for one pod only.
ONE_POD_NODE: dict[str, int] = {
    "cpu": 10,
    "memory": 20,
    "pods": 1,
    EXT_A: 0,
    "ephemeral-storage": 0,
    HUGEPAGES: 0,
}


@pytest.mark.parametrize(
    ("incoming", "existing"),
    [
        pytest.param(pod("p"), on_node(usage(10, 20)), id="no-requests"),
        pytest.param(resource_pod(usage(1, 1)), on_node(usage(5, 5)), id="resources-fit"),
        pytest.param(resource_pod(usage(5, 1)), on_node(usage(5, 19)), id="equal-edge-case"),
        pytest.param(
            resource_pod(usage(5, 1), init=[usage(5, 1)]),
            on_node(usage(5, 19)),
            id="equal-edge-case-init-container",
        ),
    ],
)
def test_not_enough_pods(incoming: Obj, existing: list[Obj]) -> None:
    assert fit_status(incoming, existing, ONE_POD_NODE) == (UNSCHEDULABLE, "Too many pods")


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [
        pytest.param(
            resource_pod(usage(1, 1)), on_node(usage(2, 10)), None, id="no-storage-requested"
        ),
        pytest.param(
            resource_pod(usage(storage=25)),
            on_node(usage(2, 2)),
            (UNRESOLVABLE, insufficient("ephemeral-storage")),
            id="storage-request-exceeds-allocatable",
        ),
        pytest.param(
            resource_pod(usage(storage=5)),
            on_node(usage(2, 2, storage=10)),
            None,
            id="storage-sufficient",
        ),
        pytest.param(resource_pod(usage(storage=10)), on_node(usage(2, 2)), None, id="pod-fits"),
        # Derived: storage left on the node is short but the node is big enough.
        pytest.param(
            resource_pod(usage(storage=11)),
            on_node(usage(2, 2, storage=10)),
            (UNSCHEDULABLE, insufficient("ephemeral-storage")),
            id="storage-request-exceeds-what-is-left",
        ),
    ],
)
def test_storage_requests(incoming: Obj, existing: list[Obj], want: tuple[str, ...] | None) -> None:
    assert fit_status(incoming, existing, FILTER_NODE) == want


def sidecar_pod(request: Mapping[str, str] | None, sidecar: Mapping[str, str] | None) -> Obj:
    return pod(
        "p",
        containers=[container(request, name="regular")],
        init_containers=[container(sidecar, name="restartable-init", restart_policy="Always")],
    )


@pytest.mark.parametrize(
    ("incoming", "want"),
    [
        pytest.param(
            pod("p", containers=[container(name="regular")]), None, id="no-restartable-init"
        ),
        pytest.param(sidecar_pod(None, None), None, id="restartable-init-without-requests"),
        pytest.param(
            sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), None, id="total-requests-fit-allocatable"
        ),
        pytest.param(
            sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
            (UNRESOLVABLE, insufficient("cpu")),
            id="total-requests-exceed-allocatable",
        ),
    ],
)
def test_restartable_init_containers(incoming: Obj, want: tuple[str, ...] | None) -> None:
    # makeAllocatableResources(2, 0, 1, 0, 0, 0): the sidecar runs alongside the app.
    allocatable = {"cpu": 2, "memory": 0, "pods": 1, EXT_A: 0, "ephemeral-storage": 0}
    allocatable[HUGEPAGES] = 0
    assert fit_status(incoming, [], allocatable) == want


# --- Score ----------------------------------------------------------------------------


def cores(n: int | float) -> int:
    """Millicores in ``n`` cpus (upstream's score tables write "cpu": "4000", i.e. cores)."""
    return int(n * 1000)


def st_pod(
    *requests: Mapping[str, str],
    sidecar: Mapping[str, str] | None = None,
    node_name: str | None = None,
) -> Obj:
    """upstream's st.MakePod().Req(r1).Req(r2)...: one container per request map; an
    empty mapping is a container without requests (st's .Container(name))."""
    return pod(
        "p",
        node=node_name,
        containers=[container(dict(r) or None, name=f"c{i}") for i, r in enumerate(requests)],
        init_containers=(
            [container(sidecar, name="sidecar", restart_policy="Always")] if sidecar else []
        ),
    )


def scores(
    nodes: Sequence[tuple[str, Mapping[str, int]]],
    existing: Sequence[Obj],
    incoming: Obj,
    strategy: Obj,
    *,
    filters: Sequence[str] = (),
) -> dict[str, int]:
    """NodeResourcesFit's normalized scores with scoring strategy ``strategy``; checks
    that they equal the raw ones (the plugin has no NormalizeScore)."""
    c = cluster([node(name, allocatable=alloc) for name, alloc in nodes], existing)
    args = {PLUGIN: {"scoringStrategy": strategy}}
    result = explain(c, incoming, list(filters), [(PLUGIN, 1)], args)
    got = normalized(result, PLUGIN)
    assert raw(result, PLUGIN) == got
    return got


def resources(*spec: tuple[str, int]) -> list[Obj]:
    return [{"name": name, "weight": weight} for name, weight in spec]


DEFAULT_RESOURCES = resources(("cpu", 1), ("memory", 1))
EXTENDED_RESOURCE_SET = resources(("cpu", 1), ("memory", 1), (INTEL_FOO, 1))


def least(res: list[Obj] = DEFAULT_RESOURCES) -> Obj:
    return {"type": "LeastAllocated", "resources": res}


def most(res: list[Obj] = DEFAULT_RESOURCES) -> Obj:
    return {"type": "MostAllocated", "resources": res}


def ratio(shape: Sequence[tuple[int, int]], res: list[Obj] = DEFAULT_RESOURCES) -> Obj:
    return {
        "type": "RequestedToCapacityRatio",
        "resources": res,
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }


def capacity(cpu_cores: float, memory: int, **scalars: int) -> dict[str, int]:
    """st.MakeNode().Capacity(...): only the named resources (no pods)."""
    alloc = {"cpu": cores(cpu_cores), "memory": memory}
    alloc.update(scalars)
    return alloc


def intel(alloc: dict[str, int], foo: int | None = None, bar: int | None = None) -> dict[str, int]:
    out = dict(alloc)
    if foo is not None:
        out[INTEL_FOO] = foo
    if bar is not None:
        out[INTEL_BAR] = bar
    return out


C1000_M2000 = {"cpu": "1000", "memory": "2000"}
C2000_M3000 = {"cpu": "2000", "memory": "3000"}
C3000_M0 = {"cpu": "3000", "memory": "0"}
C3000_M5000 = {"cpu": "3000", "memory": "5000"}

SMALL_NODES = [("node1", capacity(4000, 10000)), ("node2", capacity(6000, 10000))]
EQUAL_NODES = [("node1", capacity(4000, 10000)), ("node2", capacity(4000, 10000))]
BIG_NODES = [("node1", capacity(10000, 20000)), ("node2", capacity(10000, 20000))]
FIT_SCORE_PODS = [
    st_pod({"cpu": "2000", "memory": "4000"}, node_name="node1"),
    st_pod({"cpu": "1000", "memory": "2000"}, node_name="node2"),
]


@pytest.mark.parametrize(
    ("incoming", "strategy", "want"),
    [
        pytest.param(
            st_pod({"cpu": "3000", "memory": "5000"}),
            ratio([(0, 10), (100, 0)]),
            {"node1": 10, "node2": 32},
            id="requested-to-capacity-ratio-case1",
        ),
        pytest.param(
            st_pod({"cpu": "3000", "memory": "5000"}),
            ratio([(0, 0), (100, 10)]),
            {"node1": 95, "node2": 68},
            id="requested-to-capacity-ratio-case2",
        ),
        pytest.param(st_pod(C1000_M2000), most(), {"node1": 67, "node2": 36}, id="most-allocated"),
        pytest.param(
            st_pod(C1000_M2000), least(), {"node1": 32, "node2": 63}, id="least-allocated"
        ),
    ],
)
def test_fit_score(incoming: Obj, strategy: Obj, want: dict[str, int]) -> None:
    assert scores(SMALL_NODES, FIT_SCORE_PODS, incoming, strategy) == want


@pytest.mark.parametrize(
    ("strategy", "want"),
    [
        pytest.param(most(), {"node1": 67, "node2": 45}, id="most-allocated"),
        pytest.param(least(), {"node1": 32, "node2": 55}, id="least-allocated"),
    ],
)
def test_fit_score_with_sidecar(strategy: Obj, want: dict[str, int]) -> None:
    existing = [
        st_pod(C1000_M2000, sidecar=C1000_M2000, node_name="node1"),
        st_pod(C1000_M2000, node_name="node2"),
    ]
    assert scores(EQUAL_NODES, existing, st_pod(C1000_M2000), strategy) == want


def test_fit_score_with_filter() -> None:
    """Score over the feasible nodes only: node1 is full, node2 scored as upstream."""
    nodes = [
        ("node1", {**capacity(4000, 10000), "pods": 1}),
        ("node2", {**capacity(6000, 10000), "pods": 10}),
    ]
    c = cluster([node(n, allocatable=a) for n, a in nodes], FIT_SCORE_PODS)
    args = {PLUGIN: {"scoringStrategy": least()}}
    result = explain(c, st_pod(C1000_M2000), [PLUGIN], [(PLUGIN, 1)], args)
    assert statuses(result) == {"node1": (UNSCHEDULABLE, "Too many pods"), "node2": None}
    assert normalized(result, PLUGIN) == {"node2": 63}
    assert result["node1"]["scores"] == {}
    assert result["node1"]["total"] == 0


LEAST_ALLOCATED = [
    pytest.param(
        st_pod(),
        EQUAL_NODES,
        [],
        DEFAULT_RESOURCES,
        (100, 100),
        id="nothing-scheduled-nothing-requested",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        SMALL_NODES,
        [],
        DEFAULT_RESOURCES,
        (37, 50),
        id="nothing-scheduled-resources-requested-differently-sized-nodes",
    ),
    pytest.param(
        st_pod(),
        EQUAL_NODES,
        [
            st_pod(node_name="node1"),
            st_pod(node_name="node1"),
            st_pod(node_name="node2"),
            st_pod(node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        (100, 100),
        id="no-resources-requested-pods-scheduled",
    ),
    pytest.param(
        st_pod(),
        BIG_NODES,
        [
            st_pod(C3000_M0, node_name="node1"),
            st_pod(C3000_M0, node_name="node1"),
            st_pod(C3000_M0, node_name="node2"),
            st_pod(C3000_M5000, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        (70, 57),
        id="no-resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        BIG_NODES,
        [st_pod(C3000_M0, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
        DEFAULT_RESOURCES,
        (57, 45),
        id="resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        [("node1", capacity(10000, 20000)), ("node2", capacity(10000, 50000))],
        [st_pod(C3000_M0, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
        DEFAULT_RESOURCES,
        (57, 60),
        id="resources-requested-pods-scheduled-with-resources-differently-sized-nodes",
    ),
    pytest.param(
        st_pod(C3000_M0),
        EQUAL_NODES,
        [st_pod(C3000_M0, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
        DEFAULT_RESOURCES,
        (50, 25),
        id="requested-resources-exceed-node-capacity",
    ),
    pytest.param(
        st_pod(),
        [("node1", {}), ("node2", {})],
        [st_pod(C3000_M0, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
        DEFAULT_RESOURCES,
        (0, 0),
        id="zero-node-resources-pods-scheduled-with-resources",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        SMALL_NODES,
        [],
        resources(("memory", 2), ("cpu", 1)),
        (41, 50),
        id="different-weights-on-cpu-and-memory",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        [("node1", capacity(6000, 10000)), ("node2", intel(capacity(6000, 10000), foo=4))],
        [],
        EXTENDED_RESOURCE_SET,
        (50, 50),
        id="bypass-extended-resource-the-pod-does-not-request",
    ),
    pytest.param(
        st_pod({"cpu": "3000", "memory": "5000", INTEL_FOO: "2"}),
        [
            ("node1", intel(capacity(6000, 10000), foo=4)),
            ("node2", intel(capacity(6000, 10000), foo=10)),
        ],
        [],
        EXTENDED_RESOURCE_SET,
        (50, 60),
        id="honor-extended-resource-the-pod-requests",
    ),
    pytest.param(
        st_pod({"cpu": "3000", "memory": "4000"}),
        [("node1", capacity(6000, 10000)), ("node2", intel(capacity(6000, 10000), foo=4))],
        [],
        resources((INTEL_FOO, 2), ("cpu", 1), ("memory", 1)),
        (55, 55),
        id="node-without-the-resource",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "res", "want"), LEAST_ALLOCATED)
def test_least_allocated(
    incoming: Obj,
    nodes: list[tuple[str, dict[str, int]]],
    existing: list[Obj],
    res: list[Obj],
    want: tuple[int, int],
) -> None:
    got = scores(nodes, existing, incoming, least(res))
    assert got == dict(zip(("node1", "node2"), want, strict=True))


MOST_ALLOCATED = [
    pytest.param(
        st_pod(),
        EQUAL_NODES,
        [],
        DEFAULT_RESOURCES,
        (0, 0),
        id="nothing-scheduled-nothing-requested",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        SMALL_NODES,
        [],
        DEFAULT_RESOURCES,
        (62, 50),
        id="nothing-scheduled-resources-requested-differently-sized-nodes",
    ),
    pytest.param(
        st_pod(),
        BIG_NODES,
        [
            st_pod(C3000_M0, node_name="node1"),
            st_pod(C3000_M0, node_name="node1"),
            st_pod(C3000_M0, node_name="node2"),
            st_pod(C3000_M5000, node_name="node2"),
        ],
        DEFAULT_RESOURCES,
        (30, 42),
        id="no-resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        BIG_NODES,
        [st_pod(C3000_M0, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
        DEFAULT_RESOURCES,
        (42, 55),
        id="resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        st_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [("node1", capacity(5000, 10000)), ("node2", capacity(10000, 9000))],
        [],
        DEFAULT_RESOURCES,
        (95, 75),
        id="resources-requested-equal-node-capacity",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        SMALL_NODES,
        [],
        resources(("memory", 2), ("cpu", 1)),
        (58, 50),
        id="different-weights-on-cpu-and-memory",
    ),
    pytest.param(
        st_pod({}),
        [
            ("node1", {"cpu": 250, "memory": 1000 * MI}),
            ("node2", {"cpu": 250, "memory": 1000 * MI}),
        ],
        [st_pod({}, node_name="node1"), st_pod({}, node_name="node1")],
        DEFAULT_RESOURCES,
        (80, 30),
        id="no-resources-requested-nonzero-request-defaults",
    ),
    pytest.param(
        st_pod(C1000_M2000, C2000_M3000),
        [("node1", capacity(6000, 10000)), ("node2", intel(capacity(6000, 10000), foo=4))],
        [],
        EXTENDED_RESOURCE_SET,
        (50, 50),
        id="bypass-extended-resource-the-pod-does-not-request",
    ),
    pytest.param(
        st_pod({"cpu": "3000", "memory": "5000", INTEL_FOO: "2"}),
        [
            ("node1", intel(capacity(6000, 10000), foo=4)),
            ("node2", intel(capacity(6000, 10000), foo=10)),
        ],
        [],
        EXTENDED_RESOURCE_SET,
        (50, 40),
        id="honor-extended-resource-the-pod-requests",
    ),
    pytest.param(
        st_pod({"cpu": "3000", "memory": "4000"}),
        [("node1", capacity(6000, 10000)), ("node2", intel(capacity(6000, 10000), foo=4))],
        [],
        resources((INTEL_FOO, 2), ("cpu", 1), ("memory", 1)),
        (45, 45),
        id="node-without-the-resource",
    ),
]


@pytest.mark.parametrize(("incoming", "nodes", "existing", "res", "want"), MOST_ALLOCATED)
def test_most_allocated(
    incoming: Obj,
    nodes: list[tuple[str, dict[str, int]]],
    existing: list[Obj],
    res: list[Obj],
    want: tuple[int, int],
) -> None:
    got = scores(nodes, existing, incoming, most(res))
    assert got == dict(zip(("node1", "node2"), want, strict=True))


LEAST_REQUESTED_SHAPE = [(0, 10), (100, 0)]


@pytest.mark.parametrize(
    ("incoming", "nodes", "existing", "want"),
    [
        pytest.param(
            st_pod(),
            EQUAL_NODES,
            [st_pod(node_name="node1"), st_pod(node_name="node1")],
            (100, 100),
            id="nothing-scheduled-nothing-requested",
        ),
        pytest.param(
            st_pod(C1000_M2000, C2000_M3000),
            SMALL_NODES,
            [st_pod(node_name="node1"), st_pod(node_name="node1")],
            (38, 50),
            id="nothing-scheduled-resources-requested-differently-sized-nodes",
        ),
        pytest.param(
            st_pod(),
            SMALL_NODES,
            [st_pod(C3000_M5000, node_name="node1"), st_pod(C3000_M5000, node_name="node2")],
            (38, 50),
            id="no-resources-requested-pods-scheduled-with-resources",
        ),
    ],
)
def test_requested_to_capacity_ratio(
    incoming: Obj,
    nodes: list[tuple[str, dict[str, int]]],
    existing: list[Obj],
    want: tuple[int, int],
) -> None:
    got = scores(nodes, existing, incoming, ratio(LEAST_REQUESTED_SHAPE))
    assert got == dict(zip(("node1", "node2"), want, strict=True))


#: upstream's makeNode(name, 4000, 10000*1024*1024, extended) in the bin packing tables.
def bin_node(name: str, foo: int, bar: int | None = None) -> tuple[str, dict[str, int]]:
    return (name, intel({"cpu": 4000, "memory": 10000 * MI, "pods": 100}, foo=foo, bar=bar))


BIN_PACKING_SHAPE = [(0, 0), (100, 1)]


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [
        pytest.param(st_pod(), [], (0, 0), id="nothing-scheduled-nothing-requested"),
        pytest.param(
            st_pod({INTEL_FOO: "2"}), [], (2, 5), id="resources-requested-pods-with-less-resources"
        ),
        pytest.param(
            st_pod({INTEL_FOO: "2"}),
            [st_pod({INTEL_FOO: "2"}, node_name="node2")],
            (2, 10),
            id="resources-requested-on-node-with-existing-pod",
        ),
        pytest.param(
            st_pod({INTEL_FOO: "4"}), [], (5, 10), id="resources-requested-pods-with-more-resources"
        ),
    ],
)
def test_bin_packing_single_extended(
    incoming: Obj, existing: list[Obj], want: tuple[int, int]
) -> None:
    nodes = [bin_node("node1", foo=8), bin_node("node2", foo=4)]
    strategy = ratio(BIN_PACKING_SHAPE, resources((INTEL_FOO, 1)))
    got = scores(nodes, existing, incoming, strategy)
    assert got == dict(zip(("node1", "node2"), want, strict=True))


@pytest.mark.parametrize(
    ("incoming", "existing", "want"),
    [
        pytest.param(st_pod(), [], (0, 0), id="nothing-scheduled-nothing-requested"),
        pytest.param(
            st_pod({INTEL_FOO: "2", INTEL_BAR: "2"}),
            [],
            (4, 3),
            id="resources-requested-pods-with-less-resources",
        ),
        pytest.param(
            st_pod({INTEL_FOO: "2", INTEL_BAR: "2"}),
            [st_pod({INTEL_FOO: "4", INTEL_BAR: "2"}, node_name="node2")],
            (4, 7),
            id="resources-requested-on-node-with-existing-pod",
        ),
        pytest.param(
            st_pod({INTEL_FOO: "4", INTEL_BAR: "2"}),
            [],
            (5, 5),
            id="resources-requested-pods-with-more-resources",
        ),
    ],
)
def test_bin_packing_multiple_extended(
    incoming: Obj, existing: list[Obj], want: tuple[int, int]
) -> None:
    nodes = [bin_node("node1", foo=8, bar=4), bin_node("node2", foo=4, bar=8)]
    strategy = ratio(BIN_PACKING_SHAPE, resources((INTEL_FOO, 3), (INTEL_BAR, 5)))
    got = scores(nodes, existing, incoming, strategy)
    assert got == dict(zip(("node1", "node2"), want, strict=True))


# Derived from requestedToCapacityRatioScorer / helper.BuildBrokenLinearFunction.


@pytest.mark.parametrize(
    ("shape", "cpu_m", "want"),
    [
        # Scaled shape (0,100)-(100,30): 100 + (-70*25)/100 = 100 - 17 (Go truncates
        # toward zero; flooring would give 82).
        pytest.param([(0, 10), (100, 3)], 1000, 83, id="interpolation-truncates-toward-zero"),
        # Below the first point: the first point's score.
        pytest.param([(50, 4), (100, 10)], 1000, 40, id="below-first-point"),
        # Above the last point: the last point's score.
        pytest.param([(0, 0), (20, 7)], 2000, 70, id="above-last-point"),
        # Three points, second segment: 100 + (0-100)*(75-40)/(100-40) = 100 - 58.
        pytest.param([(0, 2), (40, 10), (100, 0)], 3000, 42, id="three-points-second-segment"),
        # Requests over capacity use utilization 100.
        pytest.param([(0, 10), (100, 5)], 5000, 50, id="over-capacity-uses-max-utilization"),
    ],
)
def test_requested_to_capacity_ratio_shape(
    shape: list[tuple[int, int]], cpu_m: int, want: int
) -> None:
    nodes = [("n", {"cpu": 4000, "memory": 10 * MI})]
    incoming = st_pod({"cpu": f"{cpu_m}m"})
    assert scores(nodes, [], incoming, ratio(shape, resources(("cpu", 1)))) == {"n": want}


def test_requested_to_capacity_ratio_leaves_zero_scores_out() -> None:
    """A resource scoring 0 leaves the average entirely: cpu (0) and memory (80) average
    to 80, not 40; with every resource at 0 the node scores 0."""
    nodes = [("n", {"cpu": 4000, "memory": 1000})]
    shape = [(0, 10), (100, 0)]
    incoming = st_pod({"cpu": "4000m", "memory": "200"})
    assert scores(nodes, [], incoming, ratio(shape)) == {"n": 80}
    incoming = st_pod({"cpu": "4000m", "memory": "1000"})
    assert scores(nodes, [], incoming, ratio(shape)) == {"n": 0}


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    """(25 + 50) / 2 = 37.5 rounds to 38; LeastAllocated's integer division gives 37."""
    nodes = [("n", capacity(4000, 10000))]
    incoming = st_pod({"cpu": "3000", "memory": "5000"})
    assert scores(nodes, [], incoming, ratio(LEAST_REQUESTED_SHAPE)) == {"n": 38}
    assert scores(nodes, [], incoming, least()) == {"n": 37}


def test_ephemeral_storage_scored_when_not_requested() -> None:
    """ephemeral-storage is not a scalar resource: it stays in the average even when the
    pod does not request it (unlike an extended resource)."""
    nodes = [("n", {"cpu": 4000, "memory": 1000, "ephemeral-storage": 100})]
    incoming = st_pod({"cpu": "2000m", "memory": "500"})
    res = resources(("cpu", 1), ("memory", 1), ("ephemeral-storage", 1))
    # cpu 50, memory 50, storage 100 -> 200/3 = 66
    assert scores(nodes, [], incoming, least(res)) == {"n": 66}


def test_hugepages_not_requested_are_bypassed() -> None:
    """hugepages are scalar resources: left out when the pod does not request them."""
    nodes = [("n", {"cpu": 4000, "memory": 1000, HUGEPAGES: 10 * 2 * MI})]
    incoming = st_pod({"cpu": "2000m", "memory": "500"})
    res = resources(("cpu", 1), ("memory", 1), (HUGEPAGES, 1))
    assert scores(nodes, [], incoming, most(res)) == {"n": 50}


@pytest.mark.parametrize(
    ("containers", "pod_level", "want_fit", "want_balanced"),
    [
        # Node 4 cpu / 4000. Containers 1 cpu / 1000: Fit scores 75 on both resources;
        # BalancedAllocation sees the pod-level 3 cpu / 1000: fractions .75 and .25,
        # balance 75 against 100 without the pod, 50 + (50 + 75 - 100) / 2 = 62 (it
        # would be 75, no change, with the containers' requests).
        pytest.param(
            [{"cpu": "1", "memory": "1000"}],
            {"cpu": "3", "memory": "1000"},
            {"n": 75},
            {"n": 62},
            id="fit-scores-container-requests-balanced-pod-level",
        ),
        # A container without requests counts 100m / 200Mi in Fit's score: cpu
        # 3900*100/4000 = 97, memory 800Mi*100/1000Mi = 80, (97 + 80) / 2 = 88.
        pytest.param(
            [{}],
            {"cpu": "2", "memory": "500Mi"},
            {"n": 88},
            None,
            id="fit-scores-non-zero-defaults-not-pod-level",
        ),
    ],
)
def test_fit_score_ignores_pod_level_requests(
    containers: list[Mapping[str, str]],
    pod_level: Mapping[str, str],
    want_fit: dict[str, int],
    want_balanced: dict[str, int] | None,
) -> None:
    memory = 4000 if want_balanced is not None else 1000 * MI
    c = cluster([node("n", allocatable={"cpu": 4000, "memory": memory, "pods": 10})])
    incoming = pod(
        "p",
        containers=[container(dict(r) or None, name=f"c{i}") for i, r in enumerate(containers)],
        pod_requests=pod_level,
    )
    balanced = "NodeResourcesBalancedAllocation"
    result = explain(c, incoming, [PLUGIN], [(PLUGIN, 1), (balanced, 1)])
    assert statuses(result) == {"n": None}  # Filter: the pod-level requests fit
    assert normalized(result, PLUGIN) == want_fit
    if want_balanced is not None:
        assert normalized(result, balanced) == want_balanced
