"""v1.36 gang scheduling on the embedded cluster: scheduling.k8s.io/v1alpha2 PodGroups,
GangScheduling's PreEnqueue and Permit, the pod group cycle placing a gang in one call."""

from __future__ import annotations

from ksched.config import DEFAULT_FEATURE_GATES
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import wait_for
from tests.unit.workloads.helpers import (
    Running,
    bound,
    events_of,
    member,
    pod_group,
    profiles,
)

WAIT_MSG = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


def _metric(sched: object, result: str) -> float:
    values = sched.metrics.pod_group_schedule_attempts.values  # type: ignore[attr-defined]
    return float(values.get((result, "default-scheduler"), 0.0))


async def test_gang_that_fits_binds_completely_and_is_marked_scheduled() -> None:
    c = InMemoryCluster()
    for i in range(4):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    c.create("podgroups", pod_group("train", 4))
    async with Running(c, profiles()) as sched:
        for i in range(4):
            c.create("pods", member(f"w{i}", "train", cpu="1500m"))
        await wait_for(lambda: len(bound(c)) == 4)
        # One pod per node: each member counted before the next is placed.
        assert len(set(bound(c).values())) == 4
        await wait_for(lambda: _metric(sched, "scheduled") == 1.0)
        pg = c.get("podgroups", "default/train")
        assert pg is not None
        await wait_for(
            lambda: bool(
                (c.get("podgroups", "default/train") or {}).get("status", {}).get("conditions")
            )
        )
        (cond,) = c.get("podgroups", "default/train")["status"]["conditions"]  # type: ignore[index]
        assert (cond["type"], cond["status"], cond["reason"]) == (
            "PodGroupScheduled",
            "True",
            "Scheduled",
        )
        assert cond["observedGeneration"] == 1
        # Events go out from the recorder's own task, after the bindings.
        await wait_for(lambda: c.event_counts.get("Scheduled") == 4)


async def test_gang_one_node_short_binds_nothing_then_everything_when_a_node_comes() -> None:
    c = InMemoryCluster()
    for i in range(3):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    c.create("podgroups", pod_group("train", 4))
    async with Running(c, profiles(), pod_initial_backoff=0.05, pod_max_backoff=0.1) as sched:
        for i in range(4):
            c.create("pods", member(f"w{i}", "train", cpu="1500m"))
        await wait_for(lambda: _metric(sched, "unschedulable") >= 1.0)
        assert bound(c) == {}
        notes = {p: events_of(c, p) for p in ("w0", "w1", "w2", "w3")}
        failing = [p for p, n in notes.items() if n and n[0].startswith("0/3 nodes")]
        assert len(failing) == 1
        assert notes[failing[0]][0].startswith("0/3 nodes are available: 3 Insufficient cpu.")
        others = [p for p in notes if p not in failing]
        assert all(notes[p][0] == WAIT_MSG for p in others)
        cond = c.get("podgroups", "default/train")["status"]["conditions"][0]  # type: ignore[index]
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "False",
            "Unschedulable",
            "pod group is unschedulable",
        )
        c.create("nodes", make_node("n3", cpu="2"))
        await wait_for(lambda: len(bound(c)) == 4)
        await wait_for(lambda: _metric(sched, "scheduled") == 1.0)
        await wait_for(
            lambda: (
                c.get("podgroups", "default/train")["status"]["conditions"][0]["status"]  # type: ignore[index]
                == "True"
            )
        )


async def test_members_wait_gated_until_the_gang_has_min_count_pods() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create("podgroups", pod_group("g", 3))
    async with Running(c, profiles()) as sched:
        c.create("pods", member("a", "g"))
        c.create("pods", member("b", "g"))
        await wait_for(lambda: sched.queue.counts()["gated"] == 2)
        assert bound(c) == {}
        c.create("pods", member("c", "g"))
        await wait_for(lambda: len(bound(c)) == 3)


async def test_member_without_its_pod_group_waits_for_it() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    async with Running(c, profiles()) as sched:
        c.create("pods", member("a", "late"))
        await wait_for(lambda: sched.queue.counts()["gated"] == 1)
        uid = c.get("pods", "default/a")["metadata"]["uid"]  # type: ignore[index]
        info = sched.queue.get(uid)
        assert info is not None and info.gating_plugin == "GangScheduling"
        c.create("podgroups", pod_group("late", 1))
        await wait_for(lambda: len(bound(c)) == 1)


async def test_two_gangs_competing_for_room_for_one_bind_one_completely() -> None:
    c = InMemoryCluster()
    for i in range(4):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    c.create("podgroups", pod_group("a", 4))
    c.create("podgroups", pod_group("b", 4))
    async with Running(c, profiles()) as sched:
        for i in range(4):
            c.create("pods", member(f"a{i}", "a", cpu="1500m"))
            c.create("pods", member(f"b{i}", "b", cpu="1500m"))
        await wait_for(lambda: len(bound(c)) == 4)
        await wait_for(lambda: _metric(sched, "unschedulable") >= 1.0)
        winners = {name[0] for name in bound(c)}
        assert len(winners) == 1  # one gang, complete; the other none


async def test_basic_policy_group_binds_whatever_fits() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="2"))
    c.create("podgroups", pod_group("basic", None))
    async with Running(c, profiles()) as sched:
        for i in range(3):
            c.create("pods", member(f"p{i}", "basic", cpu="1"))
        await wait_for(lambda: len(bound(c)) == 2)
        await wait_for(lambda: _metric(sched, "scheduled") >= 1.0)


async def test_pods_outside_groups_are_scheduled_alongside() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="4"))
    c.create("podgroups", pod_group("g", 2))
    async with Running(c, profiles()):
        c.create("pods", make_pod("solo", cpu="1"))
        c.create("pods", member("m0", "g", cpu="1"))
        c.create("pods", member("m1", "g", cpu="1"))
        await wait_for(lambda: len(bound(c)) == 3)


# ---- preemption for gangs -----------------------------------------------------------------


async def test_gang_preempts_when_the_whole_gang_then_fits() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    async with Running(c, profiles(), pod_initial_backoff=0.05, pod_max_backoff=0.1) as sched:
        c.create("pods", make_pod("low0", cpu="1500m", priority=0))
        c.create("pods", make_pod("low1", cpu="1500m", priority=0))
        await wait_for(lambda: len(bound(c)) == 2)
        c.create("podgroups", pod_group("g", 2))
        c.create("pods", member("g0", "g", cpu="1500m", priority=100))
        c.create("pods", member("g1", "g", cpu="1500m", priority=100))
        await wait_for(lambda: _metric(sched, "waiting_on_preemption") >= 1.0)
        await wait_for(lambda: set(bound(c)) == {"g0", "g1"}, timeout=15)
        assert c.event_counts.get("Preempted") == 2
        # Both members needed room: each went back with its own diagnosis, nominated.
        for name in ("g0", "g1"):
            (note,) = events_of(c, name)
            assert note.startswith("0/2 nodes are available: 2 Insufficient cpu.")


async def test_gang_that_cannot_fit_even_with_preemption_takes_no_victims() -> None:
    c = InMemoryCluster()
    for i in range(2):
        c.create("nodes", make_node(f"n{i}", cpu="2"))
    async with Running(c, profiles(), pod_initial_backoff=0.05, pod_max_backoff=0.1) as sched:
        c.create("pods", make_pod("low0", cpu="1500m", priority=0))
        c.create("pods", make_pod("low1", cpu="1500m", priority=0))
        await wait_for(lambda: len(bound(c)) == 2)
        c.create("podgroups", pod_group("h", 3))
        for i in range(3):
            c.create("pods", member(f"h{i}", "h", cpu="1500m", priority=100))
        await wait_for(lambda: _metric(sched, "unschedulable") >= 2.0)
        assert set(bound(c)) == {"low0", "low1"}
        assert c.event_counts.get("Preempted", 0) == 0
        assert not any(p["metadata"].get("deletionTimestamp") for p in c.objects("pods"))


# ---- a member failing after the group's verdict: Permit's timeout -------------------------


class FailingReserve:
    """Rejects one member's Reserve outside the pod group cycle (a reservation that
    conflicts once the group goes to binding)."""

    name = "FailingReserve"

    def __init__(self, pod: str) -> None:
        self.pod = pod

    def reserve(self, state: object, pod: object, node: str) -> object:
        from ksched.framework.status import Code, Status

        if getattr(state, "pod_group_cycle", None) is None and pod.name == self.pod:  # type: ignore[attr-defined]
            return Status(Code.UNSCHEDULABLE, "reservation conflict")
        return None

    def unreserve(self, state: object, pod: object, node: str) -> None:
        return None


async def test_gang_whose_member_fails_after_the_verdict_times_out_together(
    monkeypatch: object,
) -> None:
    import ksched.plugins.gang_scheduling as gs

    monkeypatch.setattr(gs, "PERMIT_TIMEOUT", 0.3)  # type: ignore[attr-defined]
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create("podgroups", pod_group("t", 3))
    prof = profiles()
    p = prof["default-scheduler"]
    p.plugins = (*(p.plugins or ()), FailingReserve("t1"))
    async with Running(c, prof, pod_initial_backoff=5, pod_max_backoff=5):
        for i in range(3):
            c.create("pods", member(f"t{i}", "t", cpu="1"))
        await wait_for(lambda: all(events_of(c, f"t{i}") for i in range(3)), timeout=15)
        assert bound(c) == {}
        assert events_of(c, "t1")[0] == "0/1 nodes are available: 1 reservation conflict."
        for name in ("t0", "t2"):
            assert events_of(c, name)[0] == (
                "0/1 nodes are available: 1 rejected due to timeout after waiting 300ms at "
                "plugin GangScheduling."
            )


# ---- the one-call placement is the step-by-step algorithm -----------------------------------


def _offline(seed: int) -> tuple[object, list[object]]:
    """A scheduler (not running) with 12 nodes over 3 zones and a 10-member gang queued."""
    from ksched.api.node import Node
    from ksched.api.pod import Pod
    from ksched.backend.queue import QueuedPodInfo
    from ksched.scheduler import Scheduler
    from tests.unit.workloads.helpers import GANG_GATES

    c = InMemoryCluster()
    sched = Scheduler(c, profiles(), seed=seed, feature_gates=GANG_GATES)
    for i in range(12):
        sched.cache.upsert_node(
            Node.from_dict(
                make_node(f"n{i}", cpu="4", labels={"topology.kubernetes.io/zone": f"z{i % 3}"})
            )
        )
    sched.shared_informers.get("podgroups").store["default/g"] = pod_group("g", 10)
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "g"}},
            }
        ]
    }
    infos = []
    for i in range(10):
        obj = member(f"m{i}", "g", cpu="1500m", labels={"app": "g"}, extra_spec=spread)
        obj["metadata"]["uid"] = f"uid-m{i}"
        pod = Pod.from_dict(obj)
        sched.cache.pod_groups.add_member(pod)
        infos.append(QueuedPodInfo(pod, sched.compile(pod), 0.0))
    return sched, infos


def test_one_call_placement_equals_the_step_by_step_algorithm() -> None:
    from ksched.schedule_group import InTreeGroup, _one_call_algorithm, _step_by_step

    fast_sched, fast_infos = _offline(5)
    slow_sched, slow_infos = _offline(5)
    # The members name no ResourceClaim: the group's framework is their for_pod view,
    # without DynamicResources (as schedule_group picks it).
    fw = fast_sched.frameworks["default-scheduler"].for_pod(fast_infos[0].pod)  # type: ignore[attr-defined]
    driver = InTreeGroup(fast_sched, "default", "g")  # type: ignore[arg-type]
    need = driver.need(fw)
    assert need == 10
    fast = _one_call_algorithm(fast_sched, fw, driver, fast_infos, need)  # type: ignore[arg-type]
    assert fast is not None
    slow = _step_by_step(
        slow_sched,  # type: ignore[arg-type]
        slow_sched.frameworks["default-scheduler"].for_pod(slow_infos[0].pod),  # type: ignore[attr-defined]
        InTreeGroup(slow_sched, "default", "g"),  # type: ignore[arg-type]
        slow_infos,  # type: ignore[arg-type]
    )
    assert [m.node for m in fast.members] == [m.node for m in slow.members]
    assert fast.status is None and slow.status is None
    # Zone spreading among the members: 10 pods over 3 zones, skew at most 1.
    zones = [int(m.node[1:]) % 3 for m in fast.members if m.node]
    assert max(zones.count(z) for z in range(3)) - min(zones.count(z) for z in range(3)) <= 1
    assert [m.permit is None for m in fast.members] == [m.permit is None for m in slow.members]
    assert fast_sched.cache.snapshot.num_pods == 0  # type: ignore[attr-defined]
    assert slow_sched.cache.snapshot.num_pods == 0  # type: ignore[attr-defined]


# ---- topology-aware placements (TopologyAwareWorkloadScheduling) ----------------------------

TAS_GATES = DEFAULT_FEATURE_GATES.with_(
    generic_workload=True, gang_scheduling=True, topology_aware_workload_scheduling=True
)
ZONE = "topology.kubernetes.io/zone"


def _zone_nodes(c: InMemoryCluster, zones: dict[str, int], cpu: str = "2") -> None:
    for z, n in zones.items():
        for i in range(n):
            c.create("nodes", make_node(f"{z}-{i}", cpu=cpu, labels={ZONE: z}))


def test_the_gate_adds_the_placement_plugins_to_the_default_profile() -> None:
    prof = profiles(gates=TAS_GATES)["default-scheduler"]
    assert prof.placement_generate == ("TopologyPlacementGenerator",)
    assert prof.placement_score == (("NodeResourcesFit", 1), ("PodGroupPodsCount", 1))


async def test_gang_with_a_topology_constraint_lands_in_one_domain_that_fits() -> None:
    c = InMemoryCluster()
    _zone_nodes(c, {"za": 2, "zb": 3})
    c.create(
        "podgroups",
        pod_group("g", 3, schedulingConstraints={"topology": [{"key": ZONE}]}),
    )
    async with Running(c, profiles(gates=TAS_GATES), gates=TAS_GATES):
        for i in range(3):
            c.create("pods", member(f"m{i}", "g", cpu="1500m"))
        await wait_for(lambda: len(bound(c)) == 3)
        assert {n.split("-")[0] for n in bound(c).values()} == {"zb"}


async def test_placements_that_fit_are_ranked_most_allocated_first() -> None:
    c = InMemoryCluster()
    _zone_nodes(c, {"za": 3, "zb": 3}, cpu="4")
    # zb is busier: packing the gang there scores higher (MostAllocated placement score).
    for i in range(3):
        c.create("pods", make_pod(f"busy{i}", cpu="2", node_name=f"zb-{i}"))
    c.create(
        "podgroups",
        pod_group("g", 3, schedulingConstraints={"topology": [{"key": ZONE}]}),
    )
    async with Running(c, profiles(gates=TAS_GATES), gates=TAS_GATES):
        for i in range(3):
            c.create("pods", member(f"m{i}", "g", cpu="1"))
        await wait_for(lambda: len(bound(c, "m")) == 3)
        assert {n.split("-")[0] for n in bound(c, "m").values()} == {"zb"}


async def test_gang_that_fits_no_domain_reports_its_placements() -> None:
    c = InMemoryCluster()
    _zone_nodes(c, {"za": 2, "zb": 2})
    c.create(
        "podgroups",
        pod_group("g", 3, schedulingConstraints={"topology": [{"key": ZONE}]}),
    )
    async with Running(c, profiles(gates=TAS_GATES), gates=TAS_GATES):
        for i in range(3):
            c.create("pods", member(f"m{i}", "g", cpu="1500m", priority=10))
        await wait_for(
            lambda: bool(
                (c.get("podgroups", "default/g") or {}).get("status", {}).get("conditions")
            )
        )
        assert bound(c) == {}
        cond = c.get("podgroups", "default/g")["status"]["conditions"][0]  # type: ignore[index]
        assert cond["message"] == (
            "0/2 placements are available, first placement status: pod group is unschedulable"
        )
        await wait_for(lambda: any(events_of(c, f"m{i}") for i in range(3)))
        notes = [n for i in range(3) for n in events_of(c, f"m{i}")]
        failing = [n for n in notes if n.startswith("0/2 nodes")]
        assert failing and failing[0].endswith(
            "preemption: not eligible due to placement-based pod group scheduling limitation"
        )


async def test_members_naming_different_schedulers_fail_with_upstreams_error() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="8"))
    c.create("podgroups", pod_group("g", 2))
    prof = profiles(
        """\
profiles:
- schedulerName: default-scheduler
- schedulerName: other
"""
    )
    async with Running(c, prof):
        c.create("pods", member("a", "g"))
        c.create("pods", member("b", "g", scheduler_name="other"))
        await wait_for(lambda: bool(events_of(c, "a")) and bool(events_of(c, "b")))
        for name in ("a", "b"):
            assert events_of(c, name)[0].startswith(
                "all pods in a single pod group should have the same .spec.schedulerName set, got: "
            )
        assert bound(c) == {}
