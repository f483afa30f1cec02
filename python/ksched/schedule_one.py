"""One scheduling cycle, and the binding cycle it spawns.

Scheduling cycle (synchronous, on the event loop): pick the pod's profile, run the
built-in Filter/Score as one call into Rust, and either assume the pod on the chosen
node and spawn its binding, or record the failure (FailedScheduling event, PodScheduled
condition False with reason Unschedulable) and hand the pod back to the queue.

Binding cycle (an asyncio task): POST the Binding. On success the pod stays assumed
until the informer's event for the bound pod confirms it; on failure the pod is
forgotten from the cache and goes back to the queue through backoff.
"""

from __future__ import annotations

import asyncio
import logging
import time
from array import array
from typing import TYPE_CHECKING

from ksched.backend.queue import QueuedPodInfo
from ksched.cluster import APIError, NotFound
from ksched.framework.diagnosis import ERR_NO_NODES_AVAILABLE, fit_error_message

if TYPE_CHECKING:
    from ksched.scheduler import Scheduler

log = logging.getLogger(__name__)


class SchedulingStats:
    """Counters and attempt latencies (nanoseconds) for reports and benchmarks."""

    __slots__ = ("attempt_ns", "bind_errors", "bound", "scheduled", "unschedulable")

    def __init__(self) -> None:
        self.attempt_ns = array("q")
        self.scheduled = 0
        self.unschedulable = 0
        self.bound = 0
        self.bind_errors = 0


class Binder:
    """Runs binding cycles as tasks and tracks the ones in flight."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched
        self._in_flight: set[asyncio.Task[None]] = set()

    def spawn(self, info: QueuedPodInfo, node: str, profile_name: str) -> None:
        task = asyncio.get_running_loop().create_task(self._bind(info, node, profile_name))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def _bind(self, info: QueuedPodInfo, node: str, profile_name: str) -> None:
        sched = self._sched
        pod = info.pod
        try:
            await sched.api.bind(
                namespace=pod.namespace, name=pod.name, uid=pod.uid, node_name=node
            )
        except (TimeoutError, APIError, OSError) as exc:
            sched.stats.bind_errors += 1
            sched.cache.forget(pod.uid)
            if isinstance(exc, NotFound):
                sched.queue.done(pod.uid)
                return  # the pod is gone; nothing to retry
            log.warning("binding %s to %s failed: %s", pod.key, node, exc)
            sched.recorder.failed_scheduling(pod, f"Binding rejected: {exc}", profile_name)
            sched.queue.requeue_after_error(info)
            return
        sched.stats.bound += 1
        sched.queue.done(pod.uid)
        sched.recorder.scheduled(pod, node, profile_name)

    async def drain(self) -> None:
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)


def schedule_one(sched: Scheduler, info: QueuedPodInfo) -> None:
    """Run one scheduling cycle for ``info``."""
    pod = info.pod
    profile = sched.profiles.get(pod.scheduler_name)
    if profile is None or pod.deletion_timestamp is not None or sched.cache.has_pod(pod.uid):
        # Not ours (anymore), being deleted, or already assumed/bound: skip, as
        # upstream's skipPodSchedule does.
        sched.queue.done(pod.uid)
        return

    start = time.perf_counter_ns()
    result = sched.cache.snapshot.schedule(info.compiled, profile.kernels)
    node = result.node
    if node is not None:
        sched.cache.assume(pod, info.compiled, node)
        sched.stats.attempt_ns.append(time.perf_counter_ns() - start)
        sched.stats.scheduled += 1
        sched.binder.spawn(info, node, profile.scheduler_name)
        return

    if result.num_all_nodes == 0:
        message = ERR_NO_NODES_AVAILABLE
        plugins: set[str] = set()
    else:
        message = fit_error_message(result.num_all_nodes, result.reason_counts())
        plugins = {plugin for _, _, plugin, _ in result.statuses}
    sched.stats.attempt_ns.append(time.perf_counter_ns() - start)
    sched.stats.unschedulable += 1
    sched.queue.add_unschedulable(info, plugins)
    record_failure(sched, info, message, profile.scheduler_name)


def record_failure(sched: Scheduler, info: QueuedPodInfo, message: str, profile_name: str) -> None:
    """FailedScheduling event and the PodScheduled=False condition, in the background."""
    pod = info.pod
    log.debug("unable to schedule pod %s: %s", pod.key, message)
    sched.recorder.failed_scheduling(pod, message, profile_name)
    patch = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                }
            ]
        }
    }

    async def _patch() -> None:
        try:
            await sched.api.patch_pod_status(namespace=pod.namespace, name=pod.name, patch=patch)
        except (APIError, OSError) as exc:
            log.warning("could not update the PodScheduled condition of %s: %s", pod.key, exc)

    asyncio.get_running_loop().create_task(_patch())
