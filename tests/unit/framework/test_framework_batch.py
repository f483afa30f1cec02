"""Opportunistic batching: pods of one signature placed by one call, same result.

The Rust core does not offer ``Snapshot.schedule_batch`` yet; ``BatchingSnapshot``
emulates its contract (place in order, accounting each placed pod before the next, and
return with the snapshot unchanged) on top of the one-pod calls, so the Python side of
batching is exercised and compared with the one-by-one path.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ksched._core import CompiledPod, Profile, ScheduleResult, Snapshot
from ksched.backend.queue import QueuedPodInfo
from ksched.framework.profile import default_profile
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod


class BatchingSnapshot:
    def __init__(self, real: Snapshot) -> None:
        self._real = real
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def schedule_batch(self, pods: list[CompiledPod], profile: Profile) -> list[ScheduleResult]:
        self.batches.append(len(pods))
        results, placed = [], []
        for pod in pods:
            r = self._real.schedule(pod, profile)
            results.append(r)
            if r.node is not None:
                self._real.assume(pod, r.node)
                placed.append(pod.uid)
        for uid in placed:
            self._real.remove_pod(uid)
        return results


def signature(info: QueuedPodInfo) -> object:
    pod = info.pod
    return (pod.namespace, tuple(sorted(pod.requests.items())), pod.priority)


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
    wrapper = BatchingSnapshot(sched.cache.snapshot)
    if batch_size > 1:
        sched.cache.snapshot = wrapper  # type: ignore[assignment]
        sched.signature = signature  # type: ignore[method-assign]
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
