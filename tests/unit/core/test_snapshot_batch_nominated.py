"""Batched placement, nominated pods, single-node filtering and PreFilter rejections."""

from __future__ import annotations

from typing import Any

from ksched._core import CompiledPod, Snapshot
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.diagnosis import fit_error_message
from ksched.framework.profile import default_profile
from ksched.sim.workloads import make_pod
from tests.helpers import parsed_node

GI = 1024**3


def _pod(name: str, **kwargs: Any) -> CompiledPod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = f"uid-{name}"
    return compile_pod(Pod.from_dict(obj))


def _cluster(seed: int, nodes: int = 30) -> Snapshot:
    snap = Snapshot(seed)
    for i in range(nodes):
        n = parsed_node(f"n{i}", labels={"topology.kubernetes.io/zone": f"z{i % 3}"})
        snap.upsert_node(n.name, n.allocatable, n.labels, [], False)
    return snap


ANTI = {
    "affinity": {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "x"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
}


def test_batch_places_exactly_like_one_by_one() -> None:
    profile = default_profile().kernels
    pods = [_pod(f"p{i}", labels={"app": "x"}, extra_spec=ANTI, cpu="500m") for i in range(40)]
    one, batch = _cluster(7), _cluster(7)
    expected = []
    for p in pods:
        r = one.schedule(p, profile)
        expected.append(r.node)
        if r.node:
            one.assume(p, r.node)
    results = batch.schedule_batch(pods, profile)
    assert batch.num_pods == 0, "the batch undoes its own accounting"
    got = [r.node for r in results]
    for p, node in zip(pods, got, strict=True):
        if node:
            batch.assume(p, node)
    assert got == expected
    # Anti-affinity on hostname: 30 nodes hold 30 pods, the other 10 fail.
    assert sum(n is not None for n in got) == 30
    assert len(set(n for n in got if n)) == 30


def test_signature_groups_identical_pods() -> None:
    a, b = _pod("a", labels={"app": "x"}), _pod("b", labels={"app": "x"})
    c = _pod("c", labels={"app": "y"})
    assert a.signature == b.signature
    assert a.signature != c.signature
    assert _pod("d", node_name="n1").signature is None


def test_nominated_pods_keep_their_room_for_equal_or_higher_priority() -> None:
    snap = Snapshot(1)
    snap.upsert_node("n1", {"cpu": 4000, "memory": 32 * GI, "pods": 110})
    profile = default_profile().kernels
    preemptor = _pod("preemptor", cpu="3", priority=100)
    snap.set_nominated(preemptor, "n1")
    low = _pod("low", cpu="2", priority=10)
    result = snap.schedule(low, profile)
    assert result.node is None
    assert result.reason_counts() == {"Insufficient cpu": 1}
    high = _pod("high", cpu="2", priority=200)
    assert snap.schedule(high, profile).node == "n1"
    # The nominated pod itself is not counted against itself.
    assert snap.schedule(preemptor, profile).node == "n1"
    assert snap.clear_nominated(preemptor.uid)
    assert snap.schedule(low, profile).node == "n1"


def test_filter_node_tests_one_node_with_victims_removed() -> None:
    snap = Snapshot(1)
    snap.upsert_node("n1", {"cpu": 1000, "memory": 32 * GI, "pods": 110})
    profile = default_profile().kernels
    victim = _pod("victim", cpu="800m", priority=1)
    snap.add_pod(victim, "n1")
    preemptor = _pod("preemptor", cpu="500m", priority=100)
    assert snap.filter_node(preemptor, profile, "n1") == (
        False,
        "NodeResourcesFit",
        ["Insufficient cpu"],
    )
    snap.remove_pod(victim.uid)
    assert snap.filter_node(preemptor, profile, "n1") is None


def test_conflicting_node_name_affinity_is_a_prefilter_rejection() -> None:
    snap = _cluster(1, nodes=3)
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n0"]},
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]},
                            ]
                        }
                    ]
                }
            }
        }
    }
    result = snap.schedule(_pod("p", extra_spec=spec), default_profile().kernels)
    assert result.node is None
    assert result.pre_filter_msg == "pod affinity terms conflict"
    message = fit_error_message(3, {}, pre_filter_msg=result.pre_filter_msg)
    assert message == "0/3 nodes are available: pod affinity terms conflict."


def test_node_name_affinity_examines_only_the_named_nodes() -> None:
    snap = _cluster(1, nodes=5)
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n3"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
    big = _pod("p", extra_spec=spec, cpu="64")
    result = snap.schedule(big, default_profile().kernels)
    assert result.reason_counts() == {
        "Insufficient cpu": 1,
        "node(s) didn't satisfy plugin(s) [NodeAffinity]": 4,
    }
    assert snap.schedule(_pod("q", extra_spec=spec), default_profile().kernels).node == "n3"
