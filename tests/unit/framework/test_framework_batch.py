"""Opportunistic batching: pods of one signature placed by one call, same result.

``CountingSnapshot`` forwards to the real Rust ``Snapshot.schedule_batch`` and records
the batch sizes, so the test proves batches really happened; pods are grouped by the
real ``CompiledPod.signature``. Placements must equal the one-by-one path exactly.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ksched._core import CompiledPod, Profile, ScheduleResult, Snapshot
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

    def schedule_batch(self, pods: list[CompiledPod], profile: Profile) -> list[ScheduleResult]:
        self.batches.append(len(pods))
        return self._real.schedule_batch(pods, profile)


def build_cluster() -> InMemoryCluster:
    c = InMemoryCluster()
    for i in range(12):
        c.create("nodes", make_node(f"n{i}", cpu=str(1 + i % 3), memory="8Gi"))
    shapes = [("100m", "200Mi"), ("500m", "1Gi"), ("1", "2Gi")]
    for i in range(60):
        cpu, mem = shapes[(i // 10) % 3]  # runs of ten pods with one signature
        c.create("pods", make_pod(f"p{i:02d}", cpu=cpu, memory=mem))
    return c


async def run(batch_size: int) -> tuple[dict[str, str | None], list[int]]:
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
    return placement, wrapper.batches


@pytest.mark.parametrize("batch_size", [4, 16])
async def test_batching_places_pods_exactly_as_one_by_one(batch_size: int):
    one_by_one, _ = await run(1)
    batched, batches = await run(batch_size)
    assert batched == one_by_one
    assert batches and max(batches) > 1  # batches really happened
    assert max(batches) <= batch_size
