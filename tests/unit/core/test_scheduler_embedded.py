"""The whole scheduler on the embedded cluster, as a user of ``ksched simulate`` sees it
(some cases through ksched's own pytest fixtures, as a user's suite writes them)."""

from __future__ import annotations

import asyncio
import copy
import socket
from collections import Counter
from collections.abc import Callable

import pytest

from ksched.cluster import APIError
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from ksched.testing import Cluster, EmbeddedScheduler, assert_pods_per_node, pod


async def wait_for(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.005)


class Running:
    """A scheduler running on an embedded cluster for the duration of a test."""

    def __init__(self, cluster: InMemoryCluster, **kwargs) -> None:  # type: ignore[no-untyped-def]
        profiles = kwargs.pop("profiles", None) or {"default-scheduler": default_profile()}
        self.cluster = cluster
        self.sched = Scheduler(cluster, profiles, seed=1, **kwargs)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def bound_pods(cluster: InMemoryCluster) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in cluster.objects("pods")
        if p["spec"].get("nodeName")
    }


def test_every_pod_is_bound_once_to_a_node_that_fits(
    ksched_cluster: Cluster, ksched_scheduler: Callable[..., EmbeddedScheduler]
) -> None:
    ksched_cluster.add_nodes(20, name="n{i}", cpu="1", memory="4Gi", pods="10")
    out = ksched_scheduler().schedule(pod(f"p{i}", cpu="100m", memory="200Mi") for i in range(150))
    assert len(out.placements) == 150 and not out.unschedulable
    assert_pods_per_node(out, max=10)  # cpu 1 / 100m = 10 and pods 10
    c = ksched_cluster.api
    assert c.bind_calls == 150
    assert c.event_counts.get("Scheduled") == 150
    event = next(e for e in c.events if e["reason"] == "Scheduled")
    assert event["note"].startswith("Successfully assigned default/p")
    assert event["reportingController"] == "default-scheduler"


async def test_unschedulable_pod_is_reported_then_scheduled_when_a_node_arrives() -> None:
    c = InMemoryCluster()
    for i in range(3):
        c.create("nodes", make_node(f"small{i}", cpu="1"))
    c.create("nodes", make_node("cordoned", cpu="8", unschedulable=True))
    async with Running(c):
        c.create("pods", make_pod("big", cpu="2"))
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) >= 1)
        failed = next(e for e in c.events if e["reason"] == "FailedScheduling")
        # DefaultPreemption (on by default) adds its sentence, as upstream's does: the
        # cordoned node and the too-small ones are UnschedulableAndUnresolvable.
        want = (
            "0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu. "
            "no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is "
            "not helpful for scheduling."
        )
        assert failed["note"] == want
        await wait_for(
            lambda: any(
                cond.get("reason") == "Unschedulable"
                for cond in (c.get("pods", "default/big") or {})["status"].get("conditions", [])
            )
        )
        cond = dict(c.get("pods", "default/big")["status"]["conditions"][0])  # type: ignore[index]
        assert cond.pop("lastTransitionTime")  # set, as upstream's UpdatePodCondition sets it
        assert cond == {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": want,
        }
        c.create("nodes", make_node("large", cpu="4"))
        await wait_for(lambda: bound_pods(c).get("big") == "large", timeout=5)


async def test_profiles_route_by_scheduler_name_and_unclaimed_pods_are_counted() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    profiles = {
        "default-scheduler": default_profile(),
        "batch-scheduler": default_profile("batch-scheduler"),
    }
    async with Running(c, profiles=profiles) as sched:
        c.create("pods", make_pod("a"))
        c.create("pods", make_pod("b", scheduler_name="batch-scheduler"))
        c.create("pods", make_pod("c", scheduler_name="typo-scheduler"))
        tried = make_pod("d", scheduler_name="other-scheduler")
        tried["status"] = {"conditions": [{"type": "PodScheduled", "status": "False"}]}
        c.create("pods", tried)
        await wait_for(lambda: len(bound_pods(c)) == 2)
        await asyncio.sleep(0.05)
        assert "c" not in bound_pods(c)
        # Not yet: a pod counts once it stayed unclaimed for a while.
        assert sched.unclaimed_pods() == Counter()
        sched.unclaimed_after = 0.0
        # "d" carries a PodScheduled condition: another scheduler is trying it.
        assert sched.unclaimed_pods() == Counter({"typo-scheduler": 1})
        scheduled = [e for e in c.events if e["reason"] == "Scheduled"]
        controllers = {e["reportingController"] for e in scheduled}
        assert controllers == {"default-scheduler", "batch-scheduler"}
        host = socket.gethostname()
        assert {e["reportingInstance"] for e in scheduled} == {
            f"default-scheduler-{host}",
            f"batch-scheduler-{host}",
        }
        assert all(e["regarding"]["name"] != "c" for e in c.events)
        c.delete("pods", "default/c")
        await wait_for(lambda: not sched.unclaimed_pods())


async def test_bad_objects_are_reported_and_everything_else_is_scheduled() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("good"))
    bad_node = make_node("bad")
    bad_node["status"]["allocatable"]["cpu"] = "four"
    c.create("nodes", bad_node)
    async with Running(c) as sched:
        bad_pod = make_pod("bad-pod")
        bad_pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "lots"
        c.create("pods", bad_pod)
        for i in range(5):
            c.create("pods", make_pod(f"ok{i}"))
        await wait_for(lambda: len(bound_pods(c)) == 5)
        assert set(bound_pods(c).values()) == {"good"}
        assert "Node bad" in sched.invalid_objects
        assert "status.allocatable" in sched.invalid_objects["Node bad"]
        assert "Pod default/bad-pod" in sched.invalid_objects
        assert "requests.memory" in sched.invalid_objects["Pod default/bad-pod"]


def _bad_weight(pod: dict) -> None:  # type: ignore[type-arg]
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": "heavy", "preference": {"matchExpressions": []}}
            ]
        }
    }


def _bad_spread(pod: dict) -> None:  # type: ignore[type-arg]
    pod["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 2**64, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
    ]


def _huge_host_port(pod: dict) -> None:  # type: ignore[type-arg]
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 2**63}]


def _bad_toleration_operator(pod: dict) -> None:  # type: ignore[type-arg]
    pod["spec"]["tolerations"] = [{"key": "k", "operator": "Maybe"}]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            _bad_weight,
            "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight",
            id="affinity-weight-not-an-integer",
        ),
        pytest.param(
            _bad_spread, "spec.topologySpreadConstraints[0].maxSkew", id="max-skew-beyond-int64"
        ),
        pytest.param(
            _huge_host_port,
            "spec.containers[0].ports[0].hostPort",
            id="host-port-out-of-int32",
        ),
        pytest.param(
            _bad_toleration_operator,
            "spec.tolerations[0].operator",
            id="unknown-toleration-operator",
        ),
    ],
)
async def test_invalid_pending_pod_gets_an_event_and_the_rest_is_scheduled(
    mutate: Callable[[dict], None],  # type: ignore[type-arg]
    field: str,
) -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    bad = make_pod("bad")
    mutate(bad)
    c.create("pods", bad)
    async with Running(c) as sched:
        c.create("pods", make_pod("ok"))
        await wait_for(lambda: "ok" in bound_pods(c))
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) == 1)
        assert "bad" not in bound_pods(c)
        message = sched.invalid_objects["Pod default/bad"]
        assert message.startswith(f"Pod default/bad: {field}: "), message
        event = next(e for e in c.events if e["reason"] == "FailedScheduling")
        assert event["regarding"]["name"] == "bad"
        assert event["type"] == "Warning"
        assert event["note"] == message
        # Fixed: the pod is scheduled and no longer reported.
        fixed = copy.deepcopy(c.get("pods", "default/bad"))
        assert fixed is not None
        fixed["spec"] = make_pod("bad")["spec"]
        c.update("pods", fixed)
        await wait_for(lambda: "bad" in bound_pods(c))
        assert "Pod default/bad" not in sched.invalid_objects


async def test_invalid_pod_of_another_scheduler_gets_no_event() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    other = make_pod("other", scheduler_name="someone-else")
    _bad_weight(other)
    c.create("pods", other)
    async with Running(c):
        c.create("pods", make_pod("ok"))
        await wait_for(lambda: "ok" in bound_pods(c))
        await asyncio.sleep(0.05)
    assert c.event_counts.get("FailedScheduling", 0) == 0


async def test_standby_reports_invalid_pods_only_once_it_schedules() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1"))
    bad = make_pod("bad")
    _bad_weight(bad)
    c.create("pods", bad)
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=1)
    await sched.start()  # informers only, as a hot standby
    await asyncio.sleep(0.05)
    assert "Pod default/bad" in sched.invalid_objects
    assert c.event_counts.get("FailedScheduling", 0) == 0
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) == 1)
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_bound_pod_with_a_malformed_term_still_occupies_its_node() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", cpu="1"))
    bound = make_pod("bound", cpu="800m")
    bound["spec"]["nodeName"] = "n1"
    _bad_weight(bound)
    c.create("pods", bound)
    async with Running(c) as sched:
        c.create("pods", make_pod("new", cpu="500m"))
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) >= 1)
        assert "new" not in bound_pods(c)
        assert sched.cache.snapshot.requested("n1", "cpu") == 800
        assert "Pod default/bound" in sched.invalid_objects
    notes = [e["note"] for e in c.events if e["reason"] == "FailedScheduling"]
    assert all("Insufficient cpu" in n for n in notes), notes


async def test_node_the_snapshot_refuses_is_reported_and_skipped() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("good"))
    bad = make_node("bad")
    bad["spec"]["taints"] = [{"key": "k", "effect": "Sometimes"}]
    c.create("nodes", bad)
    async with Running(c) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: bound_pods(c).get("p") == "good")
        assert sched.invalid_objects["Node bad"].startswith("Node bad: spec.taints[0].effect: ")


async def test_failed_binding_is_forgotten_and_retried() -> None:
    failures = {"count": 0}

    def fail_first(namespace: str, name: str, node: str) -> Exception | None:
        if failures["count"] == 0:
            failures["count"] += 1
            return APIError(500, "InternalError", "etcd timeout")
        return None

    c = InMemoryCluster(fail_bind=fail_first)
    c.create("nodes", make_node("n1"))
    async with Running(c, pod_initial_backoff=0.01, pod_max_backoff=0.02) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: bound_pods(c).get("p") == "n1", timeout=5)
        await wait_for(lambda: sched.cache.num_assumed() == 0)
        assert sched.stats.bind_errors == 1
        assert sched.cache.snapshot.requested("n1", "cpu") == 100
    assert c.bind_calls == 2


async def test_slow_binding_does_not_stall_scheduling() -> None:
    gate = asyncio.Event()
    c = InMemoryCluster(bind_gate=gate)
    c.create("nodes", make_node("n1"))
    async with Running(c) as sched:
        for i in range(30):
            c.create("pods", make_pod(f"p{i}"))
        # The API server holds every binding: all 30 pods are still placed (assumed).
        await wait_for(lambda: sched.stats.scheduled == 30)
        assert sched.binder.in_flight == 30
        assert bound_pods(c) == {}
        gate.set()
        await wait_for(lambda: len(bound_pods(c)) == 30)


async def test_a_stalled_api_server_stops_the_loop_at_the_run_ahead_limit() -> None:
    gate = asyncio.Event()
    c = InMemoryCluster(bind_gate=gate)
    for i in range(10):
        c.create("nodes", make_node(f"n{i}"))
    async with Running(c) as sched:
        limit = sched.binder.queue.limit
        for i in range(limit * 3):
            c.create("pods", make_pod(f"p{i}", cpu="10m", memory="10Mi"))
        await wait_for(lambda: sched.stats.scheduled == limit)
        await asyncio.sleep(0.05)
        # No binding finishes: the loop decided exactly the limit; the rest wait in
        # the scheduling queue, not assumed.
        assert sched.stats.scheduled == limit
        assert sched.cache.num_assumed() == limit
        assert sched.queue.counts()["active"] == limit * 2
        assert sched.binder.in_flight == limit
        gate.set()
        await wait_for(lambda: len(bound_pods(c)) == limit * 3)


async def test_a_high_priority_pod_created_mid_backlog_is_bound_next() -> None:
    sent: list[str] = []

    def record(namespace: str, name: str, node: str) -> None:
        sent.append(name)

    # 50 ms per binding, 32 at a time: ~640 bindings/s, far slower than the decisions.
    c = InMemoryCluster(bind_delay=0.05, fail_bind=record)  # type: ignore[arg-type]
    for i in range(20):
        c.create("nodes", make_node(f"n{i}"))
    async with Running(c) as sched:
        for i in range(400):
            c.create("pods", make_pod(f"low{i}", cpu="10m", memory="10Mi", priority=1))
        await wait_for(lambda: len(sent) >= 64)
        peak = sched.binder.in_flight
        started = len(sent)
        c.create("pods", make_pod("high", cpu="10m", memory="10Mi", priority=1000))
        await wait_for(lambda: "high" in sent)
        # Bindings already handed to the API server finish first; only those, and
        # the ones decided before the pod arrived (at most the run-ahead limit), go
        # out before it. Without the limit all 400 would have been decided by now.
        limit = sched.binder.queue.limit
        assert sent.index("high") <= started + limit
        assert peak <= limit + sched.batch_size
        await wait_for(lambda: len(bound_pods(c)) == 401, timeout=10)


async def test_higher_priority_pod_is_scheduled_first() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", cpu="1"))
    c.create("pods", make_pod("low", cpu="1", priority=1))
    c.create("pods", make_pod("high", cpu="1", priority=1000))
    async with Running(c):
        await wait_for(lambda: len(bound_pods(c)) == 1)
        assert bound_pods(c) == {"high": "n1"}
