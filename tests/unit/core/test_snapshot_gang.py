"""``Snapshot.schedule_gang``: a pod group placed in one call, all or nothing."""

from __future__ import annotations

from typing import Any

import pytest

from ksched._core import CompiledPod, Snapshot
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.framework.profile import default_profile
from ksched.sim.workloads import make_pod
from tests.helpers import parsed_node

GI = 1024**3

SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "x"}},
        }
    ]
}
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


def _pod(name: str, nominated: str = "", **kwargs: Any) -> CompiledPod:
    obj = make_pod(name, **kwargs)
    obj["metadata"]["uid"] = f"uid-{name}"
    if nominated:
        obj["status"] = {"nominatedNodeName": nominated}
    return compile_pod(Pod.from_dict(obj))


def _cluster(seed: int, nodes: int = 12, cpu: str = "4") -> Snapshot:
    snap = Snapshot(seed)
    for i in range(nodes):
        n = parsed_node(
            f"n{i}",
            cpu=cpu,
            labels={"topology.kubernetes.io/zone": f"z{i % 3}", "kubernetes.io/hostname": f"n{i}"},
        )
        snap.upsert_node(n.name, n.allocatable, n.labels, [], False)
    return snap


@pytest.mark.parametrize(
    ("case", "spec", "members"),
    [
        ("plain-requests", {}, 20),
        ("zone-spreading-among-members", SPREAD, 18),
        ("anti-affinity-among-members", ANTI, 15),
    ],
)
def test_gang_places_exactly_like_successive_attempts(
    case: str, spec: dict[str, Any], members: int
) -> None:
    profile = default_profile().kernels
    pods = [
        _pod(f"{case}-{i}", labels={"app": "x"}, extra_spec=spec, cpu="1500m")
        for i in range(members)
    ]
    one, gang = _cluster(11), _cluster(11)
    expected = []
    for p in pods:
        r = one.schedule(p, profile)
        expected.append(r.node)
        if r.node:
            one.assume(p, r.node)
    out = gang.schedule_gang(pods, profile, members)
    got = [r.node for r in out.results]
    assert got == expected
    assert out.placed == sum(n is not None for n in expected)
    assert gang.num_pods == 0, "the call undoes its own accounting"
    # The start index and random state moved as by the successive attempts.
    probe = _pod(f"{case}-probe", cpu="100m")
    for p, node in zip(pods, got, strict=True):
        if node:
            gang.assume(p, node)
    assert gang.schedule(probe, profile).node == one.schedule(probe, profile).node


def test_gang_reports_whether_enough_members_fit() -> None:
    profile = default_profile().kernels
    snap = _cluster(3, nodes=3, cpu="2")
    pods = [_pod(f"w{i}", cpu="1") for i in range(8)]  # room for 6
    short = snap.schedule_gang(pods, profile, 8)
    assert (short.placed, short.need, short.schedulable) == (6, 8, False)
    failed = [r for r in short.results if r.node is None]
    assert len(failed) == 2
    assert failed[0].reason_counts() == {"Insufficient cpu": 3}
    enough = snap.schedule_gang(pods[:6], profile, 6)
    assert enough.schedulable
    assert snap.num_pods == 0


def test_gang_within_a_placement_examines_only_its_nodes() -> None:
    profile = default_profile().kernels
    snap = _cluster(5)
    zone1 = [f"n{i}" for i in range(12) if i % 3 == 1]
    pods = [_pod(f"t{i}", cpu="1") for i in range(6)]
    out = snap.schedule_gang(pods, profile, 6, zone1)
    assert out.schedulable
    assert {r.node for r in out.results} <= set(zone1)
    assert all(r.num_all_nodes == len(zone1) for r in out.results)
    too_many = snap.schedule_gang([_pod(f"u{i}", cpu="1") for i in range(17)], profile, 17, zone1)
    assert too_many.placed == 16 and not too_many.schedulable
    assert too_many.results[-1].num_all_nodes == 4


def test_member_nomination_is_not_counted_twice_and_is_restored() -> None:
    profile = default_profile().kernels
    snap = Snapshot(1)
    snap.upsert_node("n1", {"cpu": 4000, "memory": 32 * GI, "pods": 110})
    a = _pod("a", nominated="n1", cpu="3")
    b = _pod("b", cpu="1")
    snap.set_nominated(a, "n1")
    out = snap.schedule_gang([a, b], profile, 2)
    # a takes its nominated node; its nomination does not also hold 3 cpus against b.
    assert [r.node for r in out.results] == ["n1", "n1"]
    assert snap.num_nominated == 1
    assert snap.num_pods == 0
    # The nomination is back: an equal-priority pod sees the room taken.
    assert snap.schedule(_pod("c", cpu="2"), profile).node is None
