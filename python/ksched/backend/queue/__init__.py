"""The scheduling queue: activeQ, backoffQ and unschedulablePods, with queueing hints."""

from ksched.backend.queue.cluster_event import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    QueueingHintFn,
)
from ksched.backend.queue.nominator import Nominator
from ksched.backend.queue.queue import (
    PreEnqueuePlugin,
    QueuedPodInfo,
    QueueingStrategy,
    SchedulingQueue,
    priority_sort_key,
)

__all__ = [
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "Nominator",
    "PreEnqueuePlugin",
    "QueuedPodInfo",
    "QueueingHint",
    "QueueingHintFn",
    "QueueingStrategy",
    "SchedulingQueue",
    "priority_sort_key",
]
