"""The whole scheduler on the embedded cluster, as a user of ``ksched simulate`` sees it
(some cases through ksched's own pytest fixtures, as a user's suite writes them)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable

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
            "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.."
        )
        assert failed["note"] == want
        await wait_for(
            lambda: any(
                cond.get("reason") == "Unschedulable"
                for cond in (c.get("pods", "default/big") or {})["status"].get("conditions", [])
            )
        )
        cond = c.get("pods", "default/big")["status"]["conditions"][0]  # type: ignore[index]
        assert cond == {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": want,
        }
        c.create("nodes", make_node("large", cpu="4"))
        await wait_for(lambda: bound_pods(c).get("big") == "large", timeout=5)


def test_profiles_route_by_scheduler_name_and_unclaimed_pods_are_counted(
    ksched_cluster: Cluster, ksched_scheduler: Callable[..., EmbeddedScheduler]
) -> None:
    ksched_cluster.add_node("n1")
    sched = ksched_scheduler(
        {"profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "batch-scheduler"}]}
    )
    out = sched.schedule(
        [pod("a"), pod("b", scheduler_name="batch-scheduler"), pod("c", scheduler_name="typo")]
    )
    assert out.placements == {"default/a": "n1", "default/b": "n1"}
    assert out.unschedulable == {"default/c": "not attempted"}
    assert sched.scheduler.unclaimed_pods() == Counter({"typo": 1})
    events = ksched_cluster.api.events
    controllers = {e["reportingController"] for e in events if e["reason"] == "Scheduled"}
    assert controllers == {"default-scheduler", "batch-scheduler"}
    assert all(e["regarding"]["name"] != "c" for e in events)
    ksched_cluster.delete("pods", "default/c")
    sched.schedule([])
    assert not sched.scheduler.unclaimed_pods()


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


async def test_higher_priority_pod_is_scheduled_first() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", cpu="1"))
    c.create("pods", make_pod("low", cpu="1", priority=1))
    c.create("pods", make_pod("high", cpu="1", priority=1000))
    async with Running(c):
        await wait_for(lambda: len(bound_pods(c)) == 1)
        assert bound_pods(c) == {"high": "n1"}
