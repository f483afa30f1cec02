"""DefaultPreemption: upstream's tables and ksched's own, on a real scheduler.

Each case starts a :class:`~ksched.scheduler.Scheduler` on the embedded cluster (informers
synced, scheduling loop not running) and calls the plugin as the scheduling cycle would,
with the node statuses the case gives (as upstream's tests give ``filteredNodesStatuses``).
The first tables are ported from upstream v1.36's
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go``
(``TestPostFilter``, ``TestDryRunPreemption``, ``TestSelectBestCandidate``): the
resources, priorities and expected nodes are upstream's; start times are whole seconds
because the API serializes them so. Upstream's cases about extenders, pod groups and a
PreFilter plugin's RemovePod error have no counterpart here.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from ksched._core import CompiledPod, Snapshot
from ksched._core import Profile as KernelProfile
from ksched.api.pod import Pod
from ksched.framework.builtins import default_plugins
from ksched.framework.cycle_state import CycleState
from ksched.framework.diagnosis import NodeStatuses, RawNodeStatus
from ksched.framework.profile import DEFAULT_FILTERS, Profile
from ksched.framework.status import Code, Status
from ksched.plugins.default_preemption import (
    Candidate,
    DefaultPreemption,
    PodDisruptionBudget,
    candidates_of,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from ksched.scheduler import Scheduler
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

Obj = dict[str, Any]

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = ("100m", "100")
MEDIUM = ("200m", "200")
LARGE = ("300m", "300")
VERY_LARGE = ("500m", "500")


def epoch(seconds: int) -> str:
    return f"1970-01-01T00:00:{seconds:02d}Z"


def node(name: str, cpu: str = "0", memory: str = "0", pods: str = "32", **labels: str) -> Obj:
    return make_node(name, cpu=cpu, memory=memory, pods=pods, labels=labels)


def one_pod_node(name: str) -> Obj:
    """Upstream's ``onePodRes`` capacity: one pod, no cpu or memory."""
    return node(name, pods="1")


def pod(
    name: str,
    *,
    prio: int = LOW,
    on: str | None = None,
    req: tuple[str, str] | None = None,
    start: str | None = None,
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    extra: Obj | None = None,
) -> Obj:
    cpu, memory = req if req is not None else (None, None)
    obj = make_pod(
        name,
        namespace=namespace,
        cpu=cpu,
        memory=memory,
        priority=prio,
        node_name=on,
        labels=dict(labels or {}),
        extra_spec=extra,
    )
    obj["metadata"]["uid"] = name
    if start is not None:
        obj["status"]["startTime"] = start
    return obj


def pdb(
    name: str,
    match: Mapping[str, str] | None,
    allowed: int = 0,
    *,
    namespace: str = "default",
    disrupted: Iterable[str] = (),
) -> Obj:
    spec: Obj = {}
    if match is not None:
        spec["selector"] = {"matchLabels": dict(match)}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2026-01-01T00:00:00Z" for p in disrupted},
        },
    }


def statuses(unschedulable: Iterable[str] = (), unresolvable: Iterable[str] = ()) -> NodeStatuses:
    """Explicit statuses; absent nodes are UnschedulableAndUnresolvable."""
    raw: list[RawNodeStatus] = [(n, False, "", []) for n in unschedulable]
    raw += [(n, True, "", []) for n in unresolvable]
    return NodeStatuses(raw)


@dataclass
class Env:
    cluster: InMemoryCluster
    sched: Scheduler
    plugin: DefaultPreemption

    def pod(self, name: str, namespace: str = "default") -> Pod:
        obj = self.cluster.get("pods", f"{namespace}/{name}")
        assert obj is not None
        return Pod.from_dict(obj)

    def post_filter(self, name: str, st: Mapping[str, Status]) -> tuple[str | None, Status | None]:
        res, s = self.plugin.post_filter(CycleState(), self.pod(name), st)
        return (res.nominated_node_name if res is not None else None), s

    def candidates(self, name: str, st: Mapping[str, Status]) -> dict[str, tuple[list[str], int]]:
        attempt = self.plugin.new_attempt(CycleState(), self.pod(name))
        assert attempt is not None
        found, _, errors = self.plugin.find_candidates(attempt, st)
        assert not errors
        # Pods' uids are their names here.
        return {c.node: (sorted(c.victims), c.num_pdb_violations) for c in candidates_of(found)}


@asynccontextmanager
async def running(
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    *,
    pdbs: Iterable[Obj] = (),
    filters: Sequence[str] = ("NodeResourcesFit",),
    args: Mapping[str, Any] | None = None,
    offset: int | None = 0,
) -> AsyncIterator[Env]:
    c = InMemoryCluster()
    for n in nodes:
        c.create("nodes", n)
    for p in pods:
        c.create("pods", p)
    for b in pdbs:
        c.create("poddisruptionbudgets", b)
    plugins = tuple(default_plugins(plugin_args={"DefaultPreemption": args}))
    profile = Profile("default-scheduler", tuple(filters), (), {}, 0, plugins=plugins)
    sched = Scheduler(c, {"default-scheduler": profile}, seed=1)
    plugin = next(p for p in plugins if isinstance(p, DefaultPreemption))
    if offset is not None:
        plugin.offset = lambda n: offset % n
    await sched.start()
    try:
        yield Env(c, sched, plugin)
    finally:
        await sched.shutdown()


# ---- upstream TestPostFilter -------------------------------------------------------------

NODE_RES = ("200m", "400")

POST_FILTER_CASES = [
    pytest.param(
        [one_pod_node("node1")],
        [pod("p1", on="node1")],
        [],
        pod("p", prio=HIGH),
        statuses(["node1"]),
        ("node1", Code.SUCCESS, ""),
        id="pod-with-higher-priority-can-be-made-schedulable",
    ),
    pytest.param(
        [one_pod_node("node1")],
        [pod("p1", on="node1")],
        [],
        pod("p"),
        statuses(["node1"]),
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        ),
        id="pod-with-tied-priority-is-still-unschedulable",
    ),
    pytest.param(
        [one_pod_node("node1")],
        [pod("p1", on="node1")],
        [],
        pod("p", prio=HIGH),
        statuses(unresolvable=["node1"]),
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        id="preemption-respects-filtered-node-statuses",
    ),
    pytest.param(
        [one_pod_node("node1")],
        [pod("p1", on="node1")],
        [],
        pod("p", prio=HIGH),
        statuses(),
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ),
        id="absent-status-means-unschedulable-and-unresolvable",
    ),
    pytest.param(
        [one_pod_node("node1"), one_pod_node("node2")],
        [pod("p1", prio=HIGH, on="node1"), pod("p2", prio=LOW, on="node2")],
        [],
        pod("p", prio=MID),
        statuses(["node1", "node2"]),
        ("node2", Code.SUCCESS, ""),
        id="pod-can-be-made-schedulable-on-one-node",
    ),
    pytest.param(
        [one_pod_node("node1"), one_pod_node("node2")],
        [
            pod("p1", prio=HIGH, on="node1", labels={"pdb": "non-violating"}),
            pod("p2", prio=LOW, on="node1", labels={"pdb": "violating"}),
            pod("p3", prio=MID, on="node2", labels={"pdb": "violating"}),
        ],
        [
            pdb("violating-pdb", {"pdb": "violating"}, 0),
            pdb("non-violating-pdb", {"pdb": "non-violating"}, 2**31 - 1),
        ],
        pod("p", prio=VERY_HIGH),
        statuses(["node1", "node2"]),
        ("node2", Code.SUCCESS, ""),
        id="pod-can-be-made-schedulable-on-min-highest-priority-node",
    ),
    pytest.param(
        [node("node1", *NODE_RES), node("node2", *NODE_RES)],
        [pod("p1", on="node1"), pod("p2", on="node2")],
        [],
        pod("p", prio=HIGH, req=LARGE),
        statuses(["node1", "node2"]),
        ("", Code.UNSCHEDULABLE, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        id="no-candidate-not-enough-resource-after-removing-low-priority-pods",
    ),
    pytest.param(
        [one_pod_node("node1"), node("node2", *NODE_RES), one_pod_node("node3")],
        [pod("p1", prio=HIGH, on="node1"), pod("p2", on="node2"), pod("p3", prio=HIGH, on="node3")],
        [],
        pod("p", prio=HIGH, req=LARGE),
        statuses(["node1", "node2", "node3"]),
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims "
            "found for incoming pod.",
        ),
        id="no-candidate-mixed-reasons-no-lower-priority-pod-and-not-enough-cpu",
    ),
    pytest.param(
        [node(f"node{i}", *NODE_RES) for i in range(1, 5)],
        [pod("p1", on="node1"), pod("p2", on="node2")],
        [],
        pod("p", prio=HIGH, req=LARGE),
        statuses(["node1", "node2"], unresolvable=["node4"]),
        (
            "",
            Code.UNSCHEDULABLE,
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not "
            "helpful for scheduling.",
        ),
        id="no-candidate-two-unresolvable-nodes-and-two-without-enough-cpu",
    ),
    pytest.param(
        [one_pod_node("node1")],
        [pod("p1", on="node1")],
        [],
        pod("p", prio=HIGH, extra={"preemptionPolicy": "Never"}),
        statuses(["node1"]),
        (None, Code.UNSCHEDULABLE, "preemption: not eligible due to preemptionPolicy=Never."),
        id="preemption-policy-never",
    ),
]


@pytest.mark.parametrize(("nodes", "pods", "pdbs", "preemptor", "st", "want"), POST_FILTER_CASES)
async def test_post_filter(
    nodes: list[Obj],
    pods: list[Obj],
    pdbs: list[Obj],
    preemptor: Obj,
    st: NodeStatuses,
    want: tuple[str | None, Code, str],
) -> None:
    async with running(nodes, [*pods, preemptor], pdbs=pdbs) as env:
        nominated, status = env.post_filter(preemptor["metadata"]["name"], st)
        assert status is not None
        assert (nominated, status.code, status.message) == want
        attempts = env.sched.metrics.preemption_attempts.get()
        assert attempts == 1


# ---- upstream TestDryRunPreemption (PDB case) -------------------------------------------------


async def test_dry_run_looks_past_num_candidates_until_a_non_violating_node() -> None:
    nodes = [node(f"node{i}", *VERY_LARGE) for i in range(1, 6)]
    foo = {"app": "foo"}
    pods = [
        pod("p1", prio=MID, on="node1", req=LARGE, labels=foo),
        pod("p2", prio=MID, on="node2", req=LARGE, labels=foo),
        pod("p3", prio=MID, on="node3", req=LARGE),
        pod("p4", prio=MID, on="node4", req=LARGE),
        pod("p5", prio=MID, on="node5", req=LARGE, labels=foo),
        pod("p", prio=HIGH, req=LARGE),
    ]
    args = {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2}
    # Upstream's rand with seed 4 starts at offset 4: node5 (violating), node1
    # (violating), node2 (violating, list full), node3 (not violating): stop.
    async with running(nodes, pods, pdbs=[pdb("pdb", foo, 0)], args=args, offset=4) as env:
        got = env.candidates("p", statuses([f"node{i}" for i in range(1, 6)]))
    assert got == {"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}


async def test_dry_run_stops_at_num_candidates_from_the_offset() -> None:
    nodes = [node(f"node{i}", *VERY_LARGE) for i in range(1, 6)]
    pods = [pod(f"p{i}", prio=MID, on=f"node{i}", req=LARGE) for i in range(1, 6)]
    args = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}
    names = [f"node{i}" for i in range(1, 6)]
    async with running(nodes, [*pods, pod("p", prio=HIGH, req=LARGE)], args=args) as env:
        for offset, want in [
            (0, {"node1", "node2"}),
            (3, {"node4", "node5"}),
            (4, {"node5", "node1"}),
        ]:
            env.plugin.offset = lambda n, o=offset: o  # type: ignore[misc]
            assert set(env.candidates("p", statuses(names))) == want


@pytest.mark.parametrize(
    ("num_nodes", "pct", "absolute", "want"),
    [
        pytest.param(10, 10, 100, 10, id="fewer-nodes-than-the-minimum"),
        pytest.param(5000, 10, 100, 500, id="ten-percent-of-5000"),
        pytest.param(500, 10, 100, 100, id="absolute-minimum"),
        pytest.param(1000, 40, 2, 400, id="custom-percentage"),
        pytest.param(7, 0, 2, 2, id="zero-percent"),
        pytest.param(3, 100, 0, 3, id="all-nodes"),
    ],
)
def test_num_candidates(num_nodes: int, pct: int, absolute: int, want: int) -> None:
    plugin = DefaultPreemption(
        min_candidate_nodes_percentage=pct, min_candidate_nodes_absolute=absolute
    )
    assert plugin.num_candidates(num_nodes) == want


# ---- upstream TestSelectBestCandidate ------------------------------------------------------

E = epoch(0)

SELECT_CASES = [
    pytest.param(
        ["node1", "node2"],
        pod("p", prio=HIGH, req=LARGE),
        [
            pod("p1", prio=MID, on="node1", req=LARGE, start=E),
            pod("p2", prio=MID, on="node2", req=LARGE, start=E),
        ],
        {"node1", "node2"},
        id="fits-on-both-nodes-when-lower-priority-pods-are-preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=MEDIUM, start=E),
            pod("p1.2", prio=MID, on="node1", req=LARGE, start=E),
            pod("p2.1", prio=MID, on="node2", req=MEDIUM, start=E),
            pod("p2.2", prio=LOW, on="node2", req=MEDIUM, start=E),
            pod("p3.1", prio=LOW, on="node3", req=MEDIUM, start=E),
            pod("p3.2", prio=LOW, on="node3", req=MEDIUM, start=E),
        ],
        {"node3"},
        id="node-with-min-highest-priority-pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=MEDIUM, start=E),
            pod("p1.2", prio=MID, on="node1", req=LARGE, start=E),
            pod("p2.1", prio=MID, on="node2", req=LARGE, start=E),
            pod("p2.2", prio=LOW, on="node2", req=MEDIUM, start=E),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=E),
            pod("p3.2", prio=MID, on="node3", req=MEDIUM, start=E),
        ],
        {"node2"},
        id="same-highest-priority-min-sum-of-priorities",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=SMALL, start=E),
            pod("p1.2", prio=NEG, on="node1", req=SMALL, start=E),
            pod("p1.3", prio=MID, on="node1", req=SMALL, start=E),
            pod("p1.4", prio=NEG, on="node1", req=SMALL, start=E),
            pod("p2.1", prio=MID, on="node2", req=LARGE, start=E),
            pod("p2.2", prio=NEG, on="node2", req=MEDIUM, start=E),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=E),
            pod("p3.2", prio=NEG, on="node3", req=SMALL, start=E),
            pod("p3.3", prio=LOW, on="node3", req=SMALL, start=E),
        ],
        {"node2"},
        id="same-highest-priority-and-sum-min-number-of-pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=SMALL, start=E),
            pod("p1.2", prio=NEG, on="node1", req=SMALL, start=E),
            pod("p1.3", prio=NEG, on="node1", req=SMALL, start=E),
            pod("p2.1", prio=MID, on="node2", req=LARGE, start=E),
            pod("p2.2", prio=NEG, on="node2", req=MEDIUM, start=E),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=E),
            pod("p3.2", prio=NEG, on="node3", req=SMALL, start=E),
            pod("p3.3", prio=LOW, on="node3", req=SMALL, start=E),
        ],
        {"node2"},
        id="sum-of-adjusted-priorities",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"],
        pod("p", prio=VERY_HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=SMALL, start=E),
            pod("p1.2", prio=LOW, on="node1", req=SMALL, start=E),
            pod("p1.3", prio=LOW, on="node1", req=SMALL, start=E),
            pod("p2.1", prio=HIGH, on="node2", req=LARGE, start=E),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=E),
            pod("p3.2", prio=LOW, on="node3", req=SMALL, start=E),
            pod("p3.3", prio=LOW, on="node3", req=SMALL, start=E),
            pod("p3.4", prio=LOW, on="node3", req=MEDIUM, start=E),
            pod("p4.1", prio=MID, on="node4", req=MEDIUM, start=E),
            pod("p4.2", prio=MID, on="node4", req=SMALL, start=E),
            pod("p4.3", prio=MID, on="node4", req=SMALL, start=E),
            pod("p4.4", prio=NEG, on="node4", req=SMALL, start=E),
        ],
        {"node1"},
        id="non-overlapping-lowest-high-priority-sum-and-number-of-pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=MEDIUM, start=epoch(2)),
            pod("p1.2", prio=MID, on="node1", req=MEDIUM, start=epoch(2)),
            pod("p2.1", prio=MID, on="node2", req=MEDIUM, start=epoch(3)),
            pod("p2.2", prio=MID, on="node2", req=MEDIUM, start=epoch(3)),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=epoch(1)),
            pod("p3.2", prio=MID, on="node3", req=MEDIUM, start=epoch(1)),
        ],
        {"node2"},
        id="same-priority-and-victims-different-start-time-per-node",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=MID, on="node1", req=MEDIUM, start=epoch(4)),
            pod("p1.2", prio=MID, on="node1", req=MEDIUM, start=epoch(2)),
            pod("p2.1", prio=MID, on="node2", req=MEDIUM, start=epoch(5)),
            pod("p2.2", prio=MID, on="node2", req=MEDIUM, start=epoch(1)),
            pod("p3.1", prio=MID, on="node3", req=MEDIUM, start=epoch(3)),
            pod("p3.2", prio=MID, on="node3", req=MEDIUM, start=epoch(6)),
        ],
        {"node3"},
        id="same-priority-and-victims-different-start-time-for-all-pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", prio=LOW, on="node1", req=MEDIUM, start=epoch(4)),
            pod("p1.2", prio=MID, on="node1", req=MEDIUM, start=epoch(2)),
            pod("p2.1", prio=MID, on="node2", req=MEDIUM, start=epoch(6)),
            pod("p2.2", prio=LOW, on="node2", req=MEDIUM, start=epoch(1)),
            pod("p3.1", prio=LOW, on="node3", req=MEDIUM, start=epoch(3)),
            pod("p3.2", prio=MID, on="node3", req=MEDIUM, start=epoch(5)),
        ],
        {"node2"},
        id="different-priority-same-victims-different-start-time",
    ),
]


@pytest.mark.parametrize(("names", "preemptor", "pods", "want"), SELECT_CASES)
async def test_select_best_candidate(
    names: list[str], preemptor: Obj, pods: list[Obj], want: set[str]
) -> None:
    nodes = [node(n, *VERY_LARGE) for n in names]
    async with running(nodes, [*pods, preemptor]) as env:
        nominated, status = env.post_filter("p", statuses(names))
    assert status is not None and status.code is Code.SUCCESS, status
    assert nominated in want


# ---- ranking ties (pickOneNodeForPreemption) ------------------------------------------------


@dataclass
class _Victim:
    pod: Pod
    compiled: Any = None
    assumed: bool = False


def _rank(*cands: tuple[str, Sequence[tuple[int, float]], int]) -> str | None:
    """The node pick_one_node_for_preemption chooses among candidates given as
    ``(node, [(victim priority, victim start time), ...], pdb violations)``, the
    victims accounted in a real snapshot with those priorities and start times."""
    snap = Snapshot(seed=1)
    candidates = []
    for name, victims, violations in cands:
        snap.upsert_node(name, {"cpu": 64_000, "memory": 2**40, "pods": 110})
        uids = []
        for i, (prio, start) in enumerate(victims):
            uid = f"{name}-v{i}"
            snap.add_pod(
                CompiledPod(
                    uid,
                    "default",
                    uid,
                    requests={},
                    non_zero_cpu=0,
                    non_zero_memory=0,
                    priority=prio,
                    start_time=start,
                ),
                name,
            )
            uids.append(uid)
        candidates.append(Candidate(name, uids, violations))
    best = pick_one_node_for_preemption(snap, candidates, now=1e9)
    return best.node if best is not None else None


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        pytest.param([("a", [(5, 1.0)], 0)], "a", id="single-candidate"),
        pytest.param(
            [("a", [(1, 1.0)], 1), ("b", [(9, 1.0), (9, 1.0)], 0)],
            "b",
            id="fewest-pdb-violations-first",
        ),
        pytest.param(
            [("a", [(5, 1.0)], 0), ("b", [(3, 1.0), (3, 1.0), (3, 1.0)], 0)],
            "b",
            id="lowest-highest-priority-before-count",
        ),
        pytest.param(
            [("a", [(5, 1.0), (4, 1.0)], 0), ("b", [(5, 1.0), (2, 1.0)], 0)],
            "b",
            id="smallest-sum-of-priorities",
        ),
        pytest.param(
            [("a", [(-5, 1.0), (-5, 1.0)], 0), ("b", [(-5, 1.0)], 0)],
            "b",
            id="negative-priorities-are-offset-before-summing",
        ),
        pytest.param(
            [("a", [(5, 1.0), (5, 1.0)], 0), ("b", [(5, 2.0)], 0), ("c", [(5, 9.0)], 0)],
            "c",
            id="fewest-victims-then-latest-start",
        ),
        pytest.param(
            [("a", [(5, 7.0), (1, 1.0)], 0), ("b", [(5, 3.0), (1, 9.0)], 0)],
            "a",
            id="start-time-of-the-highest-priority-victims-only",
        ),
        pytest.param(
            [("a", [(5, 3.0)], 0), ("b", [(5, 3.0)], 0), ("c", [(5, 3.0)], 0)],
            "a",
            id="full-tie-goes-to-the-first-candidate-found",
        ),
        pytest.param([], None, id="no-candidate"),
    ],
)
def test_pick_one_node_for_preemption(
    candidates: list[tuple[str, list[tuple[int, float]], int]], want: str | None
) -> None:
    assert _rank(*candidates) == want


def test_ranking_counts_a_victim_that_has_not_started_as_starting_now() -> None:
    snap = Snapshot(seed=1)
    snap.upsert_node("a", {"cpu": 1000, "memory": 2**30, "pods": 10})
    snap.upsert_node("b", {"cpu": 1000, "memory": 2**30, "pods": 10})
    for uid, node_name, start in (("old", "a", 5.0), ("new", "b", None)):
        snap.add_pod(
            CompiledPod(
                uid, "ns", uid, requests={}, non_zero_cpu=0, non_zero_memory=0, start_time=start
            ),
            node_name,
        )
    cands = [Candidate("a", ["old"], 0), Candidate("b", ["new"], 0)]
    # "new" starts at `now`, later than "old": its node is preferred.
    best = pick_one_node_for_preemption(snap, cands, now=100.0)
    assert best is not None and best.node == "b"
    best = pick_one_node_for_preemption(snap, cands, now=1.0)
    assert best is not None and best.node == "a"


# ---- PodDisruptionBudgets --------------------------------------------------------------------


def _victims(*specs: tuple[str, Mapping[str, str], str]) -> list[_Victim]:
    out = []
    for name, labels, ns in specs:
        obj = make_pod(name, namespace=ns, labels=dict(labels))
        obj["metadata"]["uid"] = name
        out.append(_Victim(Pod.from_dict(obj)))
    return out


@pytest.mark.parametrize(
    ("victims", "pdbs", "want_violating"),
    [
        pytest.param(
            _victims(("a", {"app": "x"}, "default"), ("b", {"app": "x"}, "default")),
            [pdb("x", {"app": "x"}, 1)],
            ["b"],
            id="budget-of-one-covers-the-first-victim-only",
        ),
        pytest.param(
            _victims(("a", {"app": "x"}, "default")),
            [pdb("x", {"app": "x"}, 0, disrupted=["a"])],
            [],
            id="already-disrupted-pod-is-not-charged",
        ),
        pytest.param(
            _victims(("a", {"app": "x"}, "other")),
            [pdb("x", {"app": "x"}, 0)],
            [],
            id="other-namespace",
        ),
        pytest.param(
            _victims(("a", {}, "default")),
            [pdb("x", {}, 0)],
            [],
            id="pod-without-labels-and-empty-selector-match-nothing",
        ),
        pytest.param(
            _victims(("a", {"app": "x"}, "default")),
            [pdb("x", None, 0)],
            [],
            id="nil-selector-matches-nothing",
        ),
        pytest.param(
            _victims(("a", {"app": "x", "tier": "web"}, "default"), ("b", {"app": "y"}, "default")),
            [pdb("x", {"app": "x"}, 5), pdb("web", {"tier": "web"}, 0)],
            ["a"],
            id="any-violated-pdb-makes-the-pod-violating",
        ),
    ],
)
def test_filter_pods_with_pdb_violation(
    victims: list[_Victim], pdbs: list[Obj], want_violating: list[str]
) -> None:
    budgets = [PodDisruptionBudget.from_dict(b) for b in pdbs]
    violating, ok = filter_pods_with_pdb_violation(victims, budgets)
    assert [v.pod.name for v in violating] == want_violating
    assert len(violating) + len(ok) == len(victims)


def test_pdb_match_expressions() -> None:
    budget = PodDisruptionBudget.from_dict(
        {
            "metadata": {"name": "b", "namespace": "default"},
            "spec": {
                "selector": {
                    "matchExpressions": [
                        {"key": "app", "operator": "In", "values": ["x", "y"]},
                        {"key": "canary", "operator": "DoesNotExist"},
                    ]
                }
            },
        }
    )
    assert budget.matches is not None
    assert budget.matches({"app": "y"})
    assert not budget.matches({"app": "y", "canary": "1"})
    assert not budget.matches({"app": "z"})
    bad = PodDisruptionBudget.from_dict(
        {"metadata": {"name": "b"}, "spec": {"selector": {"matchExpressions": [{"key": "a"}]}}}
    )
    assert bad.matches is None


async def test_pdb_violating_victims_are_reprieved_first() -> None:
    # Room for the preemptor needs one of the two pods gone: the one whose PDB would
    # be violated is reprieved first (kept), the other is the victim.
    nodes = [node("n1", "1", "1Gi")]
    pods = [
        pod("protected", prio=LOW, on="n1", req=("500m", "1"), labels={"app": "db"}, start=E),
        pod("plain", prio=LOW, on="n1", req=("500m", "1"), start=epoch(5)),
        pod("p", prio=HIGH, req=("500m", "1")),
    ]
    async with running(nodes, pods, pdbs=[pdb("db", {"app": "db"}, 0)]) as env:
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["plain"], 0)}
    # Without the PDB the more important pod (earlier start) is reprieved first.
    async with running(nodes, pods) as env:
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["plain"], 0)}
    pods[0]["status"]["startTime"] = epoch(9)
    async with running(nodes, pods) as env:
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["protected"], 0)}
    async with running(nodes, pods, pdbs=[pdb("db", {"app": "db"}, 0)]) as env:
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["plain"], 0)}


async def test_pdb_violations_are_counted_when_unavoidable() -> None:
    nodes = [node("n1", "1", "1Gi"), node("n2", "1", "1Gi")]
    pods = [
        pod("a", prio=LOW, on="n1", req=("1", "1"), labels={"app": "db"}),
        pod("b", prio=MID, on="n2", req=("1", "1")),
        pod("p", prio=HIGH, req=("1", "1")),
    ]
    async with running(nodes, pods, pdbs=[pdb("db", {"app": "db"}, 0)]) as env:
        assert env.candidates("p", statuses(["n1", "n2"])) == {
            "n1": (["a"], 1),
            "n2": (["b"], 0),
        }
        # Fewest violations beats the lower victim priority.
        nominated, _ = env.post_filter("p", statuses(["n1", "n2"]))
        assert nominated == "n2"


# ---- victims: only what is needed, all filters ---------------------------------------------


async def test_victims_are_the_minimum_reprieving_from_the_most_important() -> None:
    nodes = [node("n1", "4", "32Gi")]
    pods = [
        pod(f"low{i}", prio=LOW, on="n1", req=("900m", "500Mi"), start=epoch(i)) for i in range(4)
    ]
    preemptor = pod("p", prio=HIGH, req=("3", "500Mi"))
    async with running(nodes, [*pods, preemptor]) as env:
        # 400m free + one kept: 4000 - 900 = 3100 >= 3000. The earliest started pod is the
        # most important one and stays.
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["low1", "low2", "low3"], 0)}


async def test_higher_or_equal_priority_pods_are_never_victims() -> None:
    nodes = [node("n1", "2", "1Gi")]
    pods = [
        pod("same", prio=MID, on="n1", req=("1", "1")),
        pod("higher", prio=HIGH, on="n1", req=("1", "1")),
        pod("p", prio=MID, req=("1", "1")),
    ]
    async with running(nodes, pods) as env:
        nominated, status = env.post_filter("p", statuses(["n1"]))
    assert nominated == ""
    assert status is not None and status.message == (
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


async def test_node_whose_other_filters_still_reject_is_no_candidate() -> None:
    # Evicting the low-priority pod frees the cpu but not the host port held by a pod of
    # higher priority: all filters run on the node without its victims.
    port = {"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}
    nodes = [node("n1", "1", "1Gi")]
    pods = [
        pod("low", prio=LOW, on="n1", req=("1", "1")),
        pod("porty", prio=HIGH, on="n1", extra=port),
        pod("p", prio=MID, req=("1", "1"), extra=port),
    ]
    async with running(nodes, pods, filters=DEFAULT_FILTERS) as env:
        nominated, status = env.post_filter("p", statuses(["n1"]))
    assert nominated == ""
    assert status is not None and status.message == (
        "preemption: 0/1 nodes are available: 1 node(s) didn't have free ports for the "
        "requested pod ports."
    )


async def test_a_victim_frees_a_host_port_another_pod_also_holds() -> None:
    """Upstream removes victims from a copy of the node with NodeInfo.RemovePod, which
    deletes their ports from the node's set of used ports even when a pod staying there
    holds the same one: the preemptor then fits (found by the conformance harness)."""
    port = {"containers": [{"name": "c", "ports": [{"containerPort": 9090, "hostPort": 9090}]}]}
    nodes = [node("n1", "1", "1Gi")]
    pods = [
        pod("low", prio=LOW, on="n1", extra=port),
        pod("same", prio=MID, on="n1", extra=port),
        pod("p", prio=MID, extra=port),
    ]
    async with running(nodes, pods, filters=DEFAULT_FILTERS) as env:
        assert env.candidates("p", statuses(["n1"])) == {"n1": (["low"], 0)}
        # ...on the copy: the node itself still has 9090 in use after the dry run.
        snap = env.sched.cache.snapshot
        again = snap.schedule(env.sched.compile(env.pod("p")), KernelProfile(["NodePorts"], [], {}))
        assert again.node is None


SPREAD_ZONE = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "db"}},
        }
    ]
}


@pytest.mark.parametrize(
    ("terminating", "want"),
    [
        pytest.param(True, {"n2": (["db-t"], 0)}, id="a-terminating-victim-uncounts-itself"),
        # Counted (z2 holds 2): without it z2 still holds 1 more than z1 has room for.
        pytest.param(False, {}, id="a-running-victim-is-not-enough"),
    ],
)
async def test_spreading_counts_a_removed_pod_its_pre_filter_did_not_count(
    terminating: bool, want: dict[str, tuple[list[str], int]]
) -> None:
    """Upstream's PodTopologySpread RemovePod (``updateWithPod``) takes a pod off its
    domain's count whether or not PreFilter counted it: a terminating victim, never
    counted, still lowers the count in the dry run, and the preemptor fits next to the
    higher-priority pod of the other node (found by the conformance harness)."""
    z1 = {"topology.kubernetes.io/zone": "z1"}
    z2 = {"topology.kubernetes.io/zone": "z2"}
    nodes = [node("n1", "4", "8Gi", **z1), node("n2", "4", "8Gi", **z2)]
    nodes.append(node("n3", "4", "8Gi", **z2))
    victim = pod("db-t", prio=LOW, on="n2", labels={"app": "db"})
    if terminating:
        victim["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
    pods = [
        victim,
        pod("db-x", prio=HIGH, on="n3", labels={"app": "db"}),
        pod("p", prio=MID, labels={"app": "db"}, extra=SPREAD_ZONE),
    ]
    async with running(nodes, pods, filters=DEFAULT_FILTERS) as env:
        assert env.candidates("p", statuses(["n2", "n3"], ["n1"])) == want


async def test_nominated_pods_of_equal_priority_keep_their_room() -> None:
    nodes = [node("n1", "4", "32Gi"), node("n2", "4", "32Gi")]
    pods = [
        pod("low1", prio=LOW, on="n1", req=("3", "1")),
        pod("low2", prio=LOW, on="n2", req=("3", "1")),
        pod("first", prio=HIGH, req=("3", "1")),
        pod("second", prio=HIGH, req=("3", "1")),
    ]
    async with running(nodes, pods) as env:
        env.sched.queue.nominator.nominate(env.pod("first"), "n1")
        # n1 is held for "first": "second" preempts on n2 only.
        assert set(env.candidates("second", statuses(["n1", "n2"]))) == {"n2"}
        # A lower-priority nomination holds nothing against "second".
        env.sched.queue.nominator.nominate(env.pod("first"), "")
        assert set(env.candidates("second", statuses(["n1", "n2"]))) == {"n1", "n2"}


# ---- eligibility and PreEnqueue --------------------------------------------------------------


async def test_waits_for_a_victim_terminating_on_its_nominated_node() -> None:
    nodes = [node("n1", "1", "1Gi")]
    victim = pod("low", prio=LOW, on="n1", req=("1", "1"))
    victim["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    victim["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    preemptor = pod("p", prio=HIGH, req=("1", "1"))
    preemptor["status"]["nominatedNodeName"] = "n1"
    async with running(nodes, [victim, preemptor]) as env:
        nominated, status = env.post_filter("p", statuses(["n1"]))
        assert nominated is None
        assert status is not None and (status.code, status.message) == (
            Code.UNSCHEDULABLE,
            "preemption: not eligible due to a terminating pod on the nominated node.",
        )
        # The nominated node now rejects the pod for good: it may preempt elsewhere.
        nominated, status = env.post_filter("p", statuses(unresolvable=["n1"]))
        assert status is not None and "Preemption is not helpful" in status.message


async def test_pre_enqueue_holds_the_preemptor_until_its_last_victim_is_deleted() -> None:
    nodes = [node("n1", "2", "1Gi")]
    pods = [
        pod("v1", prio=LOW, on="n1", req=("1", "1")),
        pod("v2", prio=LOW, on="n1", req=("1", "1")),
        pod("p", prio=HIGH, req=("2", "1")),
    ]
    gate = asyncio.Event()
    async with running(nodes, pods) as env:
        api = env.cluster
        real_delete = api.delete_pod

        async def slow_delete(*, namespace: str, name: str, uid: str) -> None:
            await gate.wait()
            await real_delete(namespace=namespace, name=name, uid=uid)

        api.delete_pod = slow_delete  # type: ignore[method-assign]
        preemptor = env.pod("p")
        nominated, status = env.post_filter("p", statuses(["n1"]))
        assert nominated == "n1" and status is not None and status.is_success()
        gated = env.plugin.pre_enqueue(preemptor)
        assert gated is not None
        assert (gated.code, gated.message) == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "waiting for the preemption for this pod to be finished",
        )
        gate.set()
        for _ in range(100):
            if env.plugin.pre_enqueue(preemptor) is None:
                break
            await asyncio.sleep(0.01)
        assert env.plugin.pre_enqueue(preemptor) is None
        assert env.cluster.get("pods", "default/v1") is None
        assert env.cluster.get("pods", "default/v2") is None


# ---- preparing the chosen node ---------------------------------------------------------------


async def test_victims_get_disruption_target_then_deleted_and_nominations_cleared() -> None:
    nodes = [node("n1", "2", "1Gi")]
    pods = [
        pod("v1", prio=LOW, on="n1", req=("2", "1")),
        pod("lower-nominated", prio=LOW, req=("1", "1")),
        pod("p", prio=HIGH, req=("2", "1")),
    ]
    async with running(nodes, pods) as env:
        patched: list[tuple[str, Obj]] = []
        real_patch = env.cluster.patch_pod_status

        async def recording_patch(*, namespace: str, name: str, patch: Obj) -> None:
            patched.append((name, patch))
            await real_patch(namespace=namespace, name=name, patch=patch)

        env.cluster.patch_pod_status = recording_patch  # type: ignore[method-assign]
        env.sched.queue.nominator.nominate(env.pod("lower-nominated"), "n1")
        nominated, status = env.post_filter("p", statuses(["n1"]))
        assert nominated == "n1" and status is not None and status.is_success()
        for _ in range(100):
            if env.cluster.get("pods", "default/v1") is None:
                break
            await asyncio.sleep(0.01)
        assert env.cluster.get("pods", "default/v1") is None
        by_name = dict(patched)
        assert by_name["lower-nominated"] == {"status": {"nominatedNodeName": None}}
        cond = by_name["v1"]["status"]["conditions"][0]
        assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }
        await env.sched.recorder.drain()
        preempted = [e for e in env.cluster.events if e["reason"] == "Preempted"]
        assert [(e["regarding"]["name"], e["note"], e["type"]) for e in preempted] == [
            ("v1", "Preempted by pod p on node n1", "Normal")
        ]
        victims = env.sched.metrics.preemption_victims.child(())
        assert victims.count == 1 and victims.sum == 1.0


# ---- the fast path equals the step-by-step algorithm ----------------------------------------


def _random_cluster(rng: random.Random) -> tuple[list[Obj], list[Obj], list[Obj], Obj]:
    """Half the clusters have resources only in play (the core's freed-arithmetic path);
    the others have host ports and required anti-affinity too (its detaching path)."""
    constrained = rng.random() < 0.5
    anti: Obj = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "a"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }
    host_port: list[Obj] = [{"containerPort": 80, "hostPort": 9090}]
    nodes = [
        node(
            f"n{i}", rng.choice(["1", "2", "4"]), rng.choice(["1Gi", "4Gi"]), rng.choice(["3", "8"])
        )
        for i in range(6)
    ]
    pods = []
    for i in range(24):
        p = pod(
            f"e{i}",
            prio=rng.choice([-5, 0, 5, 10]),
            on=f"n{rng.randrange(6)}",
            req=(f"{rng.choice([100, 300, 700, 1000])}m", f"{rng.choice([100, 500, 900])}Mi"),
            labels={"app": rng.choice(["a", "b"])},
            start=epoch(rng.randrange(60)),
        )
        roll = rng.random() if constrained else 1.0
        if roll < 0.1:
            p["spec"].update(anti)
        elif roll < 0.2:
            p["spec"]["containers"][0]["ports"] = host_port
        pods.append(p)
    pdbs = [pdb("a", {"app": "a"}, rng.randrange(3)), pdb("b", {"app": "b"}, rng.randrange(3))]
    preemptor = pod(
        "p",
        prio=7,
        req=(f"{rng.choice([500, 900, 1500])}m", f"{rng.choice([200, 800])}Mi"),
        labels={"app": rng.choice(["a", "b"])},
    )
    roll = rng.random() if constrained else 1.0
    if roll < 0.3:
        preemptor["spec"].update(anti)
    elif roll < 0.5:
        preemptor["spec"]["containers"][0]["ports"] = host_port
    return nodes, pods, pdbs, preemptor


def _accounting(env: Env) -> list[Any]:
    snap = env.sched.cache.snapshot
    names = snap.node_names()
    cols = [
        (n, snap.requested(n, r), snap.allocatable(n, r))
        for n in names
        for r in ("cpu", "memory", "pods")
    ]
    return [snap.num_pods, snap.num_nominated, cols]


def _rust_on_node(env: Env, attempt: Any, node_name: str) -> Any:
    """The Rust dry run on one node, as (candidate, statuses, errors)."""
    run = env.sched.cache.snapshot.preemption_dry_run(
        attempt.compiled, attempt.kernels, [node_name], 0, 1, attempt.pdb_tuples, attempt.now
    )
    cands = run.candidates()
    return (cands[0] if cands else None), run.statuses, run.errors


@pytest.mark.parametrize("seed", range(60))
async def test_rust_dry_run_equals_python_step_by_step(seed: int) -> None:
    """Both ways the core evaluates a node (freed arithmetic when only resources are in
    play, detaching pods otherwise: host ports, anti-affinity) against upstream's
    algorithm run step by step from Python, one Filter call per step."""
    rng = random.Random(seed)
    nodes, pods, pdbs, preemptor = _random_cluster(rng)
    async with running(nodes, [*pods, preemptor], pdbs=pdbs, filters=DEFAULT_FILTERS) as env:
        p = env.pod("p")
        # Some nominations hold room against the preemptor (equal or higher priority).
        for i, prio in enumerate((7, 9, 3)):
            nom = pod(f"nom{i}", prio=prio, req=("500m", "100Mi"))
            env.cluster.create("pods", nom)
        await asyncio.sleep(0.01)
        for i in range(3):
            env.sched.queue.nominator.nominate(env.pod(f"nom{i}"), f"n{rng.randrange(6)}")
        for round_ in range(2):
            attempt = env.plugin.new_attempt(CycleState(), p)
            assert attempt is not None
            before = _accounting(env)
            for n in env.sched.cache.snapshot.node_names():
                cand, statuses_, errors = _rust_on_node(env, attempt, n)
                assert _accounting(env) == before, "the Rust dry run leaves the snapshot as is"
                want, st = env.plugin.select_victims_on_node(attempt, n)
                assert _accounting(env) == before, "the Python dry run restores the snapshot"
                if want is not None:
                    assert cand == want.as_tuple(), (round_, n)
                    continue
                assert st is not None and cand is None, (round_, n, cand)
                if st.code is Code.ERROR:
                    assert errors == [st.message]
                else:
                    unresolvable = st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                    assert statuses_ == [(n, unresolvable, st.plugin or "", list(st.reasons))]
            # The cluster changes between rounds.
            victim = rng.choice(
                [p for p in env.cluster.objects("pods") if p["spec"].get("nodeName")]
            )
            env.cluster.delete("pods", f"default/{victim['metadata']['name']}")
            await asyncio.sleep(0.01)


async def test_snapshot_is_restored_when_filtering_raises() -> None:
    nodes = [node("n1", "1", "1Gi")]
    pods = [pod("low", prio=LOW, on="n1", req=("1", "1")), pod("p", prio=HIGH, req=("1", "1"))]
    async with running(nodes, pods) as env:
        attempt = env.plugin.new_attempt(CycleState(), env.pod("p"))
        assert attempt is not None
        before = _accounting(env)

        class Boom(Exception):
            pass

        def failing_filter(a: Any, node_name: str) -> Status | None:
            raise Boom

        env.plugin._filter = failing_filter  # type: ignore[method-assign,assignment]
        with pytest.raises(Boom):
            env.plugin.select_victims_on_node(attempt, "n1")
        assert _accounting(env) == before


# ---- end to end on the embedded cluster ------------------------------------------------------


async def _wait_for(cond: Any, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


async def test_full_cluster_of_low_priority_pods_makes_room_for_a_high_priority_pod() -> None:
    c = InMemoryCluster()
    # Three full nodes (4 x 900m of 4 cpu); n1's pods have the lowest priority, so n1 is
    # the cheapest node to preempt on. Its earliest-started pod is the most important one
    # and is the one kept.
    for i, prio in enumerate((5, 1, 3)):
        c.create("nodes", make_node(f"n{i}"))
        for j in range(4):
            c.create(
                "pods",
                pod(f"low-{i}-{j}", prio=prio, on=f"n{i}", req=("900m", "500Mi"), start=epoch(j)),
            )
    before = {p["metadata"]["name"] for p in c.objects("pods")}
    nominations: list[tuple[str, Any]] = []
    real_patch = c.patch_pod_status

    async def recording_patch(*, namespace: str, name: str, patch: Obj) -> None:
        if "nominatedNodeName" in patch.get("status", {}):
            nominations.append((name, patch["status"]["nominatedNodeName"]))
        await real_patch(namespace=namespace, name=name, patch=patch)

    c.patch_pod_status = recording_patch  # type: ignore[method-assign]
    sched = Scheduler(
        c, {"default-scheduler": Profile("default-scheduler", DEFAULT_FILTERS, ())}, seed=1
    )
    await sched.start()
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    try:
        c.create("pods", pod("high", prio=100, req=("3", "500Mi")))

        def bound() -> str:
            obj = c.get("pods", "default/high")
            return str(((obj or {}).get("spec") or {}).get("nodeName") or "")

        await _wait_for(lambda: bound() != "")
        assert bound() == "n1"
        assert nominations == [("high", "n1")]
        left = {p["metadata"]["name"] for p in c.objects("pods")} - {"high"}
        assert before - left == {"low-1-1", "low-1-2", "low-1-3"}
        failed = [e for e in c.events if e["reason"] == "FailedScheduling"]
        assert [e["note"] for e in failed] == ["0/3 nodes are available: 3 Insufficient cpu."]
        await sched.recorder.drain()
        preempted = sorted(e["regarding"]["name"] for e in c.events if e["reason"] == "Preempted")
        assert preempted == ["low-1-1", "low-1-2", "low-1-3"]
        assert sched.metrics.preemption_attempts.get() == 1
        assert sched.metrics.preemption_victims.child(()).sum == 3.0
        await _wait_for(lambda: sched.cache.num_assumed() == 0)
    finally:
        await sched.shutdown()
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)


async def test_a_pod_that_cannot_preempt_reports_why() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0"))
    c.create("pods", pod("same", prio=10, on="n0", req=("4", "1Gi")))
    sched = Scheduler(
        c, {"default-scheduler": Profile("default-scheduler", DEFAULT_FILTERS, ())}, seed=1
    )
    await sched.start()
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    try:
        c.create("pods", pod("p", prio=10, req=("1", "1Gi")))
        await _wait_for(lambda: c.event_counts.get("FailedScheduling", 0) >= 1)
        note = next(e["note"] for e in c.events if e["reason"] == "FailedScheduling")
        assert note == (
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming "
            "pod."
        )
        assert c.get("pods", "default/same") is not None
    finally:
        await sched.shutdown()
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)


async def test_a_pods_own_nomination_does_not_hold_room_against_it() -> None:
    nodes = [node("n1", "4", "32Gi")]
    pods = [
        pod("low", prio=LOW, on="n1", req=("3", "1")),
        pod("a", prio=HIGH, req=("3", "1")),
        pod("b", prio=HIGH, req=("3", "1")),
    ]
    async with running(nodes, pods) as env:
        env.sched.queue.nominator.nominate(env.pod("a"), "n1")
        for _ in range(2):
            # "a"'s nomination holds n1 against "b", not against "a" itself.
            assert env.candidates("b", statuses(["n1"])) == {}
            assert env.candidates("a", statuses(["n1"])) == {"n1": (["low"], 0)}
        env.sched.queue.nominator.nominate(env.pod("a"), "")
        assert env.candidates("b", statuses(["n1"])) == {"n1": (["low"], 0)}


async def test_a_nominated_pod_that_can_no_longer_preempt_loses_its_nomination() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0"))
    c.create("pods", pod("higher", prio=100, on="n0", req=("4", "1Gi")))
    nominated = pod("p", prio=10, req=("1", "1Gi"))
    nominated["status"]["nominatedNodeName"] = "n0"
    c.create("pods", nominated)
    sched = Scheduler(
        c, {"default-scheduler": Profile("default-scheduler", DEFAULT_FILTERS, ())}, seed=1
    )
    await sched.start()
    assert sched.queue.nominator.node_of("p") == "n0"
    loop_task = asyncio.get_running_loop().create_task(sched.run())
    try:
        await _wait_for(lambda: c.event_counts.get("FailedScheduling", 0) >= 1)

        def nomination() -> object:
            status = (c.get("pods", "default/p") or {}).get("status") or {}
            return status.get("nominatedNodeName", "n0")

        await _wait_for(lambda: nomination() is None)
        assert sched.queue.nominator.node_of("p") is None
    finally:
        await sched.shutdown()
        loop_task.cancel()
        await asyncio.gather(loop_task, return_exceptions=True)


def test_post_filter_keeps_the_result_of_a_rejecting_plugin() -> None:
    from ksched.framework.interface import PostFilterResult
    from ksched.framework.runtime import Framework

    class Clears:
        name = "Clears"

        def post_filter(
            self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
        ) -> tuple[PostFilterResult | None, Status | None]:
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, "nothing to preempt")

    class Silent:
        name = "Silent"

        def post_filter(
            self, state: CycleState, pod: Pod, statuses: Mapping[str, Status]
        ) -> tuple[PostFilterResult | None, Status | None]:
            return None, Status(Code.UNSCHEDULABLE, "no idea")

    fw = Framework(Profile("s", ("NodeResourcesFit",), ()), plugins=[Clears(), Silent()])
    obj = pod("p")
    res, status = fw.run_post_filter(CycleState(), Pod.from_dict(obj), NodeStatuses())
    assert res is not None and res.nominated_node_name == ""
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE,
        "nothing to preempt, no idea",
        "Clears",
    )
