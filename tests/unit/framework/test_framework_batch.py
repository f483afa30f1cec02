"""Opportunistic batching: pods of one signature placed by one call, same result.

``CountingSnapshot`` forwards to the real Rust ``Snapshot.schedule_batch`` and records
the batch sizes, so the test proves batches really happened; pods are grouped by the
real ``CompiledPod.signature``. Placements must equal the one-by-one path exactly.
"""

from __future__ import annotations

import asyncio
from typing import Any, NamedTuple

import pytest

from ksched._core import CompiledPod, EvaluationCounts, Profile, ScheduleResult, Snapshot
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod


class CountingSnapshot:
    def __init__(self, real: Snapshot) -> None:
        self._real = real
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def schedule_batch(
        self, pods: list[CompiledPod], profile: Profile, counts: EvaluationCounts | None = None
    ) -> list[ScheduleResult]:
        self.batches.append(len(pods))
        return self._real.schedule_batch(pods, profile, counts)


def build_cluster() -> InMemoryCluster:
    c = InMemoryCluster()
    for i in range(12):
        c.create("nodes", make_node(f"n{i}", cpu=str(1 + i % 3), memory="8Gi"))
    shapes = [("100m", "200Mi"), ("500m", "1Gi"), ("1", "2Gi")]
    for i in range(60):
        cpu, mem = shapes[(i // 10) % 3]  # runs of ten pods with one signature
        c.create("pods", make_pod(f"p{i:02d}", cpu=cpu, memory=mem))
    return c


class Run(NamedTuple):
    placement: dict[str, str | None]
    batches: list[int]
    evaluations: dict[tuple[str, ...], float]
    #: Observations of scheduler_framework_extension_point_duration_seconds per series.
    extension_points: dict[tuple[str, ...], int]


async def run(batch_size: int) -> Run:
    c = build_cluster()
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=7, batch_size=batch_size)
    wrapper = CountingSnapshot(sched.cache.snapshot)
    if batch_size > 1:
        sched.cache.snapshot = wrapper  # type: ignore[assignment]
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    deadline = asyncio.get_running_loop().time() + 10
    while sched.stats.scheduled + sched.stats.unschedulable < 60:
        assert asyncio.get_running_loop().time() < deadline, "not every pod was tried"
        await asyncio.sleep(0.002)
    await sched.shutdown()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    placement = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in c.objects("pods")}
    points = {
        labels: series.count
        for labels, series in sched.metrics.framework_extension_point_duration.series.items()
    }
    return Run(placement, wrapper.batches, sched.metrics.plugin_evaluation.totals(), points)


@pytest.mark.parametrize("batch_size", [4, 16])
async def test_batching_places_pods_exactly_as_one_by_one(batch_size: int):
    one_by_one = await run(1)
    batched = await run(batch_size)
    assert batched.placement == one_by_one.placement
    batches = batched.batches
    # scheduler_plugin_evaluation_total counts the same attempts.
    assert batched.evaluations == one_by_one.evaluations
    assert one_by_one.evaluations[("NodeResourcesFit", "Filter", "default-scheduler")] >= 60 * 12
    # Every extension point is recorded as often (a batched pod's binding cycle records
    # PreBindPreFlight Skip and PreBind Success without asking the plugins again).
    assert batched.extension_points == one_by_one.extension_points
    bound = sum(1 for n in one_by_one.placement.values() if n)
    assert bound > 1
    assert one_by_one.extension_points[("PreBindPreFlight", "Skip", "default-scheduler")] == bound
    assert one_by_one.extension_points[("PreBind", "Success", "default-scheduler")] == bound
    assert batches and max(batches) > 1  # batches really happened
    assert max(batches) <= batch_size


async def test_a_signature_whose_pods_fit_nowhere_is_tried_one_pod_at_a_time():
    """After a batch with a pod that fit no node, pods of that signature go one by one
    (each failing cycle runs preemption, whose effects the next pod must see), until
    one of them fits again."""
    c = InMemoryCluster()
    c.create("nodes", make_node("n0", cpu="1", memory="8Gi"))
    for i in range(20):
        c.create("pods", make_pod(f"big{i}", cpu="2"))  # fits nowhere
    sched = Scheduler(c, {"default-scheduler": default_profile()}, seed=7, batch_size=8)
    wrapper = CountingSnapshot(sched.cache.snapshot)
    sched.cache.snapshot = wrapper  # type: ignore[assignment]
    await sched.start()
    task = asyncio.get_running_loop().create_task(sched.run())
    deadline = asyncio.get_running_loop().time() + 10
    while sched.stats.unschedulable < 20:
        assert asyncio.get_running_loop().time() < deadline, "not every pod was tried"
        await asyncio.sleep(0.002)
    # The first batch failed; the twelve pods left were tried alone (no batch calls).
    assert wrapper.batches == [8]
    # Once a pod of the signature fits, batching resumes.
    c.create("nodes", make_node("n1", cpu="64", memory="64Gi"))
    while sum(1 for p in c.objects("pods") if p["spec"].get("nodeName")) < 20:
        assert asyncio.get_running_loop().time() < deadline + 20, "pods not bound"
        await asyncio.sleep(0.002)
    for i in range(8):
        c.create("pods", make_pod(f"more{i}", cpu="2"))
    while sum(1 for p in c.objects("pods") if p["spec"].get("nodeName")) < 28:
        assert asyncio.get_running_loop().time() < deadline + 30, "pods not bound"
        await asyncio.sleep(0.002)
    await sched.shutdown()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert len(wrapper.batches) >= 2 and max(wrapper.batches[1:]) > 1
