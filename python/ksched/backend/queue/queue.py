"""The scheduling queue, with kube-scheduler's three sub-queues.

* **activeQ** holds pods ready to be tried, ordered by the QueueSort rule (PrioritySort:
  higher ``spec.priority`` first, then earlier enqueue time).
* **backoffQ** holds pods that failed and wait out their backoff,
  ``initial * 2^(attempts-1)`` capped at the maximum (1s → 10s by default); a flush every
  second moves the expired ones to activeQ.
* **unschedulablePods** holds pods that failed and wait for a cluster change that might
  help; a cluster event moves them to backoffQ (or straight to activeQ once their backoff
  has expired), and a flush every 30 seconds moves those that waited longer than 5
  minutes.

Scheduling gates (PreEnqueue): a pod with ``spec.schedulingGates`` waits in
unschedulablePods, counted as gated, until an update removes its gates.

No wake-up is lost: a cluster event that arrives while a pod is in its scheduling cycle
is remembered (``move request cycle``), and a pod that then fails goes to backoffQ rather
than unschedulablePods, as upstream does without queueing hints.

All timing comes from an injectable clock so tests can drive it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ksched._core import CompiledPod
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod

FLUSH_BACKOFF_INTERVAL = 1.0
FLUSH_UNSCHEDULABLE_INTERVAL = 30.0
UNSCHEDULABLE_MAX_DURATION = 300.0


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the queue with its scheduling history."""

    pod: Pod
    compiled: CompiledPod
    #: When the pod entered the queue or last failed (QueueSort tie-breaker, backoff base).
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    #: Plugins that rejected the pod in its last attempt.
    unschedulable_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    #: The scheduling cycle in which the pod was last popped.
    cycle: int = 0

    @property
    def uid(self) -> str:
        return self.pod.uid


class SchedulingQueue:
    """activeQ, backoffQ and unschedulablePods, with PrioritySort ordering."""

    def __init__(
        self,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.clock = clock
        self._seq = itertools.count()
        self._active: list[tuple[int, float, int, QueuedPodInfo]] = []
        self._active_uids: dict[str, QueuedPodInfo] = {}
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._backoff_uids: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._wakeup = asyncio.Event()
        self._closed = False
        self.scheduling_cycle = 0
        self._move_request_cycle = -1

    # ---- sizes ---------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        gated = sum(1 for p in self._unschedulable.values() if p.gated)
        return {
            "active": len(self._active_uids),
            "backoff": len(self._backoff_uids),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def __len__(self) -> int:
        return len(self._active_uids) + len(self._backoff_uids) + len(self._unschedulable)

    def has(self, uid: str) -> bool:
        return (
            uid in self._active_uids
            or uid in self._backoff_uids
            or uid in self._unschedulable
            or uid in self._in_flight
        )

    # ---- internal moves ------------------------------------------------------------

    def _push_active(self, info: QueuedPodInfo) -> None:
        heapq.heappush(self._active, (-info.pod.priority, info.timestamp, next(self._seq), info))
        self._active_uids[info.uid] = info
        self._wakeup.set()

    def _push_backoff(self, info: QueuedPodInfo) -> None:
        heapq.heappush(self._backoff, (self.backoff_expiry(info), next(self._seq), info))
        self._backoff_uids[info.uid] = info

    def _remove_everywhere(self, uid: str) -> QueuedPodInfo | None:
        # Heaps are cleaned lazily: entries whose uid is no longer registered are skipped.
        for table in (self._active_uids, self._backoff_uids, self._unschedulable):
            info = table.pop(uid, None)
            if info is not None:
                return info
        return None

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        if info.attempts <= 0:
            return 0.0
        d = self.initial_backoff * 2.0 ** (info.attempts - 1)
        return min(d, self.max_backoff)

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + self.backoff_duration(info)

    def _is_backing_off(self, info: QueuedPodInfo) -> bool:
        return self.backoff_expiry(info) > self.clock()

    def _requeue(self, info: QueuedPodInfo) -> None:
        """Move a failed pod out of unschedulablePods: backoffQ or activeQ."""
        if self._is_backing_off(info):
            self._push_backoff(info)
        else:
            self._push_active(info)

    # ---- events from informers -------------------------------------------------------

    def add(self, pod: Pod, compiled: CompiledPod | None = None) -> None:
        """A new unscheduled pod this scheduler is responsible for."""
        if self.has(pod.uid):
            self.update(pod, compiled)
            return
        info = QueuedPodInfo(pod=pod, compiled=compiled or compile_pod(pod), timestamp=self.clock())
        self._admit(info)

    def _admit(self, info: QueuedPodInfo) -> None:
        if info.pod.scheduling_gates:
            info.gated = True
            self._unschedulable[info.uid] = info
            return
        info.gated = False
        self._push_active(info)

    def update(self, pod: Pod, compiled: CompiledPod | None = None) -> None:
        """An unscheduled pod changed: keep its history, use the new object."""
        uid = pod.uid
        flying = self._in_flight.get(uid)
        if flying is not None:
            flying.pod, flying.compiled = pod, compiled or compile_pod(pod)
            return
        info = self._remove_everywhere(uid)
        if info is None:
            self.add(pod, compiled)
            return
        info.pod, info.compiled = pod, compiled or compile_pod(pod)
        if info.gated:
            self._admit(info)
        elif uid in self._unschedulable or info.attempts:
            # An update may make the pod schedulable: retry it (upstream moves updated
            # unschedulable pods to backoffQ or activeQ).
            self._requeue(info)
        else:
            self._push_active(info)

    def delete(self, uid: str) -> None:
        self._remove_everywhere(uid)
        self._in_flight.pop(uid, None)

    def move_all_to_active_or_backoff(self) -> None:
        """A cluster event that may make unschedulable pods schedulable."""
        self._move_request_cycle = self.scheduling_cycle
        if not self._unschedulable:
            return
        for uid in [u for u, p in self._unschedulable.items() if not p.gated]:
            self._requeue(self._unschedulable.pop(uid))

    # ---- the scheduling loop's side ------------------------------------------------

    def try_pop(self) -> QueuedPodInfo | None:
        """The next pod to try, or None when activeQ is empty."""
        while self._active:
            _, _, _, info = heapq.heappop(self._active)
            if self._active_uids.get(info.uid) is not info:
                continue  # removed or re-queued since it was pushed
            del self._active_uids[info.uid]
            self.scheduling_cycle += 1
            info.cycle = self.scheduling_cycle
            info.attempts += 1
            if info.initial_attempt_timestamp is None:
                info.initial_attempt_timestamp = self.clock()
            self._in_flight[info.uid] = info
            return info
        return None

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to try; waits while activeQ is empty. None once closed."""
        while True:
            info = self.try_pop()
            if info is not None or self._closed:
                return info
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, uid: str) -> None:
        """The pod's scheduling cycle (and binding) finished."""
        self._in_flight.pop(uid, None)

    def add_unschedulable(self, info: QueuedPodInfo, plugins: set[str]) -> None:
        """A pod failed its attempt. It waits in unschedulablePods, or in backoffQ when a
        cluster event arrived during its cycle or when it failed with an error."""
        self._in_flight.pop(info.uid, None)
        if self.has(info.uid):
            return  # deleted and re-added meanwhile
        info.timestamp = self.clock()
        info.unschedulable_plugins = set(plugins)
        if not plugins or self._move_request_cycle >= info.cycle:
            self._push_backoff(info)
        else:
            self._unschedulable[info.uid] = info

    def requeue_after_error(self, info: QueuedPodInfo) -> None:
        """A pod whose binding failed goes back through backoff."""
        self._in_flight.pop(info.uid, None)
        if self.has(info.uid):
            return
        info.timestamp = self.clock()
        self._push_backoff(info)

    # ---- periodic flushes ------------------------------------------------------------

    def flush_backoff_completed(self) -> int:
        now = self.clock()
        moved = 0
        while self._backoff and self._backoff[0][0] <= now:
            _, _, info = heapq.heappop(self._backoff)
            if self._backoff_uids.get(info.uid) is not info:
                continue
            del self._backoff_uids[info.uid]
            self._push_active(info)
            moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        now = self.clock()
        stale = [
            uid
            for uid, p in self._unschedulable.items()
            if not p.gated and now - p.timestamp > UNSCHEDULABLE_MAX_DURATION
        ]
        for uid in stale:
            self._requeue(self._unschedulable.pop(uid))
        return len(stale)

    async def run_flushers(self) -> None:
        """Flush backoffQ every second and old unschedulable pods every 30 seconds."""
        last_unschedulable = self.clock()
        while not self._closed:
            await asyncio.sleep(FLUSH_BACKOFF_INTERVAL)
            self.flush_backoff_completed()
            if self.clock() - last_unschedulable >= FLUSH_UNSCHEDULABLE_INTERVAL:
                last_unschedulable = self.clock()
                self.flush_unschedulable_leftover()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
