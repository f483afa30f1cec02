"""Kubernetes Events the scheduler records (``events.k8s.io/v1``), as upstream words them.

``Scheduled`` (Normal, action Binding): "Successfully assigned ns/name to node".
``FailedScheduling`` (Warning, action Scheduling): the diagnosis message.

Events are sent in the background: the scheduling loop never waits for the API. A
bounded number of sends are in flight; beyond that, events are dropped and counted, so a
storm of failures cannot flood the API server or grow memory without bound.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import itertools
import logging
import os
from typing import Any

from ksched.api.pod import Pod
from ksched.cluster import ClusterAPI

log = logging.getLogger(__name__)

_MAX_NOTE = 1024
_counter = itertools.count()


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_event(
    pod: Pod,
    *,
    type_: str,
    reason: str,
    action: str,
    note: str,
    reporting_controller: str,
    reporting_instance: str,
) -> dict[str, Any]:
    """An events.k8s.io/v1 Event about ``pod``."""
    if len(note) > _MAX_NOTE:
        note = note[: _MAX_NOTE - 3] + "..."
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": f"{pod.name}.{os.getpid():x}{next(_counter):x}",
            "namespace": pod.namespace,
        },
        "eventTime": _now(),
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
            "resourceVersion": pod.resource_version,
        },
        "note": note,
        "type": type_,
    }


class EventRecorder:
    """Sends events without blocking the caller."""

    def __init__(self, api: ClusterAPI, *, instance: str, max_in_flight: int = 256) -> None:
        self._api = api
        self._instance = instance
        self._max_in_flight = max_in_flight
        self._in_flight: set[asyncio.Task[None]] = set()
        self.dropped = 0
        self.sent = 0

    def scheduled(self, pod: Pod, node: str, controller: str) -> None:
        self._send(
            make_event(
                pod,
                type_="Normal",
                reason="Scheduled",
                action="Binding",
                note=f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
                reporting_controller=controller,
                reporting_instance=self._instance,
            )
        )

    def failed_scheduling(self, pod: Pod, message: str, controller: str) -> None:
        self._send(
            make_event(
                pod,
                type_="Warning",
                reason="FailedScheduling",
                action="Scheduling",
                note=message,
                reporting_controller=controller,
                reporting_instance=self._instance,
            )
        )

    def _send(self, event: dict[str, Any]) -> None:
        if len(self._in_flight) >= self._max_in_flight:
            self.dropped += 1
            return
        task = asyncio.get_running_loop().create_task(self._post(event))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)

    async def _post(self, event: dict[str, Any]) -> None:
        try:
            await self._api.create_event(event=event)
            self.sent += 1
        except Exception as exc:  # an event is best effort, as in client-go's recorder
            log.warning("could not record event %s: %s", event["reason"], exc)

    async def drain(self) -> None:
        """Wait for the events in flight."""
        if self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
