"""The kept per-domain counts (``rust/snapshot/counts.rs`` domain views, the anti-affinity
groups' domains in ``rust/snapshot/anti.rs``) give the PreFilter state a walk over every
node gives, for PodTopologySpread and InterPodAffinity.

Every case runs the same operations on two snapshots with the same seed, one keeping the
per-domain counts up to date between attempts (the default) and one summing them over
the nodes in each attempt (``set_domain_views(False)``), and compares after every step
the PreFilter state itself (``spread_domains``: each constraint's minimum, second
smallest count and every domain's count) and every attempt in full (chosen node, nodes
evaluated and feasible, statuses and reasons, scores, plugin evaluations), which shows
InterPodAffinity's counts through its three rejection reasons. Each case
changes an input of the counts between two attempts of pods alike: a pod counted or
taken off, a terminating pod, a node added, relabeled (gaining or losing a key) or
removed, a slot reused, a namespace change, nominated pods, preemption's dry run;
the cases also assert the expected state outright, so they fail even if both snapshots
were wrong the same way.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ksched._core import CompiledPod, ScheduleResult, Snapshot
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.profile import default_profile
from ksched.sim.workloads import make_pod
from tests.helpers import parsed_node

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
PROFILE = default_profile().kernels


def _pod(name: str, *, deleting: bool = False, **kwargs: Any) -> CompiledPod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = f"uid-{name}"
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return compile_pod(Pod.from_dict(obj))


def _node(snap: Snapshot, name: str, labels: dict[str, str], **kwargs: Any) -> None:
    n = parsed_node(name, labels={HOST: name, **labels}, **kwargs)
    taints = [(t.key, t.value, t.effect) for t in n.taints]
    snap.upsert_node(n.name, n.allocatable, n.labels, taints, n.unschedulable)


def _constraint(key: str, skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **extra,
    }


def _spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"topologySpreadConstraints": list(constraints)}


ZONE_AND_HOST = _spread(_constraint(ZONE, 5), _constraint(HOST, 1))
ZONE_ONLY = _spread(_constraint(ZONE, 1))
RACK_AND_ZONE = _spread(_constraint(RACK, 1), _constraint(ZONE, 2, minDomains=3))
TAINTS_HONOR = _spread(_constraint(ZONE, 1, nodeTaintsPolicy="Honor"))
AFFINITY_IGNORE = _spread(_constraint(ZONE, 1, nodeAffinityPolicy="Ignore"))
MATCH_LABEL_KEYS = _spread(_constraint(ZONE, 1, matchLabelKeys=["version"]))
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


def _term(key: str, app: str = "web", **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def _required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {"affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


ANTI_HOST = _required("podAntiAffinity", _term(HOST))
ANTI_ZONE = _required("podAntiAffinity", _term(ZONE))
ANTI_ZONE_TWICE = _required("podAntiAffinity", _term(ZONE), _term(ZONE, "db"))
AFFINITY_ZONE = _required("podAffinity", _term(ZONE))
AFFINITY_ZONE_AND_RACK = _required("podAffinity", _term(ZONE), _term(RACK))
AFFINITY_ZONE_TWICE = _required(
    "podAffinity", _term(ZONE), _term(ZONE, "web", namespaces=["other"])
)
ANTI_TEAM = _required(
    "podAntiAffinity", _term(ZONE, namespaceSelector={"matchLabels": {"team": "x"}})
)
IPA_SPECS = [
    ANTI_HOST,
    ANTI_ZONE,
    ANTI_ZONE_TWICE,
    AFFINITY_ZONE,
    AFFINITY_ZONE_AND_RACK,
    AFFINITY_ZONE_TWICE,
    ANTI_TEAM,
]
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
SPECS = [ZONE_AND_HOST, ZONE_ONLY, RACK_AND_ZONE, TAINTS_HONOR, AFFINITY_IGNORE, MATCH_LABEL_KEYS]


def _web(name: str, spec: dict[str, Any] = ZONE_AND_HOST, **kwargs: Any) -> CompiledPod:
    labels = {"app": "web", **kwargs.pop("labels", {})}
    return _pod(name, labels=labels, extra_spec=spec, **kwargs)


def _attempt(r: ScheduleResult) -> tuple[Any, ...]:
    return (
        r.node,
        r.evaluated_nodes,
        r.feasible_nodes,
        sorted(r.statuses),
        r.scores,
        sorted(r.plugin_evaluations),
    )


class Pair:
    """The same snapshot twice: with domain views (``kept``) and without (``fresh``)."""

    def __init__(self, seed: int = 3) -> None:
        self.kept, self.fresh = Snapshot(seed), Snapshot(seed)
        self.fresh.set_domain_views(False)

    def do(self, f: Callable[[Snapshot], object]) -> None:
        f(self.kept)
        f(self.fresh)

    def domains(self, pod: CompiledPod) -> list[tuple[int, int, list[tuple[str, int]]]]:
        got = self.kept.spread_domains(pod, PROFILE)
        want = self.fresh.spread_domains(pod, PROFILE)
        assert got == want
        return got

    def schedule(self, pod: CompiledPod) -> ScheduleResult:
        self.domains(pod)
        got = self.kept.schedule(pod, PROFILE, explain=True)
        want = self.fresh.schedule(pod, PROFILE, explain=True)
        assert _attempt(got) == _attempt(want)
        return got

    def place(self, pod: CompiledPod) -> str | None:
        r = self.schedule(pod)
        if r.node is not None:
            self.do(lambda s: s.assume(pod, r.node))  # type: ignore[arg-type]
        return r.node


def _zones(p: Pair, layout: dict[str, str]) -> None:
    for name, zone in layout.items():
        p.do(lambda s, name=name, zone=zone: _node(s, name, {ZONE: zone}))


@dataclass(frozen=True)
class Case:
    name: str
    run: Callable[[Pair], None]


def _pods_counted_and_taken_off(p: Pair) -> None:
    _zones(p, {"a1": "a", "a2": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    assert p.domains(probe) == [(0, 0, [("a", 0), ("b", 0)])]
    p.do(lambda s: s.add_pod(_web("e1", node_name="a1"), "a1"))
    p.do(lambda s: s.add_pod(_web("e2", node_name="a2"), "a2"))
    assert p.domains(probe) == [(0, 2, [("a", 2), ("b", 0)])]
    assert p.place(_web("w1", ZONE_ONLY)) == "b1"
    assert p.domains(probe) == [(1, 2, [("a", 2), ("b", 1)])]
    p.do(lambda s: s.remove_pod("uid-e1"))
    assert p.domains(probe) == [(1, 1, [("a", 1), ("b", 1)])]


def _other_namespace_and_labels_do_not_count(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.add_pod(_web("x", node_name="a1", namespace="other"), "a1"))
    p.do(lambda s: s.add_pod(_pod("y", node_name="a1", labels={"app": "db"}), "a1"))
    assert p.domains(probe) == [(0, 0, [("a", 0), ("b", 0)])]


def _terminating_pod_is_not_counted(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.add_pod(_web("t", node_name="a1", deleting=True), "a1"))
    assert p.domains(probe) == [(0, 0, [("a", 0), ("b", 0)])]
    # The same pod no longer terminating (an update: removed and added again).
    p.do(lambda s: s.add_pod(_web("t", node_name="a1"), "a1"))
    assert p.domains(probe) == [(0, 1, [("a", 1), ("b", 0)])]


def _node_relabeled_moves_its_pods(p: Pair) -> None:
    _zones(p, {"a1": "a", "a2": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.add_pod(_web("e1", node_name="a1"), "a1"))
    p.do(lambda s: s.add_pod(_web("e2", node_name="a1"), "a1"))
    assert p.domains(probe) == [(0, 2, [("a", 2), ("b", 0)])]
    p.do(lambda s: _node(s, "a1", {ZONE: "b"}))
    assert p.domains(probe) == [(0, 2, [("a", 0), ("b", 2)])]
    p.do(lambda s: _node(s, "a1", {ZONE: "c"}))
    assert p.domains(probe) == [(0, 0, [("a", 0), ("b", 0), ("c", 2)])]
    # Losing the key takes the node (and its pods) out of every domain.
    p.do(lambda s: _node(s, "a1", {}))
    assert p.domains(probe) == [(0, 0, [("a", 0), ("b", 0)])]
    p.do(lambda s: _node(s, "a1", {ZONE: "a"}))
    assert p.domains(probe) == [(0, 2, [("a", 2), ("b", 0)])]


def _a_node_needs_every_constraints_key(p: Pair) -> None:
    p.do(lambda s: _node(s, "r1", {ZONE: "a", RACK: "r1"}))
    p.do(lambda s: _node(s, "r2", {ZONE: "b", RACK: "r2"}))
    p.do(lambda s: _node(s, "norack", {ZONE: "c"}))
    p.do(lambda s: s.add_pod(_web("e1", node_name="norack"), "norack"))
    probe = _web("probe", RACK_AND_ZONE)
    # Zone c's only node has no rack: no zone c domain; two zones < minDomains 3.
    assert p.domains(probe) == [
        (0, 0, [("r1", 0), ("r2", 0)]),
        (0, 0, [("a", 0), ("b", 0)]),
    ]
    p.do(lambda s: _node(s, "norack", {ZONE: "c", RACK: "r3"}))
    assert p.domains(probe) == [
        (0, 0, [("r1", 0), ("r2", 0), ("r3", 1)]),
        (0, 0, [("a", 0), ("b", 0), ("c", 1)]),
    ]
    # The zone-only views of other pods are apart from these.
    assert p.domains(_web("z", ZONE_ONLY)) == [(0, 0, [("a", 0), ("b", 0), ("c", 1)])]


def _node_removed_and_slot_reused(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.add_pod(_web("e1", node_name="b1"), "b1"))
    p.do(lambda s: s.remove_node("b1"))  # a ghost keeps the pod, no domain
    assert p.domains(probe) == [(0, 2147483647, [("a", 0)])]
    p.do(lambda s: _node(s, "b1", {ZONE: "b"}))  # the node comes back with its pod
    assert p.domains(probe) == [(0, 1, [("a", 0), ("b", 1)])]
    p.do(lambda s: s.remove_pod("uid-e1"))
    p.do(lambda s: s.remove_node("b1"))  # slot freed
    p.do(lambda s: _node(s, "c1", {ZONE: "c"}))  # takes the freed slot
    assert p.domains(probe) == [(0, 0, [("a", 0), ("c", 0)])]


def _pod_before_its_node(p: Pair) -> None:
    _zones(p, {"a1": "a"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.add_pod(_web("early", node_name="late"), "late"))
    assert p.domains(probe) == [(0, 2147483647, [("a", 0)])]
    p.do(lambda s: _node(s, "late", {ZONE: "b"}))
    assert p.domains(probe) == [(0, 1, [("a", 0), ("b", 1)])]


def _namespace_change_clears(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    probe = _web("probe", ZONE_ONLY)
    p.domains(probe)
    p.do(lambda s: s.upsert_namespace("default", {"team": "x"}))
    p.do(lambda s: s.add_pod(_web("e1", node_name="a1"), "a1"))
    assert p.domains(probe) == [(0, 1, [("a", 1), ("b", 0)])]
    p.do(lambda s: s.remove_namespace("default"))
    p.do(lambda s: s.add_pod(_web("e2", node_name="b1"), "b1"))
    assert p.domains(probe) == [(1, 1, [("a", 1), ("b", 1)])]


def _inclusion_policies_walk_the_nodes(p: Pair) -> None:
    p.do(lambda s: _node(s, "a1", {ZONE: "a"}))
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    p.do(lambda s: _node(s, "b1", {ZONE: "b"}, taints=taint))
    p.do(lambda s: s.add_pod(_web("e1", node_name="b1"), "b1"))
    # Taints honored: zone b's only node is tainted, so zone b is no domain.
    assert p.domains(_web("t", TAINTS_HONOR)) == [(0, 2147483647, [("a", 0)])]
    # Node affinity honored (the default) with a required zone a: only zone a counts.
    assert p.domains(_web("aff", {**ZONE_ONLY, **IN_ZONE_A})) == [(0, 2147483647, [("a", 0)])]
    assert p.domains(_web("ign", AFFINITY_IGNORE)) == [(0, 1, [("a", 0), ("b", 1)])]


def _match_label_keys_narrow_the_selector(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    v1 = _web("v1", MATCH_LABEL_KEYS, labels={"version": "1"})
    v2 = _web("v2", MATCH_LABEL_KEYS, labels={"version": "2"})
    p.domains(v1)
    p.domains(v2)
    p.do(lambda s: s.add_pod(_web("e1", node_name="a1", labels={"version": "1"}), "a1"))
    assert p.domains(v1) == [(0, 1, [("a", 1), ("b", 0)])]
    assert p.domains(v2) == [(0, 0, [("a", 0), ("b", 0)])]


def _nominated_pods_and_layers(p: Pair) -> None:
    _zones(p, {f"n{i}": "ab"[i % 2] for i in range(6)})
    for i in range(6):
        p.do(lambda s, i=i: s.add_pod(_web(f"e{i}", node_name=f"n{i}"), f"n{i}"))
    nominated = _web("nom", priority=100)
    p.do(lambda s: s.set_nominated(nominated, "n0"))
    placed = [p.place(_web(f"w{i}")) for i in range(8)]
    # The pod nominated to n0 counts there in the first pass: n0 is over the hostname
    # skew until it is the only node at the minimum, and again in the next layer.
    assert "n0" not in placed[:5] and placed[5] == "n0"
    assert None not in placed and "n0" not in placed[6:]
    p.do(lambda s: s.clear_nominated("uid-nom"))
    hosts = [(f"n{i}", 1 + placed.count(f"n{i}")) for i in range(6)]
    assert p.domains(_web("probe"))[1] == (2, 2, hosts)


def _preemption_dry_run_keeps_its_state(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    low = _web("low", ZONE_ONLY, node_name="a1", cpu="3500m", priority=0)
    p.do(lambda s: _node(s, "a1", {ZONE: "a"}, cpu="4"))
    p.do(lambda s: _node(s, "b1", {ZONE: "b"}, cpu="1"))
    p.do(lambda s: s.add_pod(low, "a1"))
    high = _web("high", ZONE_ONLY, cpu="2", priority=100)
    r = p.schedule(high)
    assert r.node is None
    got = p.kept.preemption_dry_run(high, PROFILE, r, 0, 2, [], 0.0)
    want = p.fresh.preemption_dry_run(high, PROFILE, r, 0, 2, [], 0.0)
    assert got.candidates() == want.candidates() == [("a1", ["uid-low"], 0)]
    assert sorted(got.plugin_evaluations) == sorted(want.plugin_evaluations)
    # The dry run put the victim back: the counts are as before.
    assert p.domains(high) == [(0, 1, [("a", 1), ("b", 0)])]


def _batch_places_and_undoes(p: Pair) -> None:
    _zones(p, {f"n{i}": "abc"[i % 3] for i in range(6)})
    pods = [_web(f"b{i}") for i in range(8)]
    p.domains(pods[0])
    got = p.kept.schedule_batch(pods, PROFILE)
    want = p.fresh.schedule_batch(pods, PROFILE)
    assert [_attempt(r) for r in got] == [_attempt(r) for r in want]
    # The hostname skew of 1 fills a layer before the next: one pod per node first.
    assert sorted(str(r.node) for r in got[:6]) == [f"n{i}" for i in range(6)]
    assert all(r.node is not None for r in got[6:])
    assert p.domains(pods[0])[1][2] == [(f"n{i}", 0) for i in range(6)]


def _rejected(r: ScheduleResult) -> dict[str, str]:
    return {node: reasons[0] for node, _, _, reasons in r.statuses}


def _existing_anti_follows_pods_and_labels(p: Pair) -> None:
    _zones(p, {"a1": "a", "a2": "a"})
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    p.do(lambda s: _node(s, "b1", {ZONE: "b"}, taints=taint))  # rejected before IPA
    p.schedule(_web("warm"))  # the groups' domains exist before the changes
    guard = _pod("guard", labels={"app": "db"}, node_name="a1", extra_spec=ANTI_ZONE)
    p.do(lambda s: s.add_pod(guard, "a1"))
    p.schedule(_web("warm2"))
    r = p.schedule(_web("w1", {}))
    assert r.node is None and _rejected(r) == {
        "a1": EXISTING_ANTI,
        "a2": EXISTING_ANTI,
        "b1": "node(s) had untolerated taint(s)",
    }
    p.do(lambda s: _node(s, "a1", {ZONE: "b"}))  # the guard's node moves to zone b
    r = p.schedule(_web("w2", {}))
    assert r.node == "a2" and _rejected(r) == {}
    r = p.schedule(_web("w3", {"nodeName": "a1"}))
    assert _rejected(r).get("a1") == EXISTING_ANTI
    p.do(lambda s: _node(s, "a1", {}))  # and loses the key
    r = p.schedule(_web("w4", {"nodeName": "a1"}))
    assert r.node == "a1"
    p.do(lambda s: _node(s, "a1", {ZONE: "a"}))
    r = p.schedule(_web("w5", {}))
    assert r.node is None
    p.do(lambda s: s.remove_pod("uid-guard"))
    r = p.schedule(_web("w6", {}))
    assert r.node in ("a1", "a2")


def _incoming_terms_follow_pods_and_labels(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    anti = _web("anti", ANTI_ZONE)
    aff = _web("aff", AFFINITY_ZONE, labels={"app": "other"})
    p.schedule(anti)
    p.schedule(aff)
    p.do(lambda s: s.add_pod(_web("e1", {}, node_name="a1"), "a1"))
    assert p.schedule(anti).node == "b1"
    assert p.schedule(aff).node == "a1"
    p.do(lambda s: _node(s, "a1", {ZONE: "b"}))
    r = p.schedule(anti)
    assert r.node is None and set(_rejected(r).values()) == {ANTI}
    r = p.schedule(aff)
    assert r.node is not None
    p.do(lambda s: s.remove_pod("uid-e1"))
    r = p.schedule(aff)
    assert r.node is None and set(_rejected(r).values()) == {AFFINITY}


def _namespace_selector_terms(p: Pair) -> None:
    _zones(p, {"a1": "a", "b1": "b"})
    p.do(lambda s: s.add_pod(_web("e1", {}, node_name="a1"), "a1"))
    team = _web("team", ANTI_TEAM)
    assert p.schedule(team).node is not None
    p.do(lambda s: s.upsert_namespace("default", {"team": "x"}))
    assert p.schedule(team).node == "b1"
    p.do(lambda s: s.upsert_namespace("default", {"team": "y"}))
    r = p.schedule(team)
    assert r.node is not None and _rejected(r) == {}


CASES = [
    Case("pods counted and taken off", _pods_counted_and_taken_off),
    Case("existing anti-affinity follows pods and labels", _existing_anti_follows_pods_and_labels),
    Case("incoming terms follow pods and labels", _incoming_terms_follow_pods_and_labels),
    Case("namespace selector terms", _namespace_selector_terms),
    Case("other namespaces and labels do not count", _other_namespace_and_labels_do_not_count),
    Case("a terminating pod is not counted", _terminating_pod_is_not_counted),
    Case("a relabeled node moves its pods", _node_relabeled_moves_its_pods),
    Case("a node needs every constraint's key", _a_node_needs_every_constraints_key),
    Case("a node removed and its slot reused", _node_removed_and_slot_reused),
    Case("a pod before its node", _pod_before_its_node),
    Case("a namespace change", _namespace_change_clears),
    Case("inclusion policies walk the nodes", _inclusion_policies_walk_the_nodes),
    Case("matchLabelKeys narrow the selector", _match_label_keys_narrow_the_selector),
    Case("nominated pods and spreading layers", _nominated_pods_and_layers),
    Case("preemption's dry run keeps its state", _preemption_dry_run_keeps_its_state),
    Case("a batch places and undoes", _batch_places_and_undoes),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_domain_views_change_no_state(case: Case) -> None:
    case.run(Pair())


def _random_ops(seed: int) -> None:
    rng = random.Random(seed)
    p = Pair(seed)
    zones = ["a", "b", "c", "d"]
    racks = ["r1", "r2", "r3"]
    taints: list[list[dict[str, str]]] = [
        [],
        [],
        [],
        [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
    ]

    def add_node(name: str) -> None:
        labels = {}
        if rng.random() < 0.9:
            labels[ZONE] = rng.choice(zones)
        if rng.random() < 0.7:
            labels[RACK] = rng.choice(racks)
        kw = {"cpu": rng.choice(["1", "2", "4"]), "taints": rng.choice(taints)}
        p.do(lambda s: _node(s, name, labels, **kw))

    nodes = [f"n{i}" for i in range(24)]
    for n in nodes:
        add_node(n)
    probes = [_web(f"probe{i}", spec, labels={"version": "1"}) for i, spec in enumerate(SPECS)]
    placed: list[str] = []
    nominated: list[str] = []
    for step in range(300):
        op = rng.random()
        if op < 0.4:
            spec = rng.choice(SPECS + IPA_SPECS)
            pod = _web(
                f"p{step}",
                spec,
                labels={"version": rng.choice(["1", "2"])},
                cpu=rng.choice(["300m", "700m"]),
                priority=rng.choice([0, 0, 100]),
            )
            r = p.schedule(pod)
            if r.node is not None:
                p.do(lambda s, pod=pod, node=r.node: s.assume(pod, node))
                placed.append(f"uid-p{step}")
            elif rng.random() < 0.5:
                got = p.kept.preemption_dry_run(pod, PROFILE, r, 0, 3, [], 0.0)
                want = p.fresh.preemption_dry_run(pod, PROFILE, r, 0, 3, [], 0.0)
                assert got.candidates() == want.candidates()
        elif op < 0.5:
            node = rng.choice(nodes)
            pod = _web(
                f"x{step}",
                rng.choice([{}, {}, ANTI_HOST, ANTI_ZONE, ANTI_TEAM, AFFINITY_ZONE]),
                node_name=node,
                namespace=rng.choice(["default", "default", "other"]),
                deleting=rng.random() < 0.2,
            )
            p.do(lambda s, pod=pod, node=node: s.add_pod(pod, node))
            placed.append(f"uid-x{step}")
        elif op < 0.62 and placed:
            uid = placed.pop(rng.randrange(len(placed)))
            p.do(lambda s, uid=uid: s.remove_pod(uid))
        elif op < 0.75:
            add_node(rng.choice(nodes))
        elif op < 0.8:
            name = rng.choice(nodes)
            p.do(lambda s, name=name: s.remove_node(name))
            if rng.random() < 0.5:
                fresh = f"m{step}"
                nodes.append(fresh)
                add_node(fresh)
        elif op < 0.85:
            pod = _web(f"nom{step}", cpu="500m", priority=rng.choice([0, 1000]))
            target = rng.choice(nodes)
            p.do(lambda s, pod=pod, target=target: s.set_nominated(pod, target))
            nominated.append(f"uid-nom{step}")
        elif op < 0.88 and nominated:
            uid = nominated.pop(rng.randrange(len(nominated)))
            p.do(lambda s, uid=uid: s.clear_nominated(uid))
        elif op < 0.9:
            labels = rng.choice([{}, {"team": "x"}])
            p.do(lambda s, labels=labels: s.upsert_namespace("default", labels))
        for probe in probes:
            p.domains(probe)


@pytest.mark.parametrize("seed", range(8))
def test_random_operations_give_the_same_state(seed: int) -> None:
    _random_ops(seed)
