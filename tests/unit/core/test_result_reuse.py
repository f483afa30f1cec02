"""Per-signature reuse of per-node results (``rust/reuse.rs``) changes no result.

Every case runs the same operations on two snapshots with the same seed, one reusing
results across attempts (the default) and one not (``set_result_reuse(False)``), and
compares every attempt in full: chosen node, nodes evaluated and feasible, every
rejected node's status and reasons, the scored nodes' totals (``explain=True``) and the
plugin evaluation counts. Each case changes the state a kept result depends on between
two attempts of pods alike (assume, forget, node update, nomination, slot reuse, a
second profile), so a kept result that outlived its inputs shows up as a difference;
the cases also assert the expected placement outright, so they fail even if both
snapshots were wrong the same way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ksched._core import CompiledPod, Profile, ScheduleResult, Snapshot
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.profile import default_profile
from ksched.sim.workloads import make_pod
from tests.helpers import parsed_node

GI = 1024**3
ZONE = "topology.kubernetes.io/zone"


def _pod(name: str, **kwargs: Any) -> CompiledPod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = f"uid-{name}"
    return compile_pod(Pod.from_dict(obj))


def _node(snap: Snapshot, name: str, **kwargs: Any) -> None:
    n = parsed_node(name, **kwargs)
    taints = [(t.key, t.value, t.effect) for t in n.taints]
    snap.upsert_node(n.name, n.allocatable, n.labels, taints, n.unschedulable)


def _view(r: ScheduleResult) -> tuple[Any, ...]:
    return (
        r.node,
        r.evaluated_nodes,
        r.feasible_nodes,
        r.num_all_nodes,
        sorted(r.statuses),
        r.scores,
        sorted(r.plugin_evaluations),
        r.scored_nodes,
    )


class Pair:
    """The same snapshot twice: with reuse (``kept``) and without (``fresh``)."""

    def __init__(self, seed: int = 3) -> None:
        self.kept, self.fresh = Snapshot(seed), Snapshot(seed)
        self.fresh.set_result_reuse(False)

    def do(self, f: Callable[[Snapshot], object]) -> None:
        f(self.kept)
        f(self.fresh)

    def schedule(self, pod: CompiledPod, profile: Profile) -> ScheduleResult:
        got = self.kept.schedule(pod, profile, explain=True)
        want = self.fresh.schedule(pod, profile, explain=True)
        assert _view(got) == _view(want)
        return got

    def place(self, pod: CompiledPod, profile: Profile) -> str | None:
        r = self.schedule(pod, profile)
        if r.node is not None:
            self.do(lambda s: s.assume(pod, r.node))  # type: ignore[arg-type]
        return r.node


PROFILE = default_profile().kernels
MOST = default_profile(
    plugin_args={
        "NodeResourcesFit": {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        }
    }
).kernels
TOLERATE = {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}
IN_ZONE_A = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
}
PREFER_ZONE_B = {
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 7,
                    "preference": {
                        "matchExpressions": [{"key": ZONE, "operator": "In", "values": ["b"]}]
                    },
                }
            ]
        }
    }
}
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}},
        }
    ]
}
HOST_PORT = {
    "containers": [
        {
            "name": "c",
            "image": "registry.k8s.io/pause:3.10",
            "ports": [{"containerPort": 80, "hostPort": 8080}],
            "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
        }
    ]
}


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Pair], None]


def _assume_fills_the_node(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", cpu="1"))
    assert p.place(_pod("a", cpu="600m"), PROFILE) == "n1"
    assert p.place(_pod("b", cpu="600m"), PROFILE) is None, "n1 is full after the assume"


def _forget_frees_the_node(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", cpu="1"))
    assert p.place(_pod("a", cpu="600m"), PROFILE) == "n1"
    assert p.schedule(_pod("b", cpu="600m"), PROFILE).node is None
    p.do(lambda s: s.remove_pod("uid-a"))
    assert p.schedule(_pod("c", cpu="600m"), PROFILE).node == "n1"


def _taint_update_rejects(p: Pair) -> None:
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    # A node tainted from the start: TaintToleration's Filter is active throughout.
    p.do(lambda s: _node(s, "n0", taints=taint))
    p.do(lambda s: _node(s, "n1"))
    p.do(lambda s: _node(s, "n2"))
    assert p.schedule(_pod("a"), PROFILE).node is not None
    p.do(lambda s: _node(s, "n1", taints=taint))
    p.do(lambda s: _node(s, "n2", taints=taint))
    r = p.schedule(_pod("b"), PROFILE)
    assert r.node is None
    assert {reasons[0] for _, _, _, reasons in r.statuses} == {"node(s) had untolerated taint(s)"}
    assert p.schedule(_pod("c", extra_spec=TOLERATE), PROFILE).node is not None


def _prefer_taint_changes_the_score(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1"))
    p.do(lambda s: _node(s, "n2"))
    p.schedule(_pod("a"), PROFILE)
    p.do(lambda s: _node(s, "n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}]))
    assert p.schedule(_pod("b"), PROFILE).node == "n2"
    p.do(lambda s: _node(s, "n1"))
    p.do(lambda s: _node(s, "n2", taints=[{"key": "k", "effect": "PreferNoSchedule"}]))
    assert p.schedule(_pod("c"), PROFILE).node == "n1"


def _label_update_changes_affinity(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", labels={ZONE: "a"}))
    p.do(lambda s: _node(s, "n2", labels={ZONE: "b"}))
    assert p.schedule(_pod("a", extra_spec=IN_ZONE_A), PROFILE).node == "n1"
    assert p.schedule(_pod("b", extra_spec=PREFER_ZONE_B), PROFILE).node == "n2"
    p.do(lambda s: _node(s, "n1", labels={ZONE: "b"}))
    p.do(lambda s: _node(s, "n2", labels={ZONE: "a"}))
    assert p.schedule(_pod("c", extra_spec=IN_ZONE_A), PROFILE).node == "n2"
    assert p.schedule(_pod("d", extra_spec=PREFER_ZONE_B), PROFILE).node == "n1"


def _allocatable_update(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", cpu="500m"))
    assert p.schedule(_pod("a", cpu="1"), PROFILE).node is None
    p.do(lambda s: _node(s, "n1", cpu="2"))
    assert p.schedule(_pod("b", cpu="1"), PROFILE).node == "n1"


def _unschedulable_update(p: Pair) -> None:
    # A node cordoned from the start: NodeUnschedulable's Filter is active throughout.
    p.do(lambda s: _node(s, "n0", unschedulable=True))
    p.do(lambda s: _node(s, "n1"))
    assert p.schedule(_pod("a"), PROFILE).node == "n1"
    p.do(lambda s: _node(s, "n1", unschedulable=True))
    assert p.schedule(_pod("b"), PROFILE).node is None


def _nominated_pod_takes_the_room(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", cpu="1"))
    assert p.schedule(_pod("a", cpu="600m"), PROFILE).node == "n1"
    big = _pod("big", cpu="600m", priority=1000)
    p.do(lambda s: s.set_nominated(big, "n1"))
    assert p.schedule(_pod("b", cpu="600m"), PROFILE).node is None
    p.do(lambda s: s.clear_nominated("uid-big"))
    assert p.schedule(_pod("c", cpu="600m"), PROFILE).node == "n1"


def _spreading_sees_other_nodes_change(p: Pair) -> None:
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]:
        p.do(lambda s, name=name, zone=zone: _node(s, name, labels={ZONE: zone}))
    first = p.place(_pod("s1", labels={"app": "spread"}, extra_spec=SPREAD), PROFILE)
    assert first is not None
    # The other node of the first pod's zone did not change, yet spreading now rejects
    # it: only the leading Fit-like verdicts of a node are reused, never the spreading.
    second = p.place(_pod("s2", labels={"app": "spread"}, extra_spec=SPREAD), PROFILE)
    assert second is not None and second[0] != first[0]
    r = p.schedule(_pod("s3", labels={"app": "spread"}, extra_spec=SPREAD), PROFILE)
    assert r.node is not None


def _own_nomination_is_not_a_twins(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1", cpu="1"))
    big = _pod("big", cpu="600m", priority=1000)
    p.do(lambda s: s.set_nominated(big, "n1"))
    # The pod's own nomination never counts against it; for a pod just like it, it does.
    assert p.schedule(big, PROFILE).node == "n1"
    assert p.schedule(_pod("twin", cpu="600m", priority=1000), PROFILE).node is None
    assert p.schedule(big, PROFILE).node == "n1"


def _host_port_taken(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1"))
    p.do(lambda s: _node(s, "n2"))
    first = p.place(_pod("a", extra_spec=HOST_PORT), PROFILE)
    second = p.place(_pod("b", extra_spec=HOST_PORT), PROFILE)
    assert {first, second} == {"n1", "n2"}
    assert p.schedule(_pod("c", extra_spec=HOST_PORT), PROFILE).node is None
    p.do(lambda s: s.remove_pod("uid-a"))
    assert p.schedule(_pod("d", extra_spec=HOST_PORT), PROFILE).node == first


def _removed_node_slot_reused(p: Pair) -> None:
    p.do(lambda s: _node(s, "small", cpu="500m"))
    assert p.schedule(_pod("a", cpu="1"), PROFILE).node is None
    p.do(lambda s: s.remove_node("small"))
    p.do(lambda s: _node(s, "large", cpu="4"))  # takes the freed slot
    assert p.schedule(_pod("b", cpu="1"), PROFILE).node == "large"
    p.do(lambda s: s.remove_node("large"))
    p.do(lambda s: _node(s, "small2", cpu="500m"))
    assert p.schedule(_pod("c", cpu="1"), PROFILE).node is None


def _profiles_share_a_signature(p: Pair) -> None:
    p.do(lambda s: _node(s, "n1"))
    p.do(lambda s: _node(s, "n2"))
    p.place(_pod("x", cpu="2"), PROFILE)
    # Least allocated prefers the empty node, most allocated the used one.
    least = p.schedule(_pod("a"), PROFILE).node
    most = p.schedule(_pod("b"), MOST).node
    assert least is not None and most is not None and least != most
    assert p.schedule(_pod("c"), PROFILE).node == least


def _batch_undoes_its_placements(p: Pair) -> None:
    for i in range(4):
        p.do(lambda s, i=i: _node(s, f"n{i}", cpu="1"))
    pods = [_pod(f"p{i}", cpu="600m") for i in range(6)]
    got = p.kept.schedule_batch(pods, PROFILE)
    want = p.fresh.schedule_batch(pods, PROFILE)
    assert [_view(r) for r in got] == [_view(r) for r in want]
    assert sum(r.node is not None for r in got) == 4
    # The batch's tentative placements are gone: the nodes are empty again.
    assert p.schedule(_pod("after", cpu="600m"), PROFILE).node is not None


CASES = [
    Case("an assumed pod fills its node", _assume_fills_the_node),
    Case("a forgotten pod frees its node", _forget_frees_the_node),
    Case("a NoSchedule taint added to the nodes", _taint_update_rejects),
    Case("a PreferNoSchedule taint moves the score", _prefer_taint_changes_the_score),
    Case("node labels change under node affinity", _label_update_changes_affinity),
    Case("a node's allocatable grows", _allocatable_update),
    Case("a node is cordoned", _unschedulable_update),
    Case("a nominated pod takes the room and gives it back", _nominated_pod_takes_the_room),
    Case("a pod's own nomination is not its twin's", _own_nomination_is_not_a_twins),
    Case("a host port taken and freed", _host_port_taken),
    Case("spreading sees other nodes change", _spreading_sees_other_nodes_change),
    Case("a removed node's slot reused by another node", _removed_node_slot_reused),
    Case("two profiles score the same pods", _profiles_share_a_signature),
    Case("a batch places and undoes", _batch_undoes_its_placements),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reuse_changes_no_result(case: Case) -> None:
    case.run(Pair())


def test_results_are_kept_per_signature() -> None:
    snap = Snapshot(1)
    _node(snap, "n1")
    assert snap.result_reuse_keys == 0
    snap.schedule(_pod("a"), PROFILE)
    snap.schedule(_pod("b"), PROFILE)
    assert snap.result_reuse_keys == 1, "pods alike share their results"
    snap.schedule(_pod("c", cpu="200m"), PROFILE)
    snap.schedule(_pod("d"), MOST)
    assert snap.result_reuse_keys == 3
    snap.schedule(_pod("e", node_name="n1"), PROFILE)
    assert snap.result_reuse_keys == 3, "a pod naming its node is never keyed"
    snap.set_result_reuse(False)
    snap.schedule(_pod("f"), PROFILE)
    assert snap.result_reuse_keys == 0


def _random_ops(seed: int) -> None:
    rng = random.Random(seed)
    p = Pair(seed)
    zones = ["a", "b", "c"]
    taints: list[list[dict[str, str]]] = [
        [],
        [],
        [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
        [{"key": "k", "effect": "PreferNoSchedule"}],
    ]

    def add_node(name: str) -> None:
        kw = {
            "cpu": rng.choice(["1", "2", "4"]),
            "labels": {ZONE: rng.choice(zones)},
            "taints": rng.choice(taints),
            "unschedulable": rng.random() < 0.05,
        }
        p.do(lambda s: _node(s, name, **kw))

    nodes = [f"n{i}" for i in range(40)]
    for n in nodes:
        add_node(n)
    shapes: list[dict[str, Any]] = [
        {"cpu": "300m"},
        {"cpu": "700m"},
        {"cpu": "300m", "extra_spec": TOLERATE},
        {"cpu": "300m", "extra_spec": IN_ZONE_A},
        {"cpu": "300m", "extra_spec": PREFER_ZONE_B},
        {"cpu": "300m", "priority": 100},
        {"cpu": "300m", "labels": {"app": "spread"}, "extra_spec": SPREAD},
    ]
    placed: list[str] = []
    nominated: list[str] = []
    for step in range(400):
        op = rng.random()
        if op < 0.55:
            kw = rng.choice(shapes)
            pod = _pod(f"p{step}", **kw)
            node = p.place(pod, rng.choice([PROFILE, PROFILE, MOST]))
            if node is not None:
                placed.append(f"uid-p{step}")
        elif op < 0.7 and placed:
            uid = placed.pop(rng.randrange(len(placed)))
            p.do(lambda s, uid=uid: s.remove_pod(uid))
        elif op < 0.8:
            add_node(rng.choice(nodes))
        elif op < 0.85:
            name = rng.choice(nodes)
            p.do(lambda s, name=name: s.remove_node(name))
            if rng.random() < 0.5:
                fresh = f"m{step}"
                nodes.append(fresh)
                add_node(fresh)
        elif op < 0.92:
            pod = _pod(f"nom{step}", cpu="500m", priority=rng.choice([0, 1000]))
            target = rng.choice(nodes)
            p.do(lambda s, pod=pod, target=target: s.set_nominated(pod, target))
            nominated.append(f"uid-nom{step}")
        elif nominated:
            uid = nominated.pop(rng.randrange(len(nominated)))
            p.do(lambda s, uid=uid: s.clear_nominated(uid))


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_give_the_same_results(seed: int) -> None:
    _random_ops(seed)
