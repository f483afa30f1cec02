"""Kubernetes Events the scheduler records (``events.k8s.io/v1``), as upstream words them.

``Scheduled`` (Normal, action Binding): "Successfully assigned ns/name to node".
``FailedScheduling`` (Warning, action Scheduling): the diagnosis message, truncated to
the API's 1024-character note limit with a trailing " ..." as upstream does. Each event's
``reportingController`` is the profile's scheduler name and its ``reportingInstance``
``<schedulerName>-<hostname>``, as client-go's ``events.NewRecorder`` sets them.

Events never block the scheduling loop and a storm of failures cannot flood the API
server. The recorder mirrors client-go's ``events`` broadcaster:

* **Aggregation.** Events are keyed by (type, action, reason, reporting controller and
  instance, regarding object incl. its resourceVersion), not by note. The first event of
  a key is created; the second turns it into a series (``series.count: 2``) sent as a
  patch; later ones only bump the count locally. Series are re-sent every 30 minutes
  and finished (final count sent, key forgotten) after 6 minutes without a repeat; a
  single event's key is forgotten after 6 minutes. A pod that keeps failing for the
  same reason therefore costs a couple of API calls, not one per attempt.
* **Bounded backlog.** At most ``max_queued`` (10,000) events wait to be sent; beyond that
  new ones are dropped and counted. (client-go's broadcaster drops beyond a 1000-event
  channel, but drains it into one goroutine per event, so it holds more in practice.)
* **Bounded concurrency and rate.** A few workers send the backlog; an optional token
  bucket (``qps``/``burst``) caps the rate on a real API server.

Series patches need ``ClusterAPI.patch_event``; on an API without it the series count
is kept locally (``aggregated``) and only the first event of a key is sent.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from ksched.api.pod import Pod
from ksched.cluster import ClusterAPI

log = logging.getLogger(__name__)

__all__ = ["NOTE_LENGTH_LIMIT", "EventRecorder", "make_event", "truncate_message"]

#: ``validation.NoteLengthLimit``.
NOTE_LENGTH_LIMIT: Final = 1024
FINISH_TIME: Final = 6 * 60.0
REFRESH_TIME: Final = 30 * 60.0

_stamp_cache: list[Any] = [0, ""]
#: While busy, a sender polls the backlog this often, up to this many empty polls.
_POLL_INTERVAL: Final = 0.002
_BUSY_POLLS: Final = 25


def _now(ns: int | None = None) -> str:
    """RFC 3339 with microseconds (``metav1.MicroTime``) of ``ns`` (nanoseconds since
    the epoch; None: now), cheap on the hot path."""
    if ns is None:
        ns = time.time_ns()
    sec, frac = divmod(ns, 1_000_000_000)
    if sec != _stamp_cache[0]:
        _stamp_cache[0] = sec
        _stamp_cache[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return f"{_stamp_cache[1]}.{frac // 1000:06d}Z"


def truncate_message(message: str) -> str:
    """Upstream ``truncateMessage``: cut to the note limit with a " ..." suffix."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[: NOTE_LENGTH_LIMIT - len(suffix)] + suffix


def make_event(
    pod: Pod,
    *,
    type_: str,
    reason: str,
    action: str,
    note: str,
    reporting_controller: str,
    reporting_instance: str,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """An events.k8s.io/v1 Event about ``pod``. Its name and ``eventTime`` come from one
    reading of the clock, as upstream's (``makeEvent``: the name is ``name.%x`` of the
    event's timestamp in nanoseconds)."""
    ns = time.time_ns()
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": f"{pod.name}.{ns:x}",
            "namespace": pod.namespace,
        },
        "eventTime": _now(ns),
        "reportingController": reporting_controller,
        "reportingInstance": reporting_instance,
        "action": action,
        "reason": reason,
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": pod.namespace,
            "name": pod.name,
            "uid": pod.uid,
            "resourceVersion": pod.resource_version
            if resource_version is None
            else resource_version,
        },
        "note": truncate_message(note),
        "type": type_,
    }


class _Series:
    """What the recorder remembers of an event key: enough to patch its series."""

    __slots__ = ("count", "first_seen", "last_observed", "name", "namespace")

    def __init__(self, namespace: str, name: str, now: float) -> None:
        self.namespace = namespace
        self.name = name
        self.count = 1
        self.first_seen = now
        self.last_observed = now


_Key = tuple[str, str, str, str, str, str, str]


class EventRecorder:
    """Aggregates and sends events without blocking the caller."""

    def __init__(
        self,
        api: ClusterAPI,
        *,
        instance: str | None = None,
        max_queued: int = 10_000,
        workers: int = 8,
        qps: float | None = None,
        burst: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        #: A fixed reportingInstance; None: ``<controller>-<hostname>`` per controller.
        self._instance = instance
        self._instances: dict[str, str] = {}
        self._hostname = socket.gethostname()
        self._max_queued = max_queued
        self._max_workers = workers
        self._qps = qps
        self._burst = burst
        self._tokens = float(burst)
        self._last_refill = clock()
        self._clock = clock
        self._cache: dict[_Key, _Series] = {}
        self._backlog: deque[tuple[str, dict[str, Any], dict[str, Any] | None]] = deque()
        self._workers: set[asyncio.Task[None]] = set()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._sending = 0
        #: Workers parked on ``_wakeup`` (a plain count: cheaper than ``Event.is_set``).
        self._parked = 0
        self._last_sweep = clock()
        #: Events not sent because the backlog was full.
        self.dropped = 0
        #: Events (creates and series patches) the API accepted.
        self.sent = 0
        #: Repeats folded into an existing series without an API call.
        self.aggregated = 0

    # ---- what the scheduler records ------------------------------------------------

    def scheduled(
        self, pod: Pod, node: str, controller: str, resource_version: str | None = None
    ) -> None:
        self.eventf(
            pod,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
            controller,
            resource_version,
        )

    def failed_scheduling(
        self, pod: Pod, message: str, controller: str, resource_version: str | None = None
    ) -> None:
        self.eventf(
            pod, "Warning", "FailedScheduling", "Scheduling", message, controller, resource_version
        )

    def eventf(
        self,
        pod: Pod,
        type_: str,
        reason: str,
        action: str,
        note: str,
        controller: str,
        resource_version: str | None = None,
    ) -> None:
        rv = pod.resource_version if resource_version is None else resource_version
        instance = self._instance or self._instances.get(controller)
        if instance is None:
            instance = self._instances[controller] = f"{controller}-{self._hostname}"
        key = (type_, action, reason, controller, instance, pod.uid, rv)
        now = self._clock()
        series = self._cache.get(key)
        if series is not None:
            series.count += 1
            series.last_observed = now
            if series.count == 2:
                self._enqueue_patch(series)
            else:
                self.aggregated += 1
            return
        event = make_event(
            pod,
            type_=type_,
            reason=reason,
            action=action,
            note=note,
            reporting_controller=controller,
            reporting_instance=instance,
            resource_version=rv,
        )
        self._cache[key] = _Series(pod.namespace, event["metadata"]["name"], now)
        self._enqueue("create", event, None)
        if now - self._last_sweep > 60.0:
            self._sweep(now)

    # ---- series bookkeeping ------------------------------------------------------------

    def _enqueue_patch(self, series: _Series) -> None:
        patch = {"series": {"count": series.count, "lastObservedTime": _now()}}
        target = {"metadata": {"namespace": series.namespace, "name": series.name}}
        self._enqueue("patch", target, patch)

    def _sweep(self, now: float) -> None:
        """Finish series idle for 6 minutes, refresh long-running ones every 30."""
        self._last_sweep = now
        for key, series in list(self._cache.items()):
            idle = now - series.last_observed
            if idle > FINISH_TIME:
                if series.count > 1:
                    self._enqueue_patch(series)
                del self._cache[key]
            elif series.count > 1 and now - series.first_seen > REFRESH_TIME:
                series.first_seen = now
                self._enqueue_patch(series)

    def flush_series(self) -> None:
        """Run the periodic series bookkeeping now (normally done while recording)."""
        self._sweep(self._clock())

    # ---- sending ---------------------------------------------------------------------

    def _enqueue(self, kind: str, event: dict[str, Any], patch: dict[str, Any] | None) -> None:
        backlog = self._backlog
        if len(backlog) >= self._max_queued:
            self.dropped += 1
            return
        backlog.append((kind, event, patch))
        if self._parked:
            self._parked = 0
            self._wakeup.set()
        if len(self._workers) < self._max_workers and len(backlog) > self._sending_capacity():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop (tests building events): stays in the backlog
            task = loop.create_task(self._work())
            self._workers.add(task)
            task.add_done_callback(self._workers.discard)

    def _sending_capacity(self) -> int:
        """Idle workers that will pick the backlog up."""
        return len(self._workers) - self._sending

    async def _take_token(self) -> None:
        if self._qps is None:
            return
        while True:
            now = self._clock()
            self._tokens = min(
                float(self._burst), self._tokens + (now - self._last_refill) * self._qps
            )
            self._last_refill = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return
            await asyncio.sleep((1.0 - self._tokens) / self._qps)

    async def _work(self) -> None:
        """A long-lived sender: drains the backlog; while events keep coming it polls
        every few milliseconds (no wake-up per event), then parks until woken."""
        backlog = self._backlog
        idle_polls = 0
        while True:
            if backlog:
                idle_polls = 0
                self._idle.clear()
                while backlog:
                    kind, event, patch = backlog.popleft()
                    self._sending += 1
                    try:
                        await self._send(kind, event, patch)
                    finally:
                        self._sending -= 1
            if not self._sending and not backlog:
                self._idle.set()
            if idle_polls < _BUSY_POLLS:
                idle_polls += 1
                await asyncio.sleep(_POLL_INTERVAL)
                continue
            self._wakeup.clear()
            self._parked += 1
            await self._wakeup.wait()
            idle_polls = 0

    async def _send(self, kind: str, event: dict[str, Any], patch: dict[str, Any] | None) -> None:
        if self._qps is not None:
            await self._take_token()
        try:
            if kind == "create":
                await self._api.create_event(event=event)
            else:
                patch_event = getattr(self._api, "patch_event", None)
                if patch_event is None:
                    self.aggregated += 1
                    return
                meta = event["metadata"]
                await patch_event(namespace=meta["namespace"], name=meta["name"], patch=patch)
            self.sent += 1
        except Exception as exc:  # an event is best effort, as in client-go
            log.warning("could not record event %s: %s", event.get("reason", "series"), exc)

    @property
    def backlog(self) -> int:
        return len(self._backlog)

    async def drain(self) -> None:
        """Wait until every queued event was sent."""
        while self._backlog or self._sending:
            if not self._workers:
                self._enqueue_worker()
            self._idle.clear()
            self._parked = 0
            self._wakeup.set()
            await self._idle.wait()

    def _enqueue_worker(self) -> None:
        task = asyncio.get_running_loop().create_task(self._work())
        self._workers.add(task)
        task.add_done_callback(self._workers.discard)
        self._wakeup.set()

    async def close(self) -> None:
        """Stop the senders (after :meth:`drain`)."""
        for task in list(self._workers):
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
