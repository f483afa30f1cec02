"""The scheduler families upstream has that ksched added, fed by a run on the embedded
cluster: algorithm latency, event handling by event label, in-flight events, goroutines,
batching attempts, the unschedulable-timeout flush, queueing hint durations."""

from __future__ import annotations

import asyncio

from prometheus_client import generate_latest

from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod
from tests.helpers import node_of, wait_for


async def test_a_run_feeds_the_families() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", cpu="2"))
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=1)
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        for i in range(4):
            c.create("pods", make_pod(f"p{i}", cpu="100m"))
        c.create("pods", make_pod("big", cpu="64"))
        await wait_for(lambda: all(node_of(c, f"p{i}") for i in range(4)))
        await wait_for(lambda: bool(sched.queue.infos()))
        # A node that frees room: the hints of the rejecting plugin run.
        c.create("nodes", make_node("n2", cpu="128"))
        await wait_for(lambda: node_of(c, "big") == "n2")
        text = generate_latest(sched.metrics.registry).decode()
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert "scheduler_scheduling_algorithm_duration_seconds_count 6.0" in text
    for event in ("NodeAdd", "UnschedulablePodAdd", "UnschedulablePodDelete", "AssignedPodAdd"):
        assert f'scheduler_event_handling_duration_seconds_count{{event="{event}"}}' in text
    assert 'scheduler_inflight_events{event="PodPopped"} 0.0' in text
    assert 'scheduler_goroutines{operation="binding"} 0.0' in text
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="no_hint"}' in text
    assert 'scheduler_queueing_hint_execution_duration_seconds_count{event="NodeAdd",' in text
    assert 'scheduler_cache_size{type="nodes"} 2.0' in text


async def test_a_pod_bound_after_the_unschedulable_timeout_is_counted() -> None:
    c = InMemoryCluster()
    c.create("nodes", make_node("n1", cpu="1"))
    sched = Scheduler(
        c, {"default-scheduler": default_profile()}, seed=1, pod_max_in_unschedulable=0.0
    )
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    try:
        c.create("pods", make_pod("p", cpu="2"))
        await wait_for(lambda: bool(sched.queue.infos()))
        # Room appears without an event the queue hears of: only the flush retries it.
        sched.cache.upsert_node(type(sched.cache.nodes["n1"]).from_dict(make_node("n1", cpu="4")))
        assert sched.queue.flush_unschedulable_leftover() == 1
        await wait_for(lambda: node_of(c, "p") == "n1")
        await wait_for(lambda: sched.metrics.pod_scheduled_after_flush.get() == 1.0)
    finally:
        await sched.shutdown()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
