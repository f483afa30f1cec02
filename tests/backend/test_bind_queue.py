"""The binding queue: priority order, bounded concurrency, the run-ahead limit."""

from __future__ import annotations

import asyncio

import pytest

from ksched.backend.bind_queue import RATE_WINDOW, BindQueue


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("name", "priorities", "want"),
    [
        ("same-priority-in-submission-order", [0, 0, 0], ["j0", "j1", "j2"]),
        ("higher-priority-first", [1, 5, 3], ["j1", "j2", "j0"]),
        ("ties-keep-submission-order", [2, 7, 2, 7], ["j1", "j3", "j0", "j2"]),
        ("negative-priorities-last", [-5, 0, -1], ["j1", "j2", "j0"]),
    ],
)
async def test_jobs_run_in_priority_order(
    name: str, priorities: list[int], want: list[str]
) -> None:
    q = BindQueue(workers=1)
    ran: list[str] = []

    async def job(tag: str) -> None:
        ran.append(tag)

    for i, prio in enumerate(priorities):
        q.submit(prio, job, f"j{i}")
    assert q.backlog == len(priorities)
    await q.idle()
    assert ran == want
    assert q.backlog == 0


async def test_at_most_workers_jobs_run_at_once() -> None:
    q = BindQueue(workers=3)
    gate = asyncio.Event()
    running = 0
    peak = 0

    async def job() -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1

    for _ in range(10):
        q.submit(0, job)
    await settle()
    assert running == 3
    gate.set()
    await q.idle()
    assert peak == 3
    assert q.backlog == 0


async def test_jobs_that_suspend_fill_the_pool_one_worker_per_iteration() -> None:
    q = BindQueue(workers=32)
    gate = asyncio.Event()
    running = 0

    async def job() -> None:
        nonlocal running
        running += 1
        await gate.wait()
        running -= 1

    for _ in range(100):
        q.submit(0, job)
    for _ in range(40):
        await asyncio.sleep(0)
    assert running == 32
    gate.set()
    await q.idle()
    assert q.backlog == 0


async def test_a_burst_of_jobs_that_do_not_suspend_runs_in_one_worker() -> None:
    """No task per job: the worker that drains the burst started one more, which finds
    the heap empty."""
    q = BindQueue(workers=32)
    workers: set[asyncio.Task[object] | None] = set()
    ran: list[int] = []

    async def job(i: int) -> None:
        workers.add(asyncio.current_task())
        ran.append(i)

    before = len(asyncio.all_tasks())
    for i in range(50):
        q.submit(0, job, i)
    assert len(asyncio.all_tasks()) - before == 1  # one worker started by the burst
    await q.idle()
    assert ran == list(range(50))
    assert len(workers) == 1


async def test_a_job_submitted_while_workers_are_busy_jumps_the_waiting_ones() -> None:
    q = BindQueue(workers=1)
    gate = asyncio.Event()
    ran: list[str] = []

    async def job(tag: str) -> None:
        ran.append(tag)
        if tag == "first":
            await gate.wait()

    q.submit(0, job, "first")
    q.submit(0, job, "low-1")
    q.submit(0, job, "low-2")
    await settle()
    q.submit(1000, job, "high")
    gate.set()
    await q.idle()
    assert ran == ["first", "high", "low-1", "low-2"]


async def test_a_failing_job_is_logged_and_the_queue_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    q = BindQueue(workers=1)
    ran: list[int] = []

    async def job(i: int) -> None:
        if i == 1:
            raise RuntimeError("boom")
        ran.append(i)

    for i in range(3):
        q.submit(0, job, i)
    await q.idle()
    assert ran == [0, 2]
    assert "a binding failed unexpectedly" in caplog.text


async def test_slots_are_granted_in_the_same_order_as_jobs() -> None:
    q = BindQueue(workers=1)
    gate = asyncio.Event()
    order: list[str] = []

    async def job(tag: str) -> None:
        order.append(tag)
        if tag == "first":
            await gate.wait()

    async def cycle(tag: str, prio: int) -> None:
        async with q.slot(prio):
            order.append(tag)

    q.submit(0, job, "first")
    await settle()
    q.submit(0, job, "low-job")
    tasks = [
        asyncio.create_task(cycle("high-cycle", 10)),
        asyncio.create_task(cycle("low-cycle", 0)),
    ]
    await settle()
    assert q.backlog == 4
    gate.set()
    await asyncio.gather(*tasks)
    await q.idle()
    assert order == ["first", "high-cycle", "low-job", "low-cycle"]


async def test_a_slot_is_held_until_the_block_ends() -> None:
    q = BindQueue(workers=1)
    inside = asyncio.Event()
    leave = asyncio.Event()
    ran: list[str] = []

    async def cycle() -> None:
        async with q.slot(5):
            inside.set()
            await leave.wait()

    async def job() -> None:
        ran.append("job")

    task = asyncio.create_task(cycle())
    await inside.wait()
    q.submit(100, job)
    await settle()
    assert ran == []  # the only worker is held by the cycle
    leave.set()
    await task
    await q.idle()
    assert ran == ["job"]


async def test_a_cycle_cancelled_while_waiting_for_a_slot_is_counted_out() -> None:
    q = BindQueue(workers=1)
    gate = asyncio.Event()

    async def job() -> None:
        await gate.wait()

    async def cycle() -> None:
        async with q.slot(0):
            raise AssertionError("never granted")

    q.submit(0, job)
    await settle()
    task = asyncio.create_task(cycle())
    await settle()
    assert q.backlog == 2
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert q.backlog == 1
    gate.set()
    await q.idle()
    assert q.backlog == 0


@pytest.mark.parametrize(
    ("name", "finished", "span", "horizon", "min_run_ahead", "want"),
    [
        ("no-bindings-yet-the-floor", 0, 0.0, 0.02, 32, 32),
        ("slow-api-server-the-floor", 100, 1.0, 0.02, 32, 32),
        ("fast-bindings-raise-the-limit", 4000, 1.0, 0.02, 32, 80),
        ("longer-horizon", 1000, 1.0, 0.5, 8, 500),
    ],
)
async def test_the_limit_follows_the_measured_binding_rate(
    name: str, finished: int, span: float, horizon: float, min_run_ahead: int, want: int
) -> None:
    clock = Clock()
    q = BindQueue(workers=8, min_run_ahead=min_run_ahead, horizon=horizon, clock=clock)

    async def job() -> None:
        pass

    start = clock.now
    for i in range(finished):
        clock.now = start + span * (i + 1) / finished
        q.submit(0, job)
        await q.idle()
    assert q.limit == want
    assert q.room() == want


async def test_the_rate_forgets_bindings_older_than_the_window() -> None:
    clock = Clock()
    q = BindQueue(workers=1, clock=clock)

    async def job() -> None:
        pass

    for _ in range(50):
        q.submit(0, job)
    await q.idle()
    assert q.rate() > 0
    clock.now += RATE_WINDOW + 0.1
    assert q.rate() == 0.0


async def test_wait_for_room_returns_once_the_backlog_drops_below_the_limit() -> None:
    q = BindQueue(workers=2, min_run_ahead=2)
    gates = [asyncio.Event() for _ in range(2)]

    async def job(i: int) -> None:
        await gates[i].wait()

    q.submit(0, job, 0)
    q.submit(0, job, 1)
    assert q.room() == 0
    waiter = asyncio.create_task(q.wait_for_room())
    await settle()
    assert not waiter.done()
    gates[0].set()
    await asyncio.wait_for(waiter, 1)
    assert q.room() == 1
    gates[1].set()
    await q.idle()


async def test_wake_ends_a_wait_for_room() -> None:
    q = BindQueue(workers=1, min_run_ahead=1)
    gate = asyncio.Event()

    async def job() -> None:
        await gate.wait()

    q.submit(0, job)
    waiter = asyncio.create_task(q.wait_for_room())
    await settle()
    q.wake()
    await asyncio.wait_for(waiter, 1)
    assert q.room() == 0
    gate.set()
    await q.idle()


def test_a_queue_needs_a_worker() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        BindQueue(workers=0)
