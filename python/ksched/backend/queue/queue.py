"""The scheduling queue: activeQ, backoffQ and unschedulablePods, with queueing hints.

Semantics follow kube-scheduler v1.36 (``SchedulerQueueingHints`` and
``SchedulerPopFromBackoffQ`` on, as by default):

* **activeQ** holds pods ready to be tried, ordered by the profile's QueueSort
  (PrioritySort: higher ``spec.priority`` first, then earlier enqueue time).
* **backoffQ** holds pods that wait out their backoff before a retry:
  ``initial * 2^(n-1)`` capped at the maximum (1s → 10s by default), where ``n`` counts
  the pod's unschedulable attempts, or its consecutive errors when the last attempt
  ended with an error (errors wait in a separate heap). Expirations are truncated to
  one-second *ordering windows*; a pod completes its backoff once the window after its
  expiration begins, and a flush at every window start moves those pods to activeQ.
  Within a window the backoffQ is ordered like activeQ, and when activeQ is empty the
  scheduler pops the head of the backoffQ instead of idling (never from the error heap).
* **unschedulablePods** holds pods that were rejected and wait for a cluster event that
  may help them. Pods that stay longer than 5 minutes are moved out by a flush every 30
  seconds. Gated pods (PreEnqueue rejected them) wait here too, counted as ``gated``.

**Queueing hints.** A cluster event (``move_all_to_active_or_backoff``) is first checked
against the events any plugin registered; an event nobody registered costs one cached
dict lookup. For each unschedulable pod, only the hints of the plugins that rejected it
(its *unschedulable* and *pending* plugins) run: all ``QUEUE_SKIP`` leaves it where it
is; ``QUEUE`` from a plugin that answered Pending moves it straight to activeQ; ``QUEUE``
from an unschedulable plugin moves it to backoffQ, or to activeQ when its backoff has
already expired. A pod with no rejector plugins (it failed with an error) is moved by
any event. A hint that raises counts as ``QUEUE``.

**In-flight events.** From the moment a pod is popped until ``done`` (end of its
scheduling cycle, or after WaitOnPermit), every event of interest is recorded. When the
pod fails, the recorded events that arrived after it was popped are replayed through its
hints, so a node added mid-cycle still wakes it up. The log is pruned as the oldest
in-flight pod finishes, so it never outgrows the window of the in-flight pods.

All timing comes from an injectable clock so tests can drive it.
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ksched._core import CompiledPod
from ksched.api.pod import Pod
from ksched.backend.compile import compile_pod
from ksched.backend.queue.cluster_event import (
    BACKOFF_COMPLETE,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
    is_wildcard,
    match_any_cluster_event,
    match_cluster_events,
    pod_scheduling_properties_change,
)
from ksched.backend.queue.nominator import Nominator
from ksched.metrics import HistogramSeries, SchedulerMetrics

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION",
    "FLUSH_BACKOFF_INTERVAL",
    "FLUSH_UNSCHEDULABLE_INTERVAL",
    "PreEnqueuePlugin",
    "QueuedPodInfo",
    "QueueingStrategy",
    "SchedulingQueue",
]

FLUSH_BACKOFF_INTERVAL = 1.0
FLUSH_UNSCHEDULABLE_INTERVAL = 30.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0
#: The backoffQ ordering window (KEP-5142).
BACKOFF_ORDERING_WINDOW = 1.0
#: Kept for callers of the previous name.
UNSCHEDULABLE_MAX_DURATION = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"

_EMPTY: frozenset[str] = frozenset()
_perf = time.perf_counter
_POD_ADD = EVENT_UNSCHEDULED_POD_ADD.label
_POD_UPDATE = EVENT_UNSCHEDULED_POD_UPDATE.label
_NO_EXPIRY = -math.inf


class _Status(Protocol):
    """What the queue needs of a PreEnqueue plugin's status."""

    def is_success(self) -> bool: ...


class PreEnqueuePlugin(Protocol):
    """A plugin that decides whether a pod may enter activeQ/backoffQ at all."""

    @property
    def name(self) -> str: ...

    def pre_enqueue(self, pod: Pod) -> _Status | None: ...


class QueueingStrategy(enum.IntEnum):
    """Where an event sends an unschedulable pod (upstream ``queueingStrategy``)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the queue with its scheduling history."""

    pod: Pod
    compiled: CompiledPod
    #: When the pod entered the queue or last failed (QueueSort tie-breaker, backoff base).
    timestamp: float
    #: The pod's uid (fixed for the life of the pod object).
    uid: str = ""
    #: When the pod first entered activeQ (start of the scheduling SLI).
    initial_attempt_timestamp: float | None = None
    #: Scheduling attempts so far (incremented at pop).
    attempts: int = 0
    #: Attempts that ended rejected by plugins (base of the backoff).
    unschedulable_count: int = 0
    #: Attempts in a row that ended with an error (base of the error backoff).
    consecutive_errors_count: int = 0
    #: Plugins that rejected the pod (Unschedulable/UnschedulableAndUnresolvable) last time.
    unschedulable_plugins: frozenset[str] = _EMPTY
    #: Plugins that answered Pending last time: their hint's Queue skips the backoff.
    pending_plugins: frozenset[str] = _EMPTY
    #: The PreEnqueue plugin that keeps the pod out of activeQ ("" when not gated).
    gating_plugin: str = ""
    gating_plugin_events: tuple[ClusterEvent, ...] = ()
    #: Cached backoff expiration (window-aligned), None until computed.
    backoff_expiration: float | None = None
    #: The scheduling cycle in which the pod was last popped.
    cycle: int = 0
    #: Identifies the pod's live heap entry (stale entries are skipped).
    queue_seq: int = 0
    #: Deleted while in flight: the failure must not requeue it.
    deleted: bool = False
    #: Moved out of unschedulablePods by the timeout (``pod_scheduled_after_flush``).
    flushed: bool = False
    #: ``(compiled, signature)``: the scheduling signature of ``compiled``, computed
    #: once per compiled form (the scheduler's batching reads it several times a cycle).
    signature_memo: tuple[CompiledPod, object] | None = None

    def __post_init__(self) -> None:
        if not self.uid:
            self.uid = self.pod.uid

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)

    def rejector_plugins(self) -> frozenset[str]:
        return self.unschedulable_plugins | self.pending_plugins


SortKey = Callable[[QueuedPodInfo], Any]


def priority_sort_key(info: QueuedPodInfo) -> tuple[int, float]:
    """PrioritySort: higher priority first, then the earlier timestamp."""
    return (-info.pod.priority, info.timestamp)


HintRegistrations = Mapping[str, Sequence[tuple[str, ClusterEventWithHint]]]


class SchedulingQueue:
    """activeQ, backoffQ and unschedulablePods shared by every profile."""

    def __init__(
        self,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        clock: Callable[[], float] | None = None,
        hints: HintRegistrations | None = None,
        pre_enqueue: Mapping[str, Sequence[PreEnqueuePlugin]] | None = None,
        sort_key: SortKey = priority_sort_key,
        pop_from_backoff: bool = True,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        """``hints`` maps a profile (schedulerName) to ``(plugin, registration)`` pairs;
        ``None`` means "no hints registered": every event moves every unschedulable pod
        (the behaviour without queueing hints). ``pre_enqueue`` maps a profile to its
        PreEnqueue plugins."""
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.clock = clock or time.monotonic
        self.sort_key = sort_key
        self.pop_from_backoff = pop_from_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.metrics = metrics or SchedulerMetrics()
        self.nominator = Nominator()
        #: Whether a pod is a member of a scheduling.k8s.io pod group (set with the
        #: GenericWorkload gate): such a pod that failed goes back through backoff.
        self.pod_group_member: Callable[[Pod], bool] | None = None
        self._hints_by_profile: dict[str, list[tuple[str, ClusterEventWithHint]]] | None = (
            None if hints is None else {p: list(regs) for p, regs in hints.items()}
        )
        self._registered_events = (
            None if hints is None else [reg.event for regs in hints.values() for _, reg in regs]
        )
        self._plugin_events: dict[str, tuple[ClusterEvent, ...]] = {}
        for regs in (hints or {}).values():
            for plugin, reg in regs:
                self._plugin_events[plugin] = (*self._plugin_events.get(plugin, ()), reg.event)
        self._pre_enqueue = {p: list(pls) for p, pls in (pre_enqueue or {}).items() if pls}
        #: (profile, gating plugin) → the profile's PreEnqueue plugins, that one first.
        self._gating_first: dict[tuple[str, str], list[PreEnqueuePlugin]] = {}
        # Memoised per incoming event (a small, finite set).
        self._interest: dict[ClusterEvent, bool] = {}
        self._hints_for: dict[
            tuple[str, ClusterEvent], list[tuple[str, QueueingHintFn | None]]
        ] = {}

        self._seq = itertools.count(1)
        #: activeQ's heap: ``(key, seq, info)``, or ``(-priority, timestamp, seq, info)``
        #: for PrioritySort's order (the same order, flat: a heap comparison then
        #: compares numbers, not a tuple of tuples). ``seq`` and ``info`` end both.
        self._active: list[tuple[Any, ...]] = []
        self._priority_order = sort_key is priority_sort_key
        self._active_uids: dict[str, QueuedPodInfo] = {}
        self._backoff: list[tuple[float, Any, int, QueuedPodInfo]] = []
        self._error_backoff: list[tuple[float, int, QueuedPodInfo]] = []
        self._backoff_uids: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        # In flight: uid → (info, event sequence number when popped).
        self._in_flight: dict[str, tuple[QueuedPodInfo, int]] = {}
        self._in_flight_order: deque[tuple[int, str]] = deque()
        self._events: deque[tuple[int, ClusterEvent, Any, Any]] = deque()
        self._event_seq = 0
        self._wakeup = asyncio.Event()
        #: ``pop`` is parked on ``_wakeup`` (checked instead of ``Event.is_set``).
        self._popper_waiting = False
        self._closed = False
        self.scheduling_cycle = 0
        self.metrics.add_pending_pods_source(self.counts)
        self._incoming = self.metrics.queue_incoming_pods.values
        self._pre_enqueue_ok: dict[str, HistogramSeries] = {}

    # ---- sizes ---------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Pending pods per queue, as ``scheduler_pending_pods`` labels them."""
        gated = sum(1 for p in self._unschedulable.values() if p.gating_plugin)
        return {
            ACTIVE: len(self._active_uids),
            BACKOFF: len(self._backoff_uids),
            UNSCHEDULABLE: len(self._unschedulable) - gated,
            "gated": gated,
        }

    def __len__(self) -> int:
        return len(self._active_uids) + len(self._backoff_uids) + len(self._unschedulable)

    def backoff_attempts(self) -> dict[str, int]:
        """uid → scheduling attempts so far of every pod in backoffQ."""
        return {uid: info.attempts for uid, info in self._backoff_uids.items()}

    def infos(self) -> list[QueuedPodInfo]:
        """Every pod waiting in activeQ, backoffQ or unschedulablePods (not in flight)."""
        return [
            *self._active_uids.values(),
            *self._backoff_uids.values(),
            *self._unschedulable.values(),
        ]

    def has(self, uid: str) -> bool:
        return (
            uid in self._active_uids
            or uid in self._backoff_uids
            or uid in self._unschedulable
            or uid in self._in_flight
        )

    def queued(self, uid: str) -> bool:
        """In activeQ, backoffQ or unschedulablePods (not in flight)."""
        return uid in self._active_uids or uid in self._backoff_uids or uid in self._unschedulable

    def get(self, uid: str) -> QueuedPodInfo | None:
        info = (
            self._active_uids.get(uid)
            or self._backoff_uids.get(uid)
            or self._unschedulable.get(uid)
        )
        if info is None:
            flying = self._in_flight.get(uid)
            info = flying[0] if flying is not None else None
        return info

    def where(self, uid: str) -> str | None:
        """Which sub-queue holds the pod ("active", "backoff", "unschedulable",
        "in-flight"), for tests and debugging."""
        if uid in self._active_uids:
            return ACTIVE
        if uid in self._backoff_uids:
            return BACKOFF
        if uid in self._unschedulable:
            return UNSCHEDULABLE
        if uid in self._in_flight:
            return "in-flight"
        return None

    def wants_events(self) -> bool:
        """Whether a cluster event could change anything: some pod waits in
        unschedulablePods or is in flight. Callers skip building events otherwise."""
        return bool(self._unschedulable) or bool(self._in_flight)

    @property
    def in_flight(self) -> int:
        """Pods popped for a scheduling attempt and not yet done."""
        return len(self._in_flight)

    @property
    def in_flight_events(self) -> int:
        return len(self._events)

    def in_flight_event_counts(self) -> dict[str, int]:
        """``scheduler_inflight_events``: the recorded events by label, and
        ``PodPopped`` (the pods in flight), as upstream's activeQ tracks them."""
        counts: dict[str, int] = {"PodPopped": len(self._in_flight)}
        for _, event, _, _ in self._events:
            counts[event.label] = counts.get(event.label, 0) + 1
        return counts

    # ---- backoff -------------------------------------------------------------------

    def _align(self, t: float) -> float:
        return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        """``initial * 2^(n-1)`` capped at the maximum; ``n`` is the consecutive error
        count after an error, the unschedulable count otherwise."""
        count = info.consecutive_errors_count or info.unschedulable_count
        if count <= 0 or self.max_backoff <= 0:
            return 0.0
        # Capped before it could overflow a float: a pod retried from backoffQ whenever
        # activeQ is empty may fail thousands of times.
        return min(self.initial_backoff * 2.0 ** min(count - 1, 64), self.max_backoff)

    def backoff_expiration(self, info: QueuedPodInfo) -> float:
        exp = info.backoff_expiration
        if exp is None:
            count = info.consecutive_errors_count or info.unschedulable_count
            if count <= 0 or self.max_backoff <= 0:
                exp = _NO_EXPIRY
            else:
                exp = info.timestamp + self.backoff_duration(info)
                if self.pop_from_backoff:
                    exp = self._align(exp)
            info.backoff_expiration = exp
        return exp

    def is_backing_off(self, info: QueuedPodInfo) -> bool:
        """Still waiting: its expiration is not before the current ordering window."""
        now = self.clock()
        if self.pop_from_backoff:
            now = self._align(now)
        return self.backoff_expiration(info) >= now

    # ---- internal moves ------------------------------------------------------------

    def _push_active(self, info: QueuedPodInfo, event: str) -> None:
        seq = next(self._seq)
        info.queue_seq = seq
        if self._priority_order:
            heapq.heappush(self._active, (-info.pod.priority, info.timestamp, seq, info))
        else:
            heapq.heappush(self._active, (self.sort_key(info), seq, info))
        self._active_uids[info.uid] = info
        incoming = self._incoming
        key = (ACTIVE, event)
        incoming[key] = incoming.get(key, 0.0) + 1.0
        if self._popper_waiting:
            self._popper_waiting = False
            self._wakeup.set()

    def _push_backoff(self, info: QueuedPodInfo, event: str) -> None:
        seq = next(self._seq)
        info.queue_seq = seq
        exp = self.backoff_expiration(info)
        if info.unschedulable_plugins or info.pending_plugins:
            heapq.heappush(self._backoff, (exp, self.sort_key(info), seq, info))
        else:
            heapq.heappush(self._error_backoff, (exp, seq, info))
        self._backoff_uids[info.uid] = info
        self.metrics.incoming(BACKOFF, event)
        if self.pop_from_backoff and self._popper_waiting:
            self._popper_waiting = False
            self._wakeup.set()

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> None:
        """Sets ``info.gating_plugin`` to the first PreEnqueue plugin that rejects."""
        plugins = self._pre_enqueue.get(info.pod.scheduler_name)
        if not plugins:
            info.gating_plugin = ""
            return
        start = _perf()
        gating = info.gating_plugin
        ordered: Iterable[PreEnqueuePlugin] = plugins
        if gating and len(plugins) > 1 and plugins[0].name != gating:
            # The plugin that gated the pod runs first (upstream), the others keep order.
            key = (info.pod.scheduler_name, gating)
            found = self._gating_first.get(key)
            if found is None:
                found = self._gating_first[key] = sorted(plugins, key=lambda p: p.name != gating)
            ordered = found
        code = ""
        for pl in ordered:
            try:
                status = pl.pre_enqueue(info.pod)
            except Exception:
                # A plugin that raises gates the pod (an error status, as upstream
                # treats one) instead of losing it or stopping the queue's flushers.
                log.exception("PreEnqueue plugin %s failed for pod %s", pl.name, info.pod.key)
                name = pl.name
                info.unschedulable_plugins = info.unschedulable_plugins | {name}
                info.gating_plugin = name
                info.gating_plugin_events = self._plugin_events.get(name, ())
                code = "Error"
                break
            if status is None or status.is_success():
                continue
            name = pl.name
            if name not in info.unschedulable_plugins and name not in info.pending_plugins:
                # Upstream counts a pod once per plugin, however often it is re-gated.
                self.metrics.unschedulable_pods.inc((name, info.pod.scheduler_name))
                info.unschedulable_plugins = info.unschedulable_plugins | {name}
            info.gating_plugin = name
            info.gating_plugin_events = self._plugin_events.get(name, ())
            code = str(getattr(status, "code", "Unschedulable"))
            break
        else:
            info.gating_plugin = ""
        profile = info.pod.scheduler_name
        if code:
            self.metrics.extension_point("PreEnqueue", code, profile, _perf() - start)
            return
        series = self._pre_enqueue_ok.get(profile)
        if series is None:
            series = self._pre_enqueue_ok[profile] = (
                self.metrics.framework_extension_point_duration.child(
                    ("PreEnqueue", "Success", profile)
                )
            )
        series.observe(_perf() - start)

    def _move_to_active(self, info: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """activeQ, or unschedulablePods when a PreEnqueue plugin gates the pod."""
        if not (self.pop_from_backoff and from_backoff):
            self._run_pre_enqueue(info)
        uid = info.uid
        if info.gating_plugin:
            if not self.queued(uid):
                self._unschedulable[uid] = info
                self.metrics.incoming(UNSCHEDULABLE, event)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self.clock()
        self._unschedulable.pop(uid, None)
        self._backoff_uids.pop(uid, None)
        self._push_active(info, event)
        if (event in (_POD_ADD, _POD_UPDATE)) and info.pod.nominated_node_name:
            self.nominator.add(info.pod)
        return True

    def _move_to_backoff(self, info: QueuedPodInfo, event: str) -> bool:
        if self.pop_from_backoff:
            # PreEnqueue runs on the way in, so a pop from backoffQ can skip it.
            self._run_pre_enqueue(info)
            if info.gating_plugin:
                if info.uid not in self._unschedulable:
                    self._unschedulable[info.uid] = info
                    self.metrics.incoming(UNSCHEDULABLE, event)
                return False
        self._unschedulable.pop(info.uid, None)
        self._push_backoff(info, event)
        return True

    def _requeue(self, info: QueuedPodInfo, strategy: QueueingStrategy, event: str) -> str:
        """Put a pod out of unschedulablePods according to ``strategy``; returns where."""
        if strategy == QueueingStrategy.SKIP:
            if info.uid not in self._unschedulable:
                self._unschedulable[info.uid] = info
                self.metrics.incoming(UNSCHEDULABLE, event)
            return UNSCHEDULABLE
        if strategy == QueueingStrategy.AFTER_BACKOFF and self.is_backing_off(info):
            return BACKOFF if self._move_to_backoff(info, event) else UNSCHEDULABLE
        return ACTIVE if self._move_to_active(info, event) else UNSCHEDULABLE

    def _remove_everywhere(self, uid: str) -> QueuedPodInfo | None:
        # Heaps are cleaned lazily: entries whose uid is no longer registered are skipped.
        for table in (self._active_uids, self._backoff_uids, self._unschedulable):
            info = table.pop(uid, None)
            if info is not None:
                return info
        return None

    # ---- queueing hints ------------------------------------------------------------

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        """Upstream ``isEventOfInterest``: some plugin registered an event it matches."""
        return self._is_event_of_interest(event)

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        cached = self._interest.get(event)
        if cached is None:
            if self._registered_events is None or is_wildcard(event):
                cached = True
            else:
                cached = any(match_cluster_events(r, event) for r in self._registered_events)
            self._interest[event] = cached
        return cached

    def _matching_hints(
        self, profile: str, event: ClusterEvent
    ) -> list[tuple[str, QueueingHintFn | None]] | None:
        key = (profile, event)
        found = self._hints_for.get(key)
        if found is None:
            assert self._hints_by_profile is not None
            regs = self._hints_by_profile.get(profile)
            if regs is None:
                return None
            found = [
                (plugin, reg.hint) for plugin, reg in regs if match_cluster_events(reg.event, event)
            ]
            self._hints_for[key] = found
        return found

    def worth_requeuing(
        self, info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingStrategy:
        """Upstream ``isPodWorthRequeuing``: run the hints of the pod's rejector plugins."""
        unschedulable, pending = info.unschedulable_plugins, info.pending_plugins
        if not unschedulable and not pending:
            return QueueingStrategy.AFTER_BACKOFF
        if is_wildcard(event):
            # A wildcard with a pod object targets that pod only (ForceActivate).
            if isinstance(new, Pod) and new.uid != info.uid:
                return QueueingStrategy.SKIP
            return QueueingStrategy.AFTER_BACKOFF
        if self._hints_by_profile is None:
            return QueueingStrategy.AFTER_BACKOFF
        hints = self._matching_hints(info.pod.scheduler_name, event)
        if hints is None:
            return QueueingStrategy.AFTER_BACKOFF  # no hint map for this profile
        strategy = QueueingStrategy.SKIP
        for plugin, fn in hints:
            if plugin not in unschedulable and plugin not in pending:
                continue
            if fn is None:
                hint = QueueingHint.QUEUE
            else:
                began = _perf()
                try:
                    hint = fn(info.pod, old, new)
                    result = "QueueSkip" if hint == QueueingHint.QUEUE_SKIP else "Queue"
                except Exception:
                    log.exception(
                        "queueing hint of %s failed for pod %s on %s; treating it as Queue",
                        plugin,
                        info.pod.key,
                        event.label,
                    )
                    hint = QueueingHint.QUEUE
                    result = "Error"
                self.metrics.queueing_hint_duration.observe(
                    (plugin, event.label, result), _perf() - began
                )
            if hint == QueueingHint.QUEUE_SKIP:
                continue
            if plugin in pending:
                return QueueingStrategy.IMMEDIATELY
            if not pending:
                return QueueingStrategy.AFTER_BACKOFF
            strategy = QueueingStrategy.AFTER_BACKOFF
        return strategy

    # ---- in-flight events ------------------------------------------------------------

    def _record_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self._in_flight:
            self._event_seq += 1
            self._events.append((self._event_seq, event, old, new))

    def _prune_events(self) -> None:
        in_flight = self._in_flight
        if not in_flight:
            self._events.clear()
            self._in_flight_order.clear()
            return
        order = self._in_flight_order
        while order:
            start, uid = order[0]
            entry = in_flight.get(uid)
            if entry is not None and entry[1] == start:
                break
            order.popleft()
        oldest = order[0][0] if order else self._event_seq
        events = self._events
        while events and events[0][0] <= oldest:
            events.popleft()

    def _in_flight_strategy(self, info: QueuedPodInfo, start: int) -> QueueingStrategy:
        """Upstream ``determineSchedulingHintForInFlightPod``."""
        if not info.unschedulable_plugins and not info.pending_plugins:
            return QueueingStrategy.AFTER_BACKOFF
        if self.pod_group_member is not None and self.pod_group_member(info.pod):
            # A pod group's member retries on backoff alone: requeueing on events is
            # not defined for whole groups yet (upstream, GenericWorkload).
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for seq, event, old, new in list(self._events):
            if seq <= start:
                continue
            s = self.worth_requeuing(info, event, old, new)
            if s == QueueingStrategy.IMMEDIATELY:
                return s
            if s == QueueingStrategy.AFTER_BACKOFF:
                strategy = s
                if not info.pending_plugins:
                    return s
        return strategy

    # ---- events from informers -------------------------------------------------------

    def add(self, pod: Pod, compiled: CompiledPod | None = None) -> None:
        """A new unscheduled pod this scheduler is responsible for."""
        if self.has(pod.uid):
            self.update(pod, compiled)
            return
        info = QueuedPodInfo(pod, compiled or compile_pod(pod), self.clock(), pod.uid)
        self._move_to_active(info, _POD_ADD)

    def update(
        self, pod: Pod, compiled: CompiledPod | None = None, *, old: Pod | None = None
    ) -> None:
        """An unscheduled pod changed: keep its history, use the new object. ``old`` is
        the previous object (defaults to the one the queue holds)."""
        uid = pod.uid
        flying = self._in_flight.get(uid)
        if flying is not None:
            info = flying[0]
            previous = old or info.pod
            info.pod, info.compiled = pod, compiled or compile_pod(pod)
            for ev in pod_scheduling_properties_change(previous, pod):
                self._event_seq += 1
                self._events.append((self._event_seq, ev, previous, pod))
            return
        info_active = self._active_uids.get(uid) or self._backoff_uids.get(uid)
        if info_active is not None:
            previous = old or info_active.pod
            info_active.pod, info_active.compiled = pod, compiled or compile_pod(pod)
            self.nominator.update(previous, pod)
            return
        found = self._unschedulable.get(uid)
        if found is None:
            fresh = QueuedPodInfo(pod, compiled or compile_pod(pod), self.clock(), pod.uid)
            self._move_to_active(fresh, _POD_UPDATE)
            return
        info = found
        previous = old or info.pod
        info.pod, info.compiled = pod, compiled or compile_pod(pod)
        self.nominator.update(previous, pod)
        # Upstream ``Update`` for a pod in unschedulablePods: each event in turn, the
        # first that moves the pod to activeQ (or backoffQ) ends it; unlike a cluster
        # event, the gating plugin's events do not pre-filter a gated pod's own update.
        for ev in pod_scheduling_properties_change(previous, pod):
            strategy = self.worth_requeuing(info, ev, previous, pod)
            where = self._requeue(info, strategy, ev.label)
            if where == ACTIVE or (self.pop_from_backoff and where == BACKOFF):
                break

    def delete(self, uid: str) -> None:
        """The pod was deleted or bound: forget it (an in-flight pod is marked)."""
        info = self._remove_everywhere(uid)
        if info is not None:
            self._dec_unschedulable_metric(info)
        flying = self._in_flight.get(uid)
        if flying is not None:
            flying[0].deleted = True
        if uid in self.nominator.by_uid:
            self.nominator.delete(uid)

    def activate(self, uids: Iterable[str]) -> None:
        """Move pods from unschedulablePods/backoffQ to activeQ (``ForceActivate``). An
        in-flight pod gets the event recorded, so it comes back when it fails."""
        for uid in uids:
            if self._activate_one(uid):
                continue
            if uid in self._in_flight:
                pod = self._in_flight[uid][0].pod
                self._event_seq += 1
                self._events.append((self._event_seq, EVENT_FORCE_ACTIVATE, None, pod))

    def _activate_one(self, uid: str) -> bool:
        """Upstream ``activate``: a pod of unschedulablePods or backoffQ to activeQ
        (through PreEnqueue); whether it was found there (even if it stays gated)."""
        info = self._unschedulable.get(uid) or self._backoff_uids.get(uid)
        if info is None:
            return False
        from_backoff = uid in self._backoff_uids
        self._unschedulable.pop(uid, None)
        self._backoff_uids.pop(uid, None)
        return self._move_to_active(info, FORCE_ACTIVATE, from_backoff=from_backoff)

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent = EVENT_FORCE_ACTIVATE,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Pod], bool] | None = None,
    ) -> None:
        """A cluster event: run the hints of the unschedulable pods it may help."""
        if not self._is_event_of_interest(event):
            return
        if self._unschedulable:
            infos = [
                i for i in self._unschedulable.values() if pre_check is None or pre_check(i.pod)
            ]
            self._move_pods(infos, event, old, new)
        self._record_event(event, old, new)

    def _move_pods(
        self, infos: Sequence[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        wildcard = is_wildcard(event)
        for info in infos:
            if (
                info.gating_plugin
                and not wildcard
                and not match_any_cluster_event(event, info.gating_plugin_events)
            ):
                # The event cannot interest the plugin that gates the pod. A wildcard
                # (the unschedulable timeout, a forced activation) re-evaluates every
                # gated pod, as upstream does: a plugin may stop gating without an event.
                continue
            strategy = self.worth_requeuing(info, event, old, new)
            if strategy == QueueingStrategy.SKIP:
                continue
            self._unschedulable.pop(info.uid, None)
            self._requeue(info, strategy, event.label)

    # ---- the scheduling loop's side ------------------------------------------------

    def try_pop(self) -> QueuedPodInfo | None:
        """The next pod to try, or None when there is none (activeQ, then backoffQ)."""
        active = self._active
        while active:
            entry = heapq.heappop(active)
            seq: int = entry[-2]
            info: QueuedPodInfo = entry[-1]
            if info.queue_seq != seq or self._active_uids.get(info.uid) is not info:
                continue  # removed or re-queued since it was pushed
            del self._active_uids[info.uid]
            return self._to_in_flight(info)
        if self.pop_from_backoff:
            backoff = self._backoff
            while backoff:
                _, _, seq, info = heapq.heappop(backoff)
                if info.queue_seq != seq or self._backoff_uids.get(info.uid) is not info:
                    continue
                del self._backoff_uids[info.uid]
                self.metrics.incoming(ACTIVE, POP_FROM_BACKOFF_Q)
                return self._to_in_flight(info)
        return None

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Upstream ``PopSpecificPod``: take the pod ``uid`` out of the queue as
        :meth:`try_pop` takes a pod (in flight, one more attempt), e.g. a pod group cycle
        taking its other members. It is activated first (out of unschedulablePods or
        backoffQ, through PreEnqueue); None when it is not in activeQ then (unknown,
        gated, already in flight)."""
        # Upstream ``PopSpecificPod`` calls the internal ``activate``: an in-flight pod
        # gets no ForceActivate event recorded (unlike ``Activate``).
        self._activate_one(uid)
        info = self._active_uids.pop(uid, None)
        if info is None:
            return None
        # Its heap entry stays behind; pops skip it (no longer in ``_active_uids``).
        return self._to_in_flight(info)

    def pop_same(
        self,
        key: object,
        key_of: Callable[[QueuedPodInfo], object],
        limit: int,
        accept: Callable[[QueuedPodInfo], bool] | None = None,
    ) -> list[QueuedPodInfo]:
        """Pop the pods at the head of activeQ, in order, while ``key_of(head) == key``
        and ``accept(head)`` (at most ``limit``): the rest of a batch of pods with one
        scheduling signature. Each popped pod starts its own scheduling cycle."""
        out: list[QueuedPodInfo] = []
        active = self._active
        while active and len(out) < limit:
            entry = active[0]
            seq: int = entry[-2]
            info: QueuedPodInfo = entry[-1]
            if info.queue_seq != seq or self._active_uids.get(info.uid) is not info:
                heapq.heappop(active)
                continue
            if key_of(info) != key or (accept is not None and not accept(info)):
                break
            heapq.heappop(active)
            del self._active_uids[info.uid]
            out.append(self._to_in_flight(info))
        return out

    def _to_in_flight(self, info: QueuedPodInfo) -> QueuedPodInfo:
        self.scheduling_cycle += 1
        info.cycle = self.scheduling_cycle
        info.attempts += 1
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self.clock()
        if info.unschedulable_plugins or info.pending_plugins:
            self._dec_unschedulable_metric(info)
            info.unschedulable_plugins = _EMPTY
            info.pending_plugins = _EMPTY
        info.deleted = False
        start = self._event_seq
        self._in_flight[info.uid] = (info, start)
        self._in_flight_order.append((start, info.uid))
        return info

    def _dec_unschedulable_metric(self, info: QueuedPodInfo) -> None:
        gauge = self.metrics.unschedulable_pods
        profile = info.pod.scheduler_name
        for plugin in info.unschedulable_plugins | info.pending_plugins:
            gauge.dec((plugin, profile))

    async def pop(self) -> QueuedPodInfo | None:
        """The next pod to try; waits while there is none. None once closed."""
        while True:
            info = self.try_pop()
            if info is not None or self._closed:
                return info
            self._wakeup.clear()
            self._popper_waiting = True
            await self._wakeup.wait()

    def done(self, uid: str) -> None:
        """The pod's scheduling cycle is over (or its Permit wait): stop recording
        events for it."""
        in_flight = self._in_flight
        if in_flight.pop(uid, None) is not None:
            if in_flight or self._events:
                self._prune_events()
            elif self._in_flight_order:
                self._in_flight_order.clear()

    def is_in_flight(self, uid: str) -> bool:
        return uid in self._in_flight

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo) -> str | None:
        """A popped pod failed. Its ``unschedulable_plugins``/``pending_plugins`` say
        who rejected it (both empty: an error). Events recorded while it was in flight
        decide where it goes; returns the sub-queue, or None when it was not requeued
        (deleted meanwhile, or already queued again)."""
        uid = info.uid
        flying = self._in_flight.get(uid)
        start = flying[1] if flying is not None and flying[0] is info else None
        if info.deleted or self.queued(uid):
            self.done(uid)
            return None
        if not info.unschedulable_plugins and not info.pending_plugins:
            info.consecutive_errors_count += 1
        else:
            info.unschedulable_count += 1
            info.consecutive_errors_count = 0
        info.timestamp = self.clock()
        info.backoff_expiration = None
        profile = info.pod.scheduler_name
        gauge = self.metrics.unschedulable_pods
        for plugin in info.unschedulable_plugins | info.pending_plugins:
            gauge.inc((plugin, profile))
        if start is None:
            # Not in flight any more (its binding failed after Permit): no events to check.
            strategy = QueueingStrategy.AFTER_BACKOFF
        else:
            strategy = self._in_flight_strategy(info, start)
        self.done(uid)
        return self._requeue(info, strategy, SCHEDULE_ATTEMPT_FAILURE)

    def add_unschedulable(
        self,
        info: QueuedPodInfo,
        plugins: Iterable[str],
        pending_plugins: Iterable[str] = (),
    ) -> str | None:
        """Convenience: record the rejector plugins and requeue the failed pod."""
        info.unschedulable_plugins = frozenset(plugins)
        info.pending_plugins = frozenset(pending_plugins)
        return self.add_unschedulable_if_not_present(info)

    def requeue_after_error(self, info: QueuedPodInfo) -> str | None:
        """A pod whose attempt or binding failed with an error goes back through the
        error backoff."""
        return self.add_unschedulable(info, ())

    # ---- periodic flushes ------------------------------------------------------------

    def flush_backoff_completed(self) -> int:
        """Move every pod whose backoff completed to activeQ."""
        now = self.clock()
        if self.pop_from_backoff:
            now = self._align(now)
        moved = 0
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)
        for heap in heaps:
            while heap and heap[0][0] < now:
                entry = heapq.heappop(heap)
                info = entry[-1]
                assert isinstance(info, QueuedPodInfo)
                if info.queue_seq != entry[-2] or self._backoff_uids.get(info.uid) is not info:
                    continue
                del self._backoff_uids[info.uid]
                if self._move_to_active(info, BACKOFF_COMPLETE, from_backoff=True):
                    moved += 1
        return moved

    def flush_unschedulable_leftover(self) -> int:
        """Move pods that stayed in unschedulablePods longer than the maximum."""
        now = self.clock()
        stale = [
            p for p in self._unschedulable.values() if now - p.timestamp > self.max_in_unschedulable
        ]
        before = len(self._unschedulable)
        if stale:
            for info in stale:
                info.flushed = True
            self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
        return before - len(self._unschedulable)

    async def run_flushers(self) -> None:
        """Flush backoffQ at every ordering-window start, old unschedulable pods every
        30 seconds."""
        now = self.clock()
        await asyncio.sleep(max(0.0, self._align(now) + BACKOFF_ORDERING_WINDOW - now))
        last_unschedulable = self.clock()
        while not self._closed:
            try:
                self.flush_backoff_completed()
                if self.clock() - last_unschedulable >= FLUSH_UNSCHEDULABLE_INTERVAL:
                    last_unschedulable = self.clock()
                    self.flush_unschedulable_leftover()
            except Exception:
                # A flusher that died would leave backed-off pods waiting until some new
                # pod wakes the scheduling loop: log and keep flushing.
                log.exception("flushing the scheduling queue failed; continuing")
            now = self.clock()
            await asyncio.sleep(max(0.01, self._align(now) + FLUSH_BACKOFF_INTERVAL - now))

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
