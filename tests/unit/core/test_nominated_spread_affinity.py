"""Nominated pods in PodTopologySpread and InterPodAffinity (the Rust kernel).

Upstream's ``RunFilterPluginsWithNominatedPods`` filters a node that has pods of equal or
higher priority nominated to it (other than the pod itself) twice: first with those pods
added to the node and, through each plugin's ``AddPod``, to the PreFilter state, then as
the node is; the node fits only if both passes pass, and a failure of the first pass is
the one reported.
"""

from __future__ import annotations

from typing import Any

from ksched._core import CompiledPod, Snapshot
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.profile import default_profile
from ksched.sim.workloads import make_pod
from tests.helpers import parsed_node

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"


def _pod(name: str, *, namespace: str = "default", **kwargs: Any) -> CompiledPod:
    obj = make_pod(name, namespace=namespace, **kwargs)
    obj["metadata"]["uid"] = f"uid-{namespace}-{name}"
    return compile_pod(Pod.from_dict(obj))


def _cluster(n: int = 3, cpu: str = "4") -> Snapshot:
    """Nodes n0..n{n-1}, each alone in zone z<i>."""
    snap = Snapshot(1)
    for i in range(n):
        node = parsed_node(f"n{i}", cpu=cpu, labels={ZONE: f"z{i}"})
        snap.upsert_node(node.name, node.allocatable, node.labels, [], False)
    return snap


def _spread(max_skew: int = 1, key: str = ZONE) -> dict[str, Any]:
    return {
        "topologySpreadConstraints": [
            {
                "maxSkew": max_skew,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    }


def _term(app: str, key: str = HOST) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _anti(app: str, key: str = HOST) -> dict[str, Any]:
    return {
        "affinity": {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, key)]}
        }
    }


def _affinity(app: str, key: str = HOST) -> dict[str, Any]:
    return {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(app, key)]}
        }
    }


def _filter(snap: Snapshot, pod: CompiledPod, node: str) -> Any:
    return snap.filter_node(pod, default_profile().kernels, node)


def _feasible(snap: Snapshot, pod: CompiledPod) -> list[str]:
    return sorted(n for n in snap.node_names() if _filter(snap, pod, n) is None)


def _web(name: str, priority: int, **kwargs: Any) -> CompiledPod:
    return _pod(name, labels={"app": "web"}, priority=priority, extra_spec=_spread(), **kwargs)


# --- PodTopologySpread ---------------------------------------------------------------


def test_nominated_pod_counts_in_its_domain_for_lower_or_equal_priority() -> None:
    snap = _cluster()
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    # z0: 1, z1: 0, z2: 0 — every zone but z0 takes a web pod with maxSkew 1.
    assert _feasible(snap, _web("low", 10)) == ["n1", "n2"]
    snap.set_nominated(_pod("nom", labels={"app": "web"}, priority=100), "n2")
    # With the nominated pod, z2 holds 1 while z1 stays at the minimum 0: skew 2.
    for prio in (10, 100):
        assert _feasible(snap, _web(f"p{prio}", prio)) == ["n1"]
        assert _filter(snap, _web(f"p{prio}", prio), "n2") == (
            False,
            "PodTopologySpread",
            [SPREAD_MISMATCH],
        )
    # A pod of higher priority does not see it.
    assert _feasible(snap, _web("high", 101)) == ["n1", "n2"]
    assert snap.clear_nominated("uid-default-nom")
    assert _feasible(snap, _web("low", 10)) == ["n1", "n2"]


def test_minimum_moves_when_the_node_domain_was_the_only_minimum() -> None:
    snap = _cluster()
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    snap.add_pod(_pod("w1", labels={"app": "web"}), "n1")
    snap.set_nominated(_pod("nom", labels={"app": "web"}, priority=100), "n2")
    # z2 was the only zone at the minimum 0: with the nominated pod every zone holds 1,
    # the minimum becomes 1, and z2 takes another pod (skew 1 + 1 - 1 = 1).
    assert _feasible(snap, _web("low", 10)) == ["n2"]
    # Two nominated pods: z2 holds 2, the minimum is 1 (z0, z1): skew 2 + 1 - 1 = 2.
    snap.set_nominated(_pod("nom2", labels={"app": "web"}, priority=100), "n2")
    assert _feasible(snap, _web("low", 10)) == []
    assert _feasible(snap, _web("high", 200)) == ["n2"]


def test_minimum_with_a_single_domain() -> None:
    snap = _cluster(n=1)
    snap.set_nominated(_pod("nom", labels={"app": "web"}, priority=100), "n0")
    snap.set_nominated(_pod("nom2", labels={"app": "web"}, priority=100), "n0")
    # One domain: it is its own minimum whatever it holds.
    assert _feasible(snap, _web("low", 10)) == ["n0"]


def test_nominated_pod_in_another_namespace_or_not_matching_does_not_count() -> None:
    snap = _cluster()
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    snap.set_nominated(_pod("nom", namespace="other", labels={"app": "web"}, priority=100), "n2")
    snap.set_nominated(_pod("nom2", labels={"app": "db"}, priority=100), "n2")
    assert _feasible(snap, _web("low", 10)) == ["n1", "n2"]


def test_own_nomination_never_counts_against_the_pod() -> None:
    snap = _cluster()
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    me = _web("me", 10)
    snap.set_nominated(me, "n2")
    assert _feasible(snap, me) == ["n1", "n2"]
    # A twin of equal priority (another uid) does see the nomination.
    assert _feasible(snap, _web("twin", 10)) == ["n1"]
    # The pod tries its nominated node first and takes it.
    assert snap.schedule(me, default_profile().kernels).node in ("n1", "n2")


def test_first_pass_failure_is_reported_in_profile_order() -> None:
    snap = _cluster(cpu="2")
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    snap.add_pod(_pod("w1", labels={"app": "web"}), "n0")
    # n0 fails the spread constraint as it is (2 + 1 - 0 > 1); with the nominated pod it
    # also lacks cpu, and NodeResourcesFit runs before PodTopologySpread: upstream's
    # first pass (with the nominated pods) reports NodeResourcesFit.
    snap.set_nominated(_pod("nom", cpu="1500m", priority=100), "n0")
    assert _filter(snap, _web("low", 10, cpu="1"), "n0") == (
        False,
        "NodeResourcesFit",
        ["Insufficient cpu"],
    )
    assert _filter(snap, _web("high", 200, cpu="1"), "n0") == (
        False,
        "PodTopologySpread",
        [SPREAD_MISMATCH],
    )


def test_schedule_reports_spread_rejections_of_nominated_nodes() -> None:
    snap = _cluster()
    snap.add_pod(_pod("w0", labels={"app": "web"}), "n0")
    snap.add_pod(_pod("w1", labels={"app": "web"}), "n1")
    snap.add_pod(_pod("w2", labels={"app": "web"}), "n1")
    # z0: 1, z1: 2, z2: 0: only n2 fits (n0 1 + 1 - 0 = 2, n1 3).
    snap.set_nominated(_pod("nom", labels={"app": "web"}, priority=100), "n2")
    snap.set_nominated(_pod("nom2", labels={"app": "web"}, priority=100), "n2")
    # With two nominated pods z2 holds 2 and the minimum becomes 1 (z0): 2 + 1 - 1 = 2.
    result = snap.schedule(_web("low", 10), default_profile().kernels)
    assert result.node is None
    assert result.reason_counts() == {SPREAD_MISMATCH: 3}


# --- InterPodAffinity ----------------------------------------------------------------


def test_nominated_pod_anti_affinity_blocks_its_node() -> None:
    snap = _cluster()
    # An existing pod whose anti-affinity matches the incoming pod: InterPodAffinity's
    # PreFilter does not skip the pod.
    snap.add_pod(_pod("guard", labels={"app": "guard"}, extra_spec=_anti("web")), "n0")
    snap.set_nominated(
        _pod("nom", labels={"app": "guard"}, priority=100, extra_spec=_anti("web")), "n1"
    )
    low = _pod("low", labels={"app": "web"}, priority=10)
    assert _feasible(snap, low) == ["n2"]
    assert _filter(snap, low, "n1") == (False, "InterPodAffinity", [EXISTING_ANTI])
    assert _feasible(snap, _pod("high", labels={"app": "web"}, priority=200)) == ["n1", "n2"]
    # Not matching the incoming pod's labels: no effect.
    assert _feasible(snap, _pod("other", labels={"app": "api"}, priority=10)) == ["n0", "n1", "n2"]


def test_nominated_anti_affinity_alone_is_skipped_as_upstream() -> None:
    # No existing pod's anti-affinity matches the incoming pod and it has no required
    # terms: upstream's PreFilter skips InterPodAffinity, so AddPod never sees the
    # nominated pod.
    snap = _cluster()
    snap.set_nominated(
        _pod("nom", labels={"app": "guard"}, priority=100, extra_spec=_anti("web")), "n1"
    )
    assert _feasible(snap, _pod("low", labels={"app": "web"}, priority=10)) == ["n0", "n1", "n2"]
    # An existing anti-affinity pod that does not match the incoming pod: still skipped.
    snap.add_pod(_pod("guard", labels={"app": "guard"}, extra_spec=_anti("db")), "n0")
    assert _feasible(snap, _pod("low", labels={"app": "web"}, priority=10)) == ["n0", "n1", "n2"]


def test_incoming_anti_affinity_to_a_nominated_pod_blocks_its_node() -> None:
    snap = _cluster()
    snap.set_nominated(_pod("nom", labels={"app": "db"}, priority=100), "n1")
    low = _pod("low", labels={"app": "web"}, priority=10, extra_spec=_anti("db"))
    assert _feasible(snap, low) == ["n0", "n2"]
    assert _filter(snap, low, "n1") == (False, "InterPodAffinity", [ANTI])
    high = _pod("high", labels={"app": "web"}, priority=200, extra_spec=_anti("db"))
    assert _feasible(snap, high) == ["n0", "n1", "n2"]


def test_incoming_anti_affinity_by_zone_to_a_nominated_pod() -> None:
    snap = Snapshot(1)
    for name, zone in (("a1", "za"), ("a2", "za"), ("b1", "zb")):
        node = parsed_node(name, labels={ZONE: zone})
        snap.upsert_node(node.name, node.allocatable, node.labels, [], False)
    snap.set_nominated(_pod("nom", labels={"app": "db"}, priority=100), "a1")
    low = _pod("low", labels={"app": "web"}, priority=10, extra_spec=_anti("db", ZONE))
    # AddPod only touches the node the pod is nominated to: a2 (same zone) is filtered
    # without it, as upstream.
    assert _feasible(snap, low) == ["a2", "b1"]


def test_nominated_pod_does_not_satisfy_required_affinity() -> None:
    snap = _cluster()
    # Not the first of a series: a db pod runs on n0.
    snap.add_pod(_pod("db0", labels={"app": "db"}), "n0")
    snap.set_nominated(_pod("nom", labels={"app": "db"}, priority=100), "n1")
    low = _pod("low", labels={"app": "web"}, priority=10, extra_spec=_affinity("db"))
    # n1 passes the first pass (the nominated db pod counts) but not the second.
    assert _feasible(snap, low) == ["n0"]
    assert _filter(snap, low, "n1") == (True, "InterPodAffinity", [AFFINITY])


def test_first_of_a_series_with_a_nominated_peer() -> None:
    snap = _cluster()
    snap.set_nominated(
        _pod("nom", labels={"app": "db"}, priority=100, extra_spec=_affinity("db")), "n1"
    )
    low = _pod("low", labels={"app": "db"}, priority=10, extra_spec=_affinity("db"))
    # No db pod runs: the pod matches its own terms and passes everywhere (on n1 the
    # first pass counts the nominated pod, the second is the first of a series).
    assert _feasible(snap, low) == ["n0", "n1", "n2"]


def test_existing_pods_anti_affinity_still_applies_with_nominations() -> None:
    snap = _cluster()
    snap.add_pod(_pod("guard", labels={"app": "guard"}, extra_spec=_anti("web")), "n1")
    snap.set_nominated(_pod("nom", labels={"app": "db"}, priority=100), "n1")
    low = _pod("low", labels={"app": "web"}, priority=10)
    assert _filter(snap, low, "n1") == (False, "InterPodAffinity", [EXISTING_ANTI])


# --- preemption's dry run --------------------------------------------------------------


def test_preemption_dry_run_sees_nominated_pods_in_spread_counts() -> None:
    profile = default_profile().kernels

    def dry_run(nominate: bool) -> Any:
        snap = _cluster(cpu="1")
        snap.add_pod(_pod("w0", labels={"app": "web"}, cpu="100m"), "n0")
        snap.add_pod(_pod("victim", labels={"app": "other"}, cpu="900m", priority=1), "n2")
        if nominate:
            snap.set_nominated(
                _pod("nom", labels={"app": "web"}, cpu=None, memory=None, priority=100), "n2"
            )
        pod = _web("p", 50, cpu="500m")
        # PodTopologySpread is in play: victims are found by detaching them.
        return snap.preemption_dry_run(pod, profile, ["n2"], 0, 1, [], 0.0)

    run = dry_run(nominate=False)
    assert run.candidates() == [("n2", ["uid-default-victim"], 0)]
    # With the nominated web pod z2 would hold 2 (with the pod) against z1's 0, whatever
    # is evicted: no candidate, and the node's status is the spread rejection.
    run = dry_run(nominate=True)
    assert run.candidates() == []
    assert run.statuses == [("n2", False, "PodTopologySpread", [SPREAD_MISMATCH])]
