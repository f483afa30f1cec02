"""Scheduling and binding cycles with Python plugins, on the embedded cluster.

Waits poll for an outcome with a generous deadline; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import generate_latest

from ksched.api.pod import Pod
from ksched.events import EventRecorder, truncate_message
from ksched.framework.builtins import default_plugins
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import NodeInfo, PreFilterResult
from ksched.framework.profile import Profile, default_profile
from ksched.framework.status import Code, Status
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import parsed_pod

PROFILE = "default-scheduler"


async def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.002)


class Running:
    def __init__(self, cluster: InMemoryCluster, *plugins: Any, **kwargs: Any) -> None:
        profile = default_profile()
        profile.plugins = (*default_plugins(), *plugins)
        self.sched = Scheduler(cluster, {PROFILE: profile}, seed=1, **kwargs)

    async def __aenter__(self) -> Scheduler:
        await self.sched.start()
        self.task = asyncio.get_running_loop().create_task(self.sched.run())
        return self.sched

    async def __aexit__(self, *exc: object) -> None:
        await self.sched.shutdown()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def node_of(c: InMemoryCluster, name: str) -> str | None:
    pod = c.get("pods", f"default/{name}")
    return None if pod is None else pod["spec"].get("nodeName")


def condition(c: InMemoryCluster, name: str) -> dict[str, Any] | None:
    pod = c.get("pods", f"default/{name}") or {}
    return next(
        (x for x in pod.get("status", {}).get("conditions", []) if x.get("type") == "PodScheduled"),
        None,
    )


def failed_notes(c: InMemoryCluster) -> list[str]:
    return [e["note"] for e in c.events if e["reason"] == "FailedScheduling"]


class Reserver:
    def __init__(self, name: str, log: list[str], status: Status | None = None) -> None:
        self.name = name
        self.log = log
        self.status = status

    def reserve(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        self.log.append(f"reserve {self.name}")
        return self.status

    def unreserve(self, state: CycleState, pod: Pod, node: str) -> None:
        self.log.append(f"unreserve {self.name}")


class Gate:
    """Permit: waits (or rejects) every pod."""

    name = "Gate"

    def __init__(self, status: Status | None, timeout: float = 60.0) -> None:
        self.status = status
        self.timeout = timeout

    def permit(self, state: CycleState, pod: Pod, node: str) -> tuple[Status | None, float]:
        return self.status, self.timeout


class FailingPreBind:
    name = "VolumeProvisioner"

    async def pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        return Status(Code.ERROR, "provisioning failed")


def cluster_with(*nodes: str, **kw: Any) -> InMemoryCluster:
    c = InMemoryCluster(**kw)
    for n in nodes:
        c.create("nodes", make_node(n))
    return c


async def test_permit_rejection_unreserves_in_reverse_forgets_and_reports():
    log: list[str] = []
    c = cluster_with("n1")
    plugins = (Reserver("A", log), Reserver("B", log), Gate(Status(Code.UNSCHEDULABLE, "not now")))
    async with Running(c, *plugins) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: condition(c, "p") is not None)
        assert log[:4] == ["reserve A", "reserve B", "unreserve B", "unreserve A"]
        # Gate registers no events (every event of every resource, upstream's
        # UnrollWildCardResource): the echo of the PodScheduled=False write, a generic
        # UnschedulablePod/Update, wakes the pod once, as upstream; the second failure
        # writes the same condition (no write, no echo), so there is no third attempt.
        want = "0/1 nodes are available: 1 not now."
        await wait_for(lambda: failed_notes(c) == [want, want])
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        await wait_for(lambda: sched.queue.where(uid) == "unschedulable")
        await asyncio.sleep(0.3)
        assert failed_notes(c) == [want, want]
        assert sched.cache.num_pods == 0  # forgotten
        info = sched.queue.get(uid)
        assert info is not None
        assert sched.queue.where(info.uid) == "unschedulable"
        assert info.unschedulable_plugins == {"Gate"}
        cond = dict(condition(c, "p") or {})
        assert cond.pop("lastTransitionTime")  # set, as upstream's
        assert cond == {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": want,
        }
        text = generate_latest(sched.metrics.registry).decode()
        attempts = 'scheduler_schedule_attempts_total{profile="default-scheduler",'
        assert attempts + 'result="unschedulable"} 2.0' in text
        assert 'scheduler_unschedulable_pods{plugin="Gate",profile="default-scheduler"} 1.0' in text
        assert 'scheduler_pending_pods{queue="unschedulable"} 1.0' in text


async def test_permit_wait_then_allowed_from_elsewhere_binds():
    c = cluster_with("n1")
    async with Running(c, Gate(Status(Code.WAIT))) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: len(sched.waiting_pods) == 1)
        assert node_of(c, "p") is None
        assert sched.cache.num_assumed() == 1  # assumed while it waits
        wp = next(iter(sched.handle.iterate_waiting_pods()))
        assert wp.pending_plugins() == ["Gate"]
        wp.allow("Gate")
        await wait_for(lambda: node_of(c, "p") == "n1")
        assert c.event_counts.get("Scheduled") == 1


async def test_permit_wait_then_rejected_is_requeued_and_forgotten():
    log: list[str] = []
    c = cluster_with("n1")
    async with Running(c, Reserver("A", log), Gate(Status(Code.WAIT))) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: len(sched.waiting_pods) == 1)
        assert sched.handle.reject_waiting_pod(next(iter(sched.waiting_pods)).pod.uid)
        await wait_for(lambda: condition(c, "p") is not None)
        assert log == ["reserve A", "unreserve A"]
        assert sched.cache.num_pods == 0
        assert failed_notes(c) == ["0/1 nodes are available: 1 removed."]
        assert node_of(c, "p") is None


async def test_prebind_error_forgets_and_requeues_through_error_backoff():
    log: list[str] = []
    c = cluster_with("n1")
    async with Running(c, Reserver("A", log), FailingPreBind()) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: condition(c, "p") is not None)
        assert log[:2] == ["reserve A", "unreserve A"]
        assert sched.cache.num_pods == 0
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        info = sched.queue.get(uid)
        assert info is not None and info.consecutive_errors_count >= 1
        cond = condition(c, "p")
        assert cond is not None and cond["reason"] == "SchedulerError"
        assert cond["message"] == 'running PreBind plugin "VolumeProvisioner": provisioning failed'
        assert sched.metrics.schedule_attempts.get(("error", PROFILE)) >= 1


class ParallelPreBind:
    """A PreBind that may run beside its parallel neighbours (AllowParallel)."""

    pre_bind_parallel = True

    def __init__(
        self, name: str, log: list[str], wait: asyncio.Event | None, fail: bool = False
    ) -> None:
        self.name = name
        self.log = log
        self.wait = wait
        self.fail = fail
        self.started = asyncio.Event()

    def pre_bind_pre_flight(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node: str) -> Status | None:
        self.log.append(f"start {self.name}")
        self.started.set()
        if self.fail:
            return Status(Code.ERROR, "provisioning failed")
        try:
            if self.wait is not None:
                await self.wait.wait()
        except asyncio.CancelledError:
            self.log.append(f"cancelled {self.name}")
            raise
        self.log.append(f"done {self.name}")
        return None


async def test_consecutive_parallel_pre_binds_run_concurrently():
    # upstream getPreBindPluginGroups: A waits for B to start, which only concurrent
    # PreBinds allow; C (not parallel) runs after the group.
    log: list[str] = []
    gate = asyncio.Event()
    a = ParallelPreBind("A", log, gate)
    b = ParallelPreBind("B", log, None)
    c_plugin = ParallelPreBind("C", log, None)
    c_plugin.pre_bind_parallel = False  # type: ignore[misc]
    c = cluster_with("n1")

    async def open_gate() -> None:
        await b.started.wait()
        gate.set()

    opener = asyncio.get_running_loop().create_task(open_gate())
    async with Running(c, a, b, c_plugin):
        c.create("pods", make_pod("p"))
        await wait_for(lambda: node_of(c, "p") == "n1")
    await opener
    assert log == ["start A", "start B", "done B", "done A", "start C", "done C"]


async def test_a_failing_parallel_pre_bind_cancels_its_group():
    log: list[str] = []
    a = ParallelPreBind("A", log, asyncio.Event())
    b = ParallelPreBind("B", log, None, fail=True)
    c = cluster_with("n1")
    async with Running(c, a, b):
        c.create("pods", make_pod("p"))
        await wait_for(lambda: condition(c, "p") is not None)
        cond = condition(c, "p")
        assert cond is not None
        assert cond["message"] == 'running PreBind plugin "B": provisioning failed'
    assert log[:3] == ["start A", "start B", "cancelled A"]


async def test_reserve_error_is_a_scheduler_error():
    c = cluster_with("n1")
    async with Running(c, Reserver("A", [], Status(Code.ERROR, "state lost"))) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: condition(c, "p") is not None)
        cond = condition(c, "p")
        assert cond is not None and cond["reason"] == "SchedulerError"
        assert cond["message"] == 'running Reserve plugin "A": state lost'
        assert sched.stats.errors >= 1


class OnlyNode:
    """Python Filter: only ``allowed`` passes."""

    def __init__(self, allowed: str) -> None:
        self.name = "OnlyNode"
        self.allowed = allowed
        self.seen: list[str] = []

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        self.seen.append(node.name)
        if node.name == self.allowed:
            return None
        return Status(Code.UNSCHEDULABLE, "node(s) were not the chosen one")


class Prefer:
    """Python Score: 100 on ``node``, 0 elsewhere."""

    def __init__(self, node: str, weight: int = 10) -> None:
        self.name = "Prefer"
        self.node = node
        self.weight = weight

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return 100 if node.name == self.node else 0


@pytest.mark.parametrize(
    ("plugins", "want"),
    [
        pytest.param(lambda: (OnlyNode("n2"),), "n2", id="python-filter-keeps-one-node"),
        pytest.param(lambda: (Prefer("n3", weight=1000),), "n3", id="python-score-outweighs"),
    ],
)
async def test_python_filter_and_score_run_after_the_rust_filters(
    plugins: Callable[[], tuple[Any, ...]], want: str
):
    c = cluster_with("n1", "n2", "n3")
    c.create("nodes", make_node("cordoned", unschedulable=True))
    made = plugins()
    async with Running(c, *made):
        c.create("pods", make_pod("p"))
        await wait_for(lambda: node_of(c, "p") is not None)
    assert node_of(c, "p") == want
    for p in made:
        if isinstance(p, OnlyNode):
            assert "cordoned" not in p.seen  # the Rust filter rejected it first


@pytest.mark.parametrize(
    ("allowed", "want"),
    [
        pytest.param(None, "n1", id="nominated-node-passing-every-filter-wins-unscored"),
        pytest.param("n2", "n2", id="python-filter-rejecting-it-sends-the-pod-elsewhere"),
    ],
)
async def test_a_nominated_pod_tries_its_nominated_node_first(allowed: str | None, want: str):
    """Upstream's evaluateNominatedNode with Python filters: the nominated node alone,
    unless a filter (here a Python one) rejects it; Prefer would pick n3 otherwise."""
    c = cluster_with("n1", "n2", "n3")
    plugins: list[Any] = [Prefer("n3", weight=1000)]
    if allowed is not None:
        plugins.append(OnlyNode(allowed))
    async with Running(c, *plugins):
        p = make_pod("p")
        p["status"]["nominatedNodeName"] = "n1"
        c.create("pods", p)
        await wait_for(lambda: node_of(c, "p") is not None)
    assert node_of(c, "p") == want


async def test_python_filter_rejecting_every_node_reports_its_reason():
    c = cluster_with("n1", "n2")
    async with Running(c, OnlyNode("elsewhere")) as sched:
        c.create("pods", make_pod("p"))
        await wait_for(lambda: condition(c, "p") is not None)
        assert failed_notes(c) == [
            "0/2 nodes are available: 2 node(s) were not the chosen one. no new claims to "
            "deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found "
            "for incoming pod."
        ]
        # The echo of the PodScheduled=False write wakes OnlyNode (registered for every
        # event, as a plugin without EventsToRegister is upstream): unschedulable or
        # already back in backoff, the pod keeps its rejector.
        q = sched.queue
        queued = {**q._unschedulable, **q._backoff_uids, **q._active_uids}
        queued.update({uid: flying[0] for uid, flying in q._in_flight.items()})
        (info,) = queued.values()
        assert info.unschedulable_plugins == {"OnlyNode"}


async def test_the_diagnosis_keeps_rust_rejections_when_python_filters_reject_the_rest():
    """Upstream's NodeToStatus has every rejection: the small node's (Insufficient cpu,
    unresolvable: the pod asks more than it has) as well as the Python filter's."""
    c = cluster_with("n1", "n2")
    c.create("nodes", make_node("full", cpu="1", memory="8Gi"))
    async with Running(c, OnlyNode("elsewhere")):
        c.create("pods", make_pod("p", cpu="2"))
        await wait_for(lambda: condition(c, "p") is not None)
        assert failed_notes(c) == [
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were not the chosen one. "
            "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is "
            "not helpful for scheduling, "
            "2 No preemption victims found for incoming pod."
        ]


class OnlyNames:
    """Python PreFilter narrowing the attempt to ``names``."""

    def __init__(self, *names: str) -> None:
        self.name = "OnlyNames"
        self.names = frozenset(names)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult, None]:
        return PreFilterResult(self.names), None


async def test_nodes_outside_a_python_pre_filter_result_are_unresolvable_when_none_fits():
    c = InMemoryCluster()
    for n in ("n1", "n2", "n3"):
        c.create("nodes", make_node(n, cpu="1", memory="8Gi"))
    async with Running(c, OnlyNames("n1")):
        c.create("pods", make_pod("p", cpu="2"))
        await wait_for(lambda: condition(c, "p") is not None)
        # Only n1 counts for the filters; n2 and n3 are not candidates for preemption.
        assert failed_notes(c) == [
            "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) "
            "[OnlyNames]. no new claims to deallocate, preemption: 0/3 nodes are available: 3 "
            "Preemption is not helpful for scheduling."
        ]


async def test_failure_condition_carries_the_generation_and_keeps_its_transition_time():
    """Upstream's condition: observedGeneration is the pod's generation; a new message
    with the same status keeps lastTransitionTime (UpdatePodCondition)."""
    c = cluster_with("small")
    pod = make_pod("p", cpu="8")
    pod["metadata"]["generation"] = 3
    c.create("pods", pod)
    async with Running(c) as sched:
        await wait_for(lambda: condition(c, "p") is not None)
        first = dict(condition(c, "p") or {})
        assert first["observedGeneration"] == 3
        assert first["lastTransitionTime"].endswith("Z")
        old = "1999-01-01T00:00:00Z"
        stored = c.get("pods", "default/p") or {}
        status = {**stored["status"], "conditions": [{**first, "lastTransitionTime": old}]}
        c.update("pods", {**stored, "status": status})
        # Another message: a node big enough (NodeResourcesFit's hint queues the pod)
        # but tainted, so the pod fails again, now over two nodes.
        taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
        c.create("nodes", make_node("second", cpu="16", taints=[taint]))
        await wait_for(lambda: "0/2 nodes" in (condition(c, "p") or {}).get("message", ""))
        assert (condition(c, "p") or {})["lastTransitionTime"] == old
        assert sched.stats.unschedulable >= 2


@pytest.mark.parametrize(
    "post_filter",
    [
        # No PostFilter plugin: upstream hands the failure handler clearNominatedNode.
        pytest.param(False, id="no-post-filter-clears-the-nomination"),
        # DefaultPreemption finds no candidate: its result clears it too.
        pytest.param(True, id="preemption-without-candidates-clears-it"),
    ],
)
async def test_a_failed_cycle_clears_the_pods_nomination(post_filter: bool):
    c = cluster_with("small")
    p = make_pod("p", cpu="8")
    p["status"]["nominatedNodeName"] = "small"
    c.create("pods", p)
    profile = default_profile()
    profile.plugins = tuple(default_plugins(post_filter=None if post_filter else []))
    sched = Scheduler(c, {PROFILE: profile}, seed=1)
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        await wait_for(lambda: condition(c, "p") is not None)
        # The status patch clears it (null); the nominator forgets it at once.
        await wait_for(
            lambda: not (c.get("pods", "default/p") or {})["status"].get("nominatedNodeName")
        )
        assert sched.queue.nominator.pods_for_node("small") == []
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_failure_condition_is_not_patched_twice_for_the_same_message():
    c = cluster_with("small")
    c.create("pods", make_pod("p", cpu="8"))
    async with Running(c) as sched:
        await wait_for(lambda: condition(c, "p") is not None)
        rv = c.get("pods", "default/p")["metadata"]["resourceVersion"]  # type: ignore[index]
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        sched.queue.activate([uid])  # force another attempt with the same outcome
        await wait_for(lambda: sched.stats.unschedulable >= 2)
        await asyncio.sleep(0.01)
        assert c.get("pods", "default/p")["metadata"]["resourceVersion"] == rv  # type: ignore[index]


async def test_metrics_after_scheduling():
    c = cluster_with("n1", "n2")
    async with Running(c) as sched:
        for i in range(5):
            c.create("pods", make_pod(f"p{i}"))
        await wait_for(lambda: sched.stats.bound == 5)
        await wait_for(lambda: sched.cache.num_assumed() == 0)
        text = generate_latest(sched.metrics.registry).decode()
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 5.0'
        in text
    )
    assert (
        'scheduler_queue_incoming_pods_total{event="UnschedulablePodAdd",queue="active"} 5.0'
        in text
    )
    assert "scheduler_pod_scheduling_attempts_count 5.0" in text
    assert 'scheduler_pod_scheduling_sli_duration_seconds_count{attempts="1"} 5.0' in text
    assert 'scheduler_cache_size{type="nodes"} 2.0' in text
    assert 'scheduler_cache_size{type="pods"} 5.0' in text
    for point in ("PreEnqueue", "Filter", "Reserve", "Permit", "Bind"):
        assert (
            f'scheduler_framework_extension_point_duration_seconds_count{{extension_point="{point}",'
            f'profile="default-scheduler",status="Success"}} 5.0'
        ) in text
    for name in (
        "scheduler_preemption_attempts_total",
        "scheduler_preemption_victims",
        "scheduler_permit_wait_duration_seconds",
        "scheduler_plugin_execution_duration_seconds",
        "scheduler_pending_pods",
        "scheduler_unschedulable_pods",
    ):
        assert f"# TYPE {name}" in text


# ---- the event recorder ----------------------------------------------------------------------


class FakeEventsAPI:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.hold: asyncio.Event | None = None

    async def create_event(self, *, event: dict[str, Any]) -> None:
        if self.hold is not None:
            await self.hold.wait()
        self.created.append(event)

    async def patch_event(self, *, namespace: str, name: str, patch: dict[str, Any]) -> None:
        self.patched.append((name, patch))


@pytest.mark.parametrize(
    ("repeats", "want_creates", "want_patch_counts"),
    [
        pytest.param(1, 1, [], id="single-event-created"),
        pytest.param(2, 1, [2], id="second-repeat-starts-a-series"),
        pytest.param(7, 1, [2], id="later-repeats-only-counted"),
    ],
)
async def test_recorder_folds_repeats_into_a_series(
    repeats: int, want_creates: int, want_patch_counts: list[int]
):
    api = FakeEventsAPI()
    rec = EventRecorder(api, instance="test")  # type: ignore[arg-type]
    pod = parsed_pod("p")
    for i in range(repeats):
        rec.failed_scheduling(pod, f"0/3 nodes are available: attempt {i}.", PROFILE)
    await rec.drain()
    await rec.close()
    assert len(api.created) == want_creates
    assert [p["series"]["count"] for _, p in api.patched] == want_patch_counts
    assert api.created[0]["note"] == "0/3 nodes are available: attempt 0."
    assert rec.aggregated == max(0, repeats - 2)


async def test_recorder_new_resource_version_is_a_new_event():
    api = FakeEventsAPI()
    rec = EventRecorder(api, instance="test")  # type: ignore[arg-type]
    pod = parsed_pod("p")
    rec.failed_scheduling(pod, "x", PROFILE, resource_version="1")
    rec.failed_scheduling(pod, "x", PROFILE, resource_version="2")
    await rec.drain()
    await rec.close()
    assert [e["regarding"]["resourceVersion"] for e in api.created] == ["1", "2"]


async def test_recorder_drops_beyond_its_backlog():
    api = FakeEventsAPI()
    api.hold = asyncio.Event()
    rec = EventRecorder(api, instance="test", max_queued=10, workers=1)  # type: ignore[arg-type]
    for i in range(50):
        rec.scheduled(parsed_pod(f"p{i}"), "n1", PROFILE)
    assert rec.dropped >= 39
    api.hold.set()
    await rec.drain()
    await rec.close()
    assert len(api.created) + rec.dropped == 50


def test_event_note_is_truncated_as_upstream():
    long = "x" * 2000
    out = truncate_message(long)
    assert len(out) == 1024 and out.endswith(" ...")
    assert truncate_message("short") == "short"


def test_profile_plugins_default_to_the_python_side_defaults():
    assert Profile(PROFILE, (), ()).plugins is None


async def test_node_updates_wake_a_pod_only_when_the_changed_field_can_help():
    c = InMemoryCluster()
    c.create("nodes", make_node("small", cpu="1"))
    c.create("nodes", make_node("cordoned", cpu="8", unschedulable=True))
    async with Running(c) as sched:
        c.create("pods", make_pod("p", cpu="2"))
        await wait_for(lambda: condition(c, "p") is not None)
        uid = c.get("pods", "default/p")["metadata"]["uid"]  # type: ignore[index]
        info = sched.queue.get(uid)
        assert info is not None
        assert info.unschedulable_plugins == {"NodeResourcesFit", "NodeUnschedulable"}
        attempts = info.attempts

        labelled = dict(c.get("nodes", "cordoned"))  # type: ignore[arg-type]
        labelled["metadata"] = {**labelled["metadata"], "labels": {"team": "a"}}
        rv = c.update("nodes", labelled)["metadata"]["resourceVersion"]
        await wait_for(
            lambda: sched.node_informer.store["cordoned"]["metadata"]["resourceVersion"] == rv
        )
        assert sched.queue.where(uid) == "unschedulable"  # a label change cannot help

        uncordoned = dict(c.get("nodes", "cordoned"))  # type: ignore[arg-type]
        uncordoned["spec"] = {}
        c.update("nodes", uncordoned)
        await wait_for(lambda: node_of(c, "p") == "cordoned")
        assert info.attempts == attempts + 1


async def test_pod_being_deleted_is_skipped_with_an_event():
    c = cluster_with("n1")
    doomed = make_pod("doomed")
    doomed["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    c.create("pods", doomed)
    async with Running(c) as sched:
        await wait_for(lambda: c.event_counts.get("FailedScheduling", 0) == 1)
        assert failed_notes(c) == ["skip schedule deleting pod: default/doomed"]
        assert node_of(c, "doomed") is None
        assert len(sched.queue) == 0 and not sched.queue.wants_events()
