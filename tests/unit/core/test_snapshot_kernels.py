"""Behaviour of the Rust snapshot and its first kernels, seen from Python.

NodeUnschedulable, NodeName and NodeResourcesFit (Filter and LeastAllocated /
MostAllocated Score), percentageOfNodesToScore sampling, round-robin start, random
tie-breaking, and the incremental updates the cache relies on.
"""

from __future__ import annotations

import collections

import pytest

from ksched._core import CompiledPod, Profile, Snapshot, num_feasible_nodes_to_find

GI = 1024**3
MI = 1024**2
FILTERS = ["NodeUnschedulable", "NodeName", "NodeResourcesFit"]


def pod(
    name: str = "p",
    *,
    cpu: int = 0,
    memory: int = 0,
    extra: dict[str, int] | None = None,
    node_name: str = "",
    tolerations: list[tuple[str, str, str, str]] | None = None,
    nz_cpu: int | None = None,
    nz_mem: int | None = None,
) -> CompiledPod:
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    return CompiledPod(
        f"uid-{name}",
        "default",
        name,
        requests=requests,
        non_zero_cpu=cpu if nz_cpu is None else nz_cpu,
        non_zero_memory=memory if nz_mem is None else nz_mem,
        node_name=node_name,
        tolerations=tolerations or [],
    )


def node(
    snap: Snapshot,
    name: str,
    *,
    cpu: int = 4000,
    memory: int = 32 * GI,
    pods: int = 110,
    extra: dict[str, int] | None = None,
    unschedulable: bool = False,
    labels: dict[str, str] | None = None,
) -> None:
    snap.upsert_node(
        name,
        {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})},
        labels or {},
        [],
        unschedulable,
    )


def profile(*, strategy: str = "LeastAllocated", pct: int = 0, **fit_args: object) -> Profile:
    args: dict[str, object] = {
        "scoringStrategy": {
            "type": strategy,
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        },
        **fit_args,
    }
    return Profile(FILTERS, [("NodeResourcesFit", 1)], {"NodeResourcesFit": args}, pct)


@pytest.mark.parametrize(
    ("case", "pod_kwargs", "node_kwargs", "reasons"),
    [
        ("fits", {"cpu": 1000}, {}, []),
        ("insufficient-cpu", {"cpu": 5000}, {}, ["Insufficient cpu"]),
        ("insufficient-memory", {"memory": 64 * GI}, {}, ["Insufficient memory"]),
        (
            "insufficient-cpu-and-memory-in-upstream-order",
            {"cpu": 5000, "memory": 64 * GI},
            {},
            ["Insufficient cpu", "Insufficient memory"],
        ),
        ("too-many-pods", {"cpu": 1}, {"pods": 0}, ["Too many pods"]),
        (
            "too-many-pods-first",
            {"cpu": 9000},
            {"pods": 0},
            ["Too many pods", "Insufficient cpu"],
        ),
        (
            "extended-resource-missing-on-node",
            {"extra": {"example.com/gpu": 1}},
            {},
            ["Insufficient example.com/gpu"],
        ),
        (
            "extended-resource-present",
            {"extra": {"example.com/gpu": 2}},
            {"extra": {"example.com/gpu": 2}},
            [],
        ),
        ("best-effort-pod-only-checks-pod-count", {}, {"cpu": 0, "memory": 0}, []),
    ],
)
def test_node_resources_fit_filter(
    case: str, pod_kwargs: dict, node_kwargs: dict, reasons: list[str]
) -> None:
    snap = Snapshot(1)
    node(snap, "n1", **node_kwargs)
    result = snap.schedule(pod(**pod_kwargs), profile())
    if not reasons:
        assert result.node == "n1", case
        return
    assert result.node is None, case
    # A request larger than the node's whole allocatable cannot be helped by evicting
    # pods: UnschedulableAndUnresolvable. "Too many pods" alone stays resolvable.
    unresolvable = reasons != ["Too many pods"]
    assert result.statuses == [("n1", unresolvable, "NodeResourcesFit", reasons)], case


@pytest.mark.parametrize(
    ("case", "args", "fits"),
    [
        ("ignored-resource", {"ignoredResources": ["example.com/gpu"]}, True),
        ("ignored-group", {"ignoredResourceGroups": ["example.com"]}, True),
        ("other-group", {"ignoredResourceGroups": ["other.io"]}, False),
    ],
)
def test_ignored_extended_resources(case: str, args: dict, fits: bool) -> None:
    snap = Snapshot(1)
    node(snap, "n1")
    result = snap.schedule(pod(extra={"example.com/gpu": 1}), profile(**args))
    assert (result.node == "n1") is fits, case


def test_requests_accumulate_until_the_node_is_full() -> None:
    snap = Snapshot(1)
    node(snap, "n1", cpu=1000)
    for i in range(4):
        p = pod(f"p{i}", cpu=250)
        r = snap.schedule(p, profile())
        assert r.node == "n1"
        snap.assume(p, "n1")
    assert snap.requested("n1", "cpu") == 1000
    r = snap.schedule(pod("p5", cpu=1), profile())
    assert r.node is None
    assert r.reason_counts() == {"Insufficient cpu": 1}
    assert snap.remove_pod("uid-p0")
    assert snap.schedule(pod("p5", cpu=250), profile()).node == "n1"


def test_node_unschedulable_and_its_toleration() -> None:
    snap = Snapshot(1)
    node(snap, "n1", unschedulable=True)
    r = snap.schedule(pod(), profile())
    assert r.statuses == [("n1", True, "NodeUnschedulable", ["node(s) were unschedulable"])]
    tolerant = pod(tolerations=[("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule")])
    assert snap.schedule(tolerant, profile()).node == "n1"


def test_node_name_selects_only_that_node() -> None:
    snap = Snapshot(1)
    for n in ("a", "b", "c"):
        node(snap, n)
    r = snap.schedule(pod(node_name="b"), profile())
    assert r.node == "b"
    r = snap.schedule(pod(node_name="missing"), profile())
    assert r.node is None
    assert r.reason_counts() == {"node(s) didn't match the requested node name": 3}


def test_filter_order_decides_the_reported_reason() -> None:
    # An unschedulable node that is also full reports only the first failing filter.
    snap = Snapshot(1)
    node(snap, "n1", cpu=100, unschedulable=True)
    r = snap.schedule(pod(cpu=1000), profile())
    assert r.reason_counts() == {"node(s) were unschedulable": 1}


def test_least_allocated_prefers_the_emptier_node() -> None:
    snap = Snapshot(1)
    node(snap, "busy")
    node(snap, "idle")
    filler = pod("filler", cpu=3000, memory=16 * GI)
    snap.assume(filler, "busy")
    r = snap.schedule(pod(cpu=100, memory=100 * MI), profile(), explain=True)
    assert r.node == "idle"
    # idle: cpu (4000-100)/4000 → 97, memory → 99; mean 98 (integer division).
    assert r.scores[0] == ("idle", 98)


def _nominated(name: str, node_name: str, cpu: int) -> CompiledPod:
    return CompiledPod(
        f"uid-{name}",
        "default",
        name,
        requests={"cpu": cpu},
        non_zero_cpu=cpu,
        non_zero_memory=0,
        nominated_node_name=node_name,
    )


def test_a_nominated_pod_goes_to_its_nominated_node_when_that_fits() -> None:
    """Upstream's evaluateNominatedNode: the nominated node alone, no scoring."""
    snap = Snapshot(1)
    node(snap, "busy")
    node(snap, "idle")
    snap.assume(pod("filler", cpu=3000, memory=16 * GI), "busy")
    r = snap.schedule(_nominated("p", "busy", 500), profile())
    assert (r.node, r.evaluated_nodes, r.feasible_nodes) == ("busy", 1, 1)
    # Without the nomination (or ignoring it), LeastAllocated picks the idle node.
    assert snap.schedule(_nominated("p", "", 500), profile()).node == "idle"
    assert snap.schedule(_nominated("p", "busy", 500), profile(), use_nomination=False).node == (
        "idle"
    )


def test_a_nominated_node_that_no_longer_fits_falls_back_to_every_node() -> None:
    snap = Snapshot(1)
    node(snap, "busy")
    node(snap, "idle")
    snap.assume(pod("filler", cpu=3000, memory=16 * GI), "busy")
    for nominated in ("busy", "gone"):
        r = snap.schedule(_nominated("p", nominated, 2000), profile())
        assert (r.node, r.evaluated_nodes) == ("idle", 2)


def test_most_allocated_prefers_the_fuller_node() -> None:
    snap = Snapshot(1)
    node(snap, "busy")
    node(snap, "idle")
    snap.assume(pod("filler", cpu=3000, memory=16 * GI), "busy")
    r = snap.schedule(pod(cpu=100, memory=100 * MI), profile(strategy="MostAllocated"))
    assert r.node == "busy"


def test_scoring_uses_non_zero_requests() -> None:
    # Two best-effort pods on "a" count 100m/200Mi each for scoring, so "b" wins.
    snap = Snapshot(1)
    node(snap, "a")
    node(snap, "b")
    for i in range(2):
        snap.assume(pod(f"be{i}", nz_cpu=100, nz_mem=200 * MI), "a")
    assert snap.requested("a", "cpu") == 0
    r = snap.schedule(pod("new", nz_cpu=100, nz_mem=200 * MI), profile(), explain=True)
    assert r.node == "b"
    assert r.scores[0][1] > r.scores[1][1]


@pytest.mark.parametrize(
    ("n", "pct", "want"),
    [(50, 0, 50), (1000, 0, 420), (5000, 0, 500), (5000, 30, 1500), (100_000, 0, 5000)],
)
def test_num_feasible_nodes_to_find(n: int, pct: int, want: int) -> None:
    assert num_feasible_nodes_to_find(n, pct) == want


def test_sampling_examines_a_share_of_nodes_and_rotates_the_start() -> None:
    snap = Snapshot(7)
    for i in range(5000):
        node(snap, f"n{i}")
    first = snap.schedule(pod("a"), profile())
    assert (first.evaluated_nodes, first.feasible_nodes) == (500, 500)
    order = snap.node_names()
    assert first.node in order[:500]
    second = snap.schedule(pod("b"), profile())
    assert second.node in order[500:1000]
    all_nodes = snap.schedule(pod("c"), profile(pct=100))
    assert all_nodes.evaluated_nodes == 5000


def test_sampling_counts_rejected_nodes_as_evaluated() -> None:
    snap = Snapshot(7)
    for i in range(1000):
        node(snap, f"n{i}", cpu=500 if i % 2 else 4000)
    r = snap.schedule(pod(cpu=1000), profile())
    # 420 feasible nodes wanted; every other node is too small.
    assert r.feasible_nodes == 420
    assert r.evaluated_nodes == 839


def test_ties_are_broken_uniformly_at_random() -> None:
    snap = Snapshot(11)
    for n in ("a", "b", "c"):
        node(snap, n)
    picks = collections.Counter(snap.schedule(pod(), profile()).node for _ in range(3000))
    assert set(picks) == {"a", "b", "c"}
    assert all(800 < c < 1200 for c in picks.values()), picks


def test_zones_are_interleaved_in_the_examination_order() -> None:
    snap = Snapshot(1)
    for i, zone in enumerate(["z1", "z1", "z2", "z2", "z3"]):
        node(snap, f"n{i}", labels={"topology.kubernetes.io/zone": zone})
    assert snap.node_names() == ["n0", "n2", "n4", "n1", "n3"]


def test_pod_before_its_node_and_node_removed_with_pods() -> None:
    snap = Snapshot(1)
    early = pod("early", cpu=1000)
    snap.add_pod(early, "late-node")
    assert snap.num_nodes == 0
    assert snap.schedule(pod(), profile()).num_all_nodes == 0
    node(snap, "late-node", cpu=1000)
    assert snap.requested("late-node", "cpu") == 1000
    assert snap.schedule(pod(cpu=1), profile()).node is None
    assert snap.remove_node("late-node")
    assert snap.num_nodes == 0
    assert snap.requested("late-node", "cpu") == 1000  # ghost keeps the pod's accounting
    assert snap.remove_pod("uid-early")
    assert snap.requested("late-node", "cpu") is None


def test_assume_confirm_forget() -> None:
    snap = Snapshot(1)
    node(snap, "n1")
    p = pod(cpu=500)
    snap.assume(p, "n1")
    assert snap.is_assumed(p.uid) is True
    assert snap.confirm(p.uid, "n1")
    assert snap.is_assumed(p.uid) is False
    assert not snap.confirm(p.uid, "other")
    assert snap.remove_pod(p.uid)
    assert snap.is_assumed(p.uid) is None
    assert snap.requested("n1", "cpu") == 0


def test_adding_a_known_pod_again_does_not_double_count() -> None:
    snap = Snapshot(1)
    node(snap, "n1")
    p = pod(cpu=500)
    snap.add_pod(p, "n1")
    snap.add_pod(p, "n1")
    assert snap.requested("n1", "cpu") == 500
    assert snap.requested("n1", "pods") == 1


def test_columns_are_numpy_arrays_in_examination_order() -> None:
    snap = Snapshot(1)
    node(snap, "a", cpu=1000)
    node(snap, "b", cpu=2000)
    snap.assume(pod(cpu=300), "b")
    names, alloc, req = snap.resource_columns("cpu")
    assert names == ["a", "b"]
    assert alloc.tolist() == [1000, 2000]
    assert req.tolist() == [0, 300]
    assert snap.pod_counts().tolist() == [0, 1]


@pytest.mark.parametrize(
    ("case", "call", "message"),
    [
        (
            "bad-taint-effect",
            lambda s: s.upsert_node("n1", {"cpu": 1}, {}, [("k", "v", "Sometimes")]),
            "Node n1: spec.taints[0].effect",
        ),
        (
            "non-integer-allocatable",
            lambda s: s.upsert_node("n1", {"cpu": "4"}),
            "Node n1: status.allocatable[cpu]",
        ),
        (
            "negative-request",
            lambda s: CompiledPod(
                "u", "ns", "p", requests={"cpu": -1}, non_zero_cpu=0, non_zero_memory=0
            ),
            "Pod ns/p: requests[cpu]",
        ),
        (
            "bad-toleration-operator",
            lambda s: CompiledPod(
                "u",
                "ns",
                "p",
                requests={},
                non_zero_cpu=0,
                non_zero_memory=0,
                tolerations=[("k", "Maybe", "", "")],
            ),
            "Pod ns/p: spec.tolerations[0].operator",
        ),
        (
            "unknown-plugin",
            lambda s: Profile(["NoSuchPlugin"], []),
            'filter plugin "NoSuchPlugin" has no Rust kernel',
        ),
        (
            "bad-scoring-strategy",
            lambda s: Profile(
                [],
                [("NodeResourcesFit", 1)],
                {"NodeResourcesFit": {"scoringStrategy": {"type": "Random"}}},
            ),
            "NodeResourcesFitArgs.scoringStrategy.type",
        ),
    ],
)
def test_malformed_input_names_object_and_field(case: str, call, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        call(Snapshot(1))
