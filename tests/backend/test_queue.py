"""The scheduling queue: ordering, backoff windows, flushes, hints, gates, in-flight events.

Every timing is driven by a fake clock; nothing sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue import QueuedPodInfo, SchedulingQueue, priority_sort_key
from ksched.backend.queue.cluster_event import (
    ASSIGNED_POD,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import events_for
from ksched.framework.builtins import SchedulingGates
from tests.helpers import parsed_node, parsed_pod

PROFILE = "default-scheduler"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _registrations(*plugins: str, extra: list[tuple[str, ClusterEventWithHint]] | None = None):
    regs = [(p, reg) for p in plugins for reg in events_for(p)]
    return {PROFILE: regs + (extra or [])}


def make_queue(clock: FakeClock, **kwargs: Any) -> SchedulingQueue:
    kwargs.setdefault(
        "hints",
        _registrations("NodeUnschedulable", "NodeName", "NodeResourcesFit", "SchedulingGates"),
    )
    kwargs.setdefault("pre_enqueue", {PROFILE: [SchedulingGates()]})
    return SchedulingQueue(initial_backoff=1.0, max_backoff=10.0, clock=clock, **kwargs)


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return make_queue(clock)


def fail(
    queue: SchedulingQueue, name: str, *plugins: str, pending: tuple[str, ...] = (), **kw: Any
) -> QueuedPodInfo:
    """Add a pod, pop it and fail it with ``plugins`` (no plugin: an error)."""
    queue.add(parsed_pod(name, **kw))
    info = queue.try_pop()
    assert info is not None and info.pod.name == name
    queue.add_unschedulable(info, plugins, pending)
    return info


# ---- ordering ----------------------------------------------------------------------------


def test_higher_priority_first_then_earlier_enqueue(queue: SchedulingQueue, clock: FakeClock):
    queue.add(parsed_pod("low-early", priority=0))
    clock.now += 1
    queue.add(parsed_pod("high", priority=100))
    clock.now += 1
    queue.add(parsed_pod("low-late", priority=0))
    order = [queue.try_pop().pod.name for _ in range(3)]  # type: ignore[union-attr]
    assert order == ["high", "low-early", "low-late"]
    assert queue.try_pop() is None


# activeQ keeps PrioritySort's order as flat heap entries; any other QueueSort's key is
# kept as it is. Both pop in their key's order, through try_pop and pop_same alike.
SORT_KEYS: list[tuple[str, Callable[[QueuedPodInfo], Any], list[str]]] = [
    ("priority-sort", priority_sort_key, ["high", "mid-early", "mid-late", "low"]),
    (
        "a-plugins-key-with-the-same-order",
        lambda i: (-i.pod.priority, i.timestamp),
        ["high", "mid-early", "mid-late", "low"],
    ),
    ("a-plugins-key-by-name", lambda i: i.pod.name, ["high", "low", "mid-early", "mid-late"]),
]


@pytest.mark.parametrize(
    ("sort_key", "order"), [c[1:] for c in SORT_KEYS], ids=[c[0] for c in SORT_KEYS]
)
@pytest.mark.parametrize("pop", ["try_pop", "pop_same"])
def test_active_queue_pops_in_its_sort_keys_order(
    clock: FakeClock, sort_key: Callable[[QueuedPodInfo], Any], order: list[str], pop: str
):
    queue = make_queue(clock, sort_key=sort_key)
    for name, priority in (("mid-early", 5), ("low", 0), ("high", 9), ("mid-late", 5)):
        queue.add(parsed_pod(name, priority=priority))
        clock.now += 1
    if pop == "try_pop":
        got = [queue.try_pop().pod.name for _ in range(4)]  # type: ignore[union-attr]
    else:
        got = [i.pod.name for i in queue.pop_same(None, lambda i: None, 10)]
    assert got == order
    assert queue.try_pop() is None


def test_pop_specific_takes_one_pod_out_of_order(queue: SchedulingQueue, clock: FakeClock):
    """Upstream PopSpecificPod: any queued pod, whatever its place; the others keep theirs."""
    fail(queue, "rejected", "NodeResourcesFit")
    queue.add(parsed_pod("high", priority=100))
    queue.add(parsed_pod("low", priority=0))
    low = queue.pop_specific(parsed_pod("low").uid)
    assert low is not None and low.pod.name == "low" and low.attempts == 1
    assert queue.is_in_flight(low.uid)
    # From unschedulablePods: activated first, as ForceActivate would.
    again = queue.pop_specific(parsed_pod("rejected").uid)
    assert again is not None and again.attempts == 2
    assert queue.pop_specific(low.uid) is None  # already in flight
    assert queue.pop_specific("no-such-uid") is None
    assert [queue.try_pop().pod.name] == ["high"]  # type: ignore[union-attr]
    assert queue.try_pop() is None


def test_pop_specific_leaves_a_gated_pod_gated(queue: SchedulingQueue):
    gated = parsed_pod("g", extra_spec={"schedulingGates": [{"name": "example.com/wait"}]})
    queue.add(gated)
    assert queue.pop_specific(gated.uid) is None
    assert queue.counts()["gated"] == 1


# ---- backoff -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unschedulable", "errors", "want"),
    [
        pytest.param(1, 0, 1.0, id="first-failure-1s"),
        pytest.param(2, 0, 2.0, id="second-failure-2s"),
        pytest.param(3, 0, 4.0, id="third-failure-4s"),
        pytest.param(4, 0, 8.0, id="fourth-failure-8s"),
        pytest.param(5, 0, 10.0, id="capped-at-max"),
        pytest.param(9, 0, 10.0, id="stays-capped"),
        pytest.param(6, 1, 1.0, id="error-count-takes-precedence"),
        pytest.param(0, 3, 4.0, id="consecutive-errors"),
        pytest.param(0, 0, 0.0, id="never-failed-no-backoff"),
    ],
)
def test_backoff_duration(queue: SchedulingQueue, unschedulable: int, errors: int, want: float):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    info.unschedulable_count = unschedulable
    info.consecutive_errors_count = errors
    assert queue.backoff_duration(info) == want


@dataclass
class WindowCase:
    failed_at: float
    still_backing_off_at: float
    completed_at: float


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            WindowCase(1000.0, 1001.9, 1002.0), id="aligned-failure-waits-for-next-window"
        ),
        pytest.param(WindowCase(1000.3, 1001.99, 1002.0), id="expiry-truncated-to-its-window"),
        pytest.param(WindowCase(1000.9, 1001.5, 1002.0), id="late-failure-same-window"),
    ],
)
def test_backoff_completes_when_the_window_after_expiry_begins(
    queue: SchedulingQueue, clock: FakeClock, case: WindowCase
):
    clock.now = case.failed_at
    info = fail(queue, "p", "NodeResourcesFit")
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("big", cpu="8"))
    assert queue.where(info.uid) == "backoff"
    clock.now = case.still_backing_off_at
    assert queue.flush_backoff_completed() == 0
    clock.now = case.completed_at
    assert queue.flush_backoff_completed() == 1
    assert queue.where(info.uid) == "active"


def test_backoff_pod_is_popped_when_activeq_is_empty(queue: SchedulingQueue):
    info = fail(queue, "p", "NodeResourcesFit")
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("big", cpu="8"))
    assert queue.where(info.uid) == "backoff"
    assert queue.try_pop() is info  # PopFromBackoffQ: no idle cycle while activeQ is empty
    assert queue.metrics.queue_incoming_pods.get(("active", "PopFromBackoffQ")) == 1


def test_error_backoff_is_never_popped_early(queue: SchedulingQueue, clock: FakeClock):
    info = fail(queue, "p")  # no rejector plugin: an error
    assert queue.where(info.uid) == "backoff"
    assert info.consecutive_errors_count == 1
    assert queue.try_pop() is None
    clock.now = 1002.0
    assert queue.flush_backoff_completed() == 1
    assert queue.try_pop() is info


def test_backoff_disabled_when_max_is_zero(clock: FakeClock):
    queue = make_queue(clock)
    queue.max_backoff = 0
    info = fail(queue, "p", "NodeResourcesFit")
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("big", cpu="8"))
    assert queue.where(info.uid) == "active"


def test_unschedulable_pods_are_flushed_after_five_minutes(
    queue: SchedulingQueue, clock: FakeClock
):
    info = fail(queue, "p", "NodeResourcesFit")
    clock.now += 299
    assert queue.flush_unschedulable_leftover() == 0
    clock.now += 2
    assert queue.flush_unschedulable_leftover() == 1
    assert queue.where(info.uid) == "active"
    assert queue.metrics.queue_incoming_pods.get(("active", "UnschedulableTimeout")) == 1


# ---- queueing hints ----------------------------------------------------------------------


@dataclass
class HintCase:
    rejected_by: tuple[str, ...]
    event: ClusterEvent
    old: Any
    new: Any
    want: str | None
    pending: tuple[str, ...] = ()
    pod: dict[str, Any] | None = None


def _pod(name: str, **kw: Any) -> Pod:
    return parsed_pod(name, **kw)


UPDATE_TAINT = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)
UPDATE_ALLOCATABLE = ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
UPDATE_ANNOTATION = ClusterEvent(NODE, ActionType.UPDATE_NODE_ANNOTATION)

HINT_CASES = {
    "queue-on-node-added-that-fits": HintCase(
        ("NodeResourcesFit",),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", cpu="8"),
        "backoff",
        pod={"cpu": "2"},
    ),
    "skip-queue-on-node-added-too-small": HintCase(
        ("NodeResourcesFit",),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", cpu="1"),
        "unschedulable",
        pod={"cpu": "2"},
    ),
    "skip-queue-on-node-allocatable-unchanged-for-pod": HintCase(
        ("NodeResourcesFit",),
        UPDATE_ALLOCATABLE,
        parsed_node("n", cpu="8", memory="1Gi"),
        parsed_node("n", cpu="8", memory="2Gi"),
        "unschedulable",
        pod={"cpu": "2", "memory": None},
    ),
    "queue-on-node-allocatable-increased": HintCase(
        ("NodeResourcesFit",),
        UPDATE_ALLOCATABLE,
        parsed_node("n", cpu="1"),
        parsed_node("n", cpu="4"),
        "backoff",
        pod={"cpu": "2"},
    ),
    "skip-queue-on-unschedulable-node-added": HintCase(
        ("NodeUnschedulable",),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", unschedulable=True),
        "unschedulable",
    ),
    "queue-on-node-uncordoned": HintCase(
        ("NodeUnschedulable",),
        UPDATE_TAINT,
        parsed_node("n", unschedulable=True),
        parsed_node("n"),
        "backoff",
    ),
    "only-hints-of-rejector-plugins-run": HintCase(
        ("NodeName",),
        UPDATE_ALLOCATABLE,
        parsed_node("n", cpu="1"),
        parsed_node("n", cpu="8"),
        "unschedulable",
    ),
    "event-no-plugin-registered-is-ignored": HintCase(
        ("NodeResourcesFit", "NodeUnschedulable"),
        UPDATE_ANNOTATION,
        parsed_node("n"),
        parsed_node("n"),
        "unschedulable",
    ),
    "registration-without-hint-always-queues": HintCase(
        ("NodeName",),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", cpu="1"),
        "backoff",
    ),
    "assigned-pod-deleted-frees-resources": HintCase(
        ("NodeResourcesFit",),
        EVENT_ASSIGNED_POD_DELETE,
        _pod("old", node_name="n1"),
        None,
        "backoff",
    ),
    "unscheduled-pod-deleted-frees-nothing": HintCase(
        ("NodeResourcesFit",),
        ClusterEvent("UnschedulablePod", ActionType.DELETE),
        _pod("old"),
        None,
        "unschedulable",
    ),
    "assigned-pod-added-does-not-help-resources": HintCase(
        ("NodeResourcesFit",),
        EVENT_ASSIGNED_POD_ADD,
        None,
        _pod("new", node_name="n1"),
        "unschedulable",
    ),
    "pending-plugin-queue-skips-backoff": HintCase(
        (),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", cpu="8"),
        "active",
        pending=("NodeResourcesFit",),
        pod={"cpu": "2"},
    ),
    "unschedulable-and-pending-queue-from-pending-wins": HintCase(
        ("NodeName",),
        EVENT_NODE_ADD,
        None,
        parsed_node("n", cpu="8"),
        "active",
        pending=("NodeResourcesFit",),
        pod={"cpu": "2"},
    ),
}


@pytest.mark.parametrize("case", list(HINT_CASES.values()), ids=list(HINT_CASES))
def test_queueing_hints(queue: SchedulingQueue, case: HintCase):
    info = fail(queue, "p", *case.rejected_by, pending=case.pending, **(case.pod or {}))
    assert queue.where(info.uid) == "unschedulable"
    queue.move_all_to_active_or_backoff(case.event, case.old, case.new)
    assert queue.where(info.uid) == case.want


def _custom_queue(clock: FakeClock, hint: Callable[..., QueueingHint]) -> SchedulingQueue:
    reg = ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), hint)
    return make_queue(clock, hints={PROFILE: [("Custom", reg)]})


def test_hint_that_raises_counts_as_queue(clock: FakeClock):
    def broken(pod: Pod, old: Any, new: Any) -> QueueingHint:
        raise RuntimeError("bug in a hint")

    queue = _custom_queue(clock, broken)
    info = fail(queue, "p", "Custom")
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n"))
    assert queue.where(info.uid) == "backoff"


def test_hint_receives_the_pod_and_the_event_objects(clock: FakeClock):
    seen: list[tuple[str, Any, str]] = []

    def hint(pod: Pod, old: Any, new: Node) -> QueueingHint:
        seen.append((pod.name, old, new.name))
        return QueueingHint.QUEUE_SKIP

    queue = _custom_queue(clock, hint)
    info = fail(queue, "p", "Custom")
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n7"))
    assert seen == [("p", None, "n7")]
    assert queue.where(info.uid) == "unschedulable"


def test_event_after_backoff_expired_goes_straight_to_active(
    queue: SchedulingQueue, clock: FakeClock
):
    info = fail(queue, "p", "NodeResourcesFit")
    clock.now += 5
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n", cpu="8"))
    assert queue.where(info.uid) == "active"


# ---- scheduling gates --------------------------------------------------------------------


def test_gated_pod_waits_until_its_gates_are_removed(queue: SchedulingQueue):
    gated = parsed_pod("g", extra_spec={"schedulingGates": [{"name": "example.com/wait"}]})
    queue.add(gated)
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    info = queue.get(gated.uid)
    assert info is not None and info.gating_plugin == "SchedulingGates"
    assert info.unschedulable_plugins == {"SchedulingGates"}
    # Events the gating plugin did not register never move it.
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n"))
    assert queue.counts()["gated"] == 1
    assert queue.metrics.unschedulable_pods.get(("SchedulingGates", PROFILE)) == 1
    queue.update(parsed_pod("g"))
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    popped = queue.try_pop()
    assert popped is info and popped.attempts == 1
    assert queue.metrics.unschedulable_pods.get(("SchedulingGates", PROFILE)) == 0


def test_gated_pod_update_keeping_a_gate_stays_gated(queue: SchedulingQueue):
    two = [{"name": "a"}, {"name": "b"}]
    queue.add(parsed_pod("g", extra_spec={"schedulingGates": two}))
    queue.update(parsed_pod("g", extra_spec={"schedulingGates": [{"name": "b"}]}))
    assert queue.counts()["gated"] == 1


class Flaky:
    """A PreEnqueue plugin that raises while ``broken``."""

    name = "Flaky"

    def __init__(self) -> None:
        self.broken = False

    def pre_enqueue(self, pod: Pod) -> None:
        if self.broken:
            raise RuntimeError("plugin bug")


def test_a_raising_pre_enqueue_plugin_gates_the_pod_instead_of_losing_it(clock: FakeClock):
    flaky = Flaky()
    queue = make_queue(clock, pre_enqueue={PROFILE: [flaky]})
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    flaky.broken = True
    # The failed pod goes back through PreEnqueue, which raises: it stays queued, gated.
    queue.add_unschedulable(info, ())
    assert queue.where(info.uid) == "unschedulable"
    assert info.gating_plugin == "Flaky"
    flaky.broken = False
    queue.activate([info.uid])  # the next PreEnqueue run lets it through
    assert queue.where(info.uid) == "active"


class Gate:
    """A PreEnqueue plugin, registered for node additions only, that gates while
    ``closed`` (as DefaultPreemption gates a preemptor while its victims are deleted)."""

    name = "Gate"

    def __init__(self) -> None:
        self.closed = True

    def pre_enqueue(self, pod: Pod) -> Any:
        from ksched.framework.status import Code, Status

        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "wait") if self.closed else None


def test_a_gated_pod_is_re_evaluated_at_the_unschedulable_timeout(clock: FakeClock):
    # upstream movePodsToActiveOrBackoffQueue skips a gated pod only for a non-wildcard
    # event its gating plugin did not register: the timeout flush re-runs PreEnqueue.
    gate = Gate()
    node_add = ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), None)
    queue = make_queue(
        clock,
        hints=_registrations("NodeResourcesFit", extra=[("Gate", node_add)]),
        pre_enqueue={PROFILE: [gate]},
    )
    queue.add(parsed_pod("p"))
    uid = parsed_pod("p").uid
    assert queue.counts()["gated"] == 1
    gate.closed = False  # no event says so
    queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, parsed_pod("v"), None)
    assert queue.counts()["gated"] == 1  # not an event the gating plugin registered
    clock.now += 301
    queue.flush_unschedulable_leftover()
    assert queue.where(uid) == "active"


async def test_the_flushers_survive_an_exception(clock: FakeClock, monkeypatch: pytest.MonkeyPatch):
    queue = make_queue(clock)
    calls = {"n": 0}
    real = queue.flush_backoff_completed

    def flush() -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("boom")
        return real()

    monkeypatch.setattr(queue, "flush_backoff_completed", flush)
    monkeypatch.setattr("ksched.backend.queue.queue.FLUSH_BACKOFF_INTERVAL", 0.001)
    monkeypatch.setattr("ksched.backend.queue.queue.BACKOFF_ORDERING_WINDOW", 0.001)
    task = asyncio.get_running_loop().create_task(queue.run_flushers())
    try:
        for _ in range(200):
            if calls["n"] >= 3:
                break
            clock.now += 0.01
            await asyncio.sleep(0.005)
        assert calls["n"] >= 3 and not task.done()
    finally:
        queue.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# ---- in-flight events --------------------------------------------------------------------


@dataclass
class InFlightCase:
    event: ClusterEvent
    new: Any
    want: str


IN_FLIGHT_CASES = {
    "node-that-fits-added-mid-cycle-requeues": InFlightCase(
        EVENT_NODE_ADD, parsed_node("big", cpu="8"), "backoff"
    ),
    "node-too-small-added-mid-cycle-is-skipped": InFlightCase(
        EVENT_NODE_ADD, parsed_node("small", cpu="1"), "unschedulable"
    ),
    "unregistered-event-mid-cycle-is-ignored": InFlightCase(
        UPDATE_ANNOTATION, parsed_node("n"), "unschedulable"
    ),
}


@pytest.mark.parametrize("case", list(IN_FLIGHT_CASES.values()), ids=list(IN_FLIGHT_CASES))
def test_events_during_the_cycle_are_replayed_on_failure(
    queue: SchedulingQueue, case: InFlightCase
):
    queue.add(parsed_pod("p", cpu="2"))
    info = queue.try_pop()
    assert info is not None
    queue.move_all_to_active_or_backoff(
        case.event, parsed_node("n") if case.event is UPDATE_ANNOTATION else None, case.new
    )
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    assert queue.where(info.uid) == case.want
    assert queue.in_flight_events == 0  # pruned once nothing is in flight


def test_events_before_the_pod_was_popped_are_not_replayed(queue: SchedulingQueue):
    queue.add(parsed_pod("first", cpu="2"))
    queue.add(parsed_pod("second", cpu="2"))
    first = queue.try_pop()
    assert first is not None
    # Recorded for "first" (in flight), before "second" is popped.
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("big", cpu="8"))
    second = queue.try_pop()
    assert second is not None
    queue.add_unschedulable(second, {"NodeResourcesFit"})
    assert queue.where(second.uid) == "unschedulable"
    queue.add_unschedulable(first, {"NodeResourcesFit"})
    assert queue.where(first.uid) == "backoff"
    assert queue.in_flight_events == 0


def test_update_of_the_in_flight_pod_itself_is_replayed(queue: SchedulingQueue):
    gated_spec = {"tolerations": []}
    queue.add(parsed_pod("p", extra_spec=gated_spec))
    info = queue.try_pop()
    assert info is not None
    toleration = {
        "key": "node.kubernetes.io/unschedulable",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    queue.update(parsed_pod("p", extra_spec={"tolerations": [toleration]}))
    queue.add_unschedulable(info, {"NodeUnschedulable"})
    assert queue.where(info.uid) == "backoff"


def test_event_log_keeps_only_what_in_flight_pods_need(queue: SchedulingQueue):
    queue.add(parsed_pod("a"))
    queue.add(parsed_pod("b"))
    a = queue.try_pop()
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n1"))
    b = queue.try_pop()
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n2"))
    assert a is not None and b is not None
    assert queue.in_flight_events == 2
    queue.done(a.uid)
    assert queue.in_flight_events == 1  # "b" only needs the event after it was popped
    queue.done(b.uid)
    assert queue.in_flight_events == 0


def test_no_event_is_recorded_when_nothing_is_in_flight(queue: SchedulingQueue):
    queue.move_all_to_active_or_backoff(EVENT_NODE_ADD, None, parsed_node("n"))
    assert queue.in_flight_events == 0


# ---- deletes, activate, pop ----------------------------------------------------------------


def test_deleted_pod_is_never_popped(queue: SchedulingQueue):
    queue.add(parsed_pod("p"))
    queue.delete("uid-p")
    assert queue.try_pop() is None
    assert len(queue) == 0


def test_pod_deleted_while_in_flight_is_not_requeued(queue: SchedulingQueue):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.delete(info.uid)
    assert queue.add_unschedulable(info, {"NodeResourcesFit"}) is None
    assert queue.where(info.uid) is None


def test_activate_moves_unschedulable_and_marks_in_flight(queue: SchedulingQueue):
    waiting = fail(queue, "waiting", "NodeResourcesFit")
    queue.add(parsed_pod("flying"))
    flying = queue.try_pop()
    assert flying is not None
    queue.activate([waiting.uid, flying.uid])
    assert queue.where(waiting.uid) == "active"
    queue.add_unschedulable(flying, {"NodeResourcesFit"})
    assert queue.where(flying.uid) == "backoff"  # the ForceActivate was replayed


def test_unschedulable_pods_metric_follows_rejections(queue: SchedulingQueue):
    info = fail(queue, "p", "NodeResourcesFit", "NodeName")
    gauge = queue.metrics.unschedulable_pods
    assert gauge.get(("NodeResourcesFit", PROFILE)) == 1
    assert gauge.get(("NodeName", PROFILE)) == 1
    queue.activate([info.uid])
    queue.try_pop()
    assert gauge.get(("NodeResourcesFit", PROFILE)) == 0


def test_incoming_pods_are_counted_by_queue_and_event(queue: SchedulingQueue):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    incoming = queue.metrics.queue_incoming_pods
    assert incoming.get(("active", "UnschedulablePodAdd")) == 1
    assert incoming.get(("unschedulable", "ScheduleAttemptFailure")) == 1


def test_without_hint_registrations_every_event_moves_every_pod(clock: FakeClock):
    queue = SchedulingQueue(clock=clock)
    info = fail(queue, "p", "AnyPlugin")
    queue.move_all_to_active_or_backoff(ClusterEvent(ASSIGNED_POD, ActionType.ADD))
    assert queue.where(info.uid) == "backoff"


async def test_pop_waits_for_a_pod(queue: SchedulingQueue):
    popped = asyncio.get_running_loop().create_task(queue.pop())
    await asyncio.sleep(0)
    assert not popped.done()
    queue.add(parsed_pod("p"))
    info = await asyncio.wait_for(popped, 1)
    assert info is not None and info.pod.name == "p"
    queue.close()
    assert await queue.pop() is None


# ---- nominator -------------------------------------------------------------------------------


def test_nominator_tracks_nominated_pods_per_node(queue: SchedulingQueue):
    nominated = parsed_pod("n", extra_spec={})
    raw = dict(nominated.raw)
    raw["status"] = {**raw["status"], "nominatedNodeName": "node-1"}
    pod = Pod.from_dict(raw)
    queue.add(pod)
    assert [p.name for p in queue.nominator.pods_for_node("node-1")] == ["n"]
    queue.delete(pod.uid)
    assert queue.nominator.pods_for_node("node-1") == []


def test_nominator_keeps_a_scheduler_nomination_until_the_api_catches_up(queue: SchedulingQueue):
    pod = parsed_pod("p")
    queue.nominator.nominate(pod, "node-2")
    queue.nominator.update(pod, parsed_pod("p"))
    assert queue.nominator.node_of(pod.uid) == "node-2"
    queue.nominator.nominate(pod, "")
    assert queue.nominator.node_of(pod.uid) is None


def test_nominator_tells_its_listeners(queue: SchedulingQueue):
    seen: list[tuple[str, str | None]] = []
    queue.nominator.listeners.append(lambda pod, node: seen.append((pod.name, node)))
    pod = parsed_pod("p")
    queue.nominator.nominate(pod, "node-1")
    queue.nominator.nominate(pod, "node-2")
    queue.nominator.delete(pod.uid)
    assert seen == [("p", "node-1"), ("p", "node-2"), ("p", None)]
