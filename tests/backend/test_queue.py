"""The scheduling queue: ordering, backoff, flushes, gates and lost wake-ups."""

from __future__ import annotations

import asyncio

import pytest

from ksched.backend.queue import SchedulingQueue
from tests.helpers import parsed_pod


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(initial_backoff=1.0, max_backoff=10.0, clock=clock)


def test_higher_priority_first_then_earlier_enqueue(queue: SchedulingQueue, clock: FakeClock):
    queue.add(parsed_pod("low-early", priority=0))
    clock.now += 1
    queue.add(parsed_pod("high", priority=100))
    clock.now += 1
    queue.add(parsed_pod("low-late", priority=0))
    order = [queue.try_pop().pod.name for _ in range(3)]  # type: ignore[union-attr]
    assert order == ["high", "low-early", "low-late"]
    assert queue.try_pop() is None


@pytest.mark.parametrize(
    ("attempts", "want"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]
)
def test_backoff_doubles_up_to_the_max(queue: SchedulingQueue, attempts: int, want: float):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    info.attempts = attempts
    assert queue.backoff_duration(info) == want


def test_failed_pod_waits_for_an_event_then_its_backoff(queue: SchedulingQueue, clock: FakeClock):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    assert queue.counts()["unschedulable"] == 1
    clock.now += 0.5
    queue.move_all_to_active_or_backoff()  # still backing off (1s): goes to backoffQ
    assert queue.counts() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    assert queue.flush_backoff_completed() == 0
    clock.now += 0.6
    assert queue.flush_backoff_completed() == 1
    assert queue.try_pop() is info


def test_event_after_backoff_expired_goes_straight_to_active(
    queue: SchedulingQueue, clock: FakeClock
):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    clock.now += 5
    queue.move_all_to_active_or_backoff()
    assert queue.counts()["active"] == 1


def test_event_during_the_cycle_is_not_lost(queue: SchedulingQueue):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.move_all_to_active_or_backoff()  # e.g. a node was added while we scheduled
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    assert queue.counts()["backoff"] == 1
    assert queue.counts()["unschedulable"] == 0


def test_unschedulable_pods_are_flushed_after_five_minutes(
    queue: SchedulingQueue, clock: FakeClock
):
    queue.add(parsed_pod("p"))
    info = queue.try_pop()
    assert info is not None
    queue.add_unschedulable(info, {"NodeResourcesFit"})
    clock.now += 299
    assert queue.flush_unschedulable_leftover() == 0
    clock.now += 2
    assert queue.flush_unschedulable_leftover() == 1
    assert queue.counts()["active"] == 1


def test_gated_pod_waits_until_its_gates_are_removed(queue: SchedulingQueue):
    gated = parsed_pod("g", extra_spec={"schedulingGates": [{"name": "example.com/wait"}]})
    queue.add(gated)
    assert queue.counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    queue.move_all_to_active_or_backoff()
    assert queue.counts()["gated"] == 1
    queue.update(parsed_pod("g"))
    assert queue.counts()["active"] == 1


def test_deleted_pod_is_never_popped(queue: SchedulingQueue):
    queue.add(parsed_pod("p"))
    queue.delete("uid-p")
    assert queue.try_pop() is None
    assert len(queue) == 0


async def test_pop_waits_for_a_pod(queue: SchedulingQueue):
    popped = asyncio.get_running_loop().create_task(queue.pop())
    await asyncio.sleep(0)
    assert not popped.done()
    queue.add(parsed_pod("p"))
    info = await asyncio.wait_for(popped, 1)
    assert info is not None and info.pod.name == "p"
    queue.close()
    assert await queue.pop() is None
