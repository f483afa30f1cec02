"""SchedulingGates (PreEnqueue): a pod with ``spec.schedulingGates`` waits, gated, until
an update removes them. The PreEnqueue plugin itself is in
:mod:`ksched.framework.builtins`.
"""

from __future__ import annotations

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

NAME = "SchedulingGates"


def _gates_eliminated(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
    return QUEUE if new.uid == pod.uid else SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            _gates_eliminated,
        )
    ]
