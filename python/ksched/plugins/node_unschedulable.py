"""NodeUnschedulable: nodes with ``spec.unschedulable`` reject pods that do not tolerate
``node.kubernetes.io/unschedulable:NoSchedule``.

Filter runs in Rust (``rust/plugins/node_unschedulable.rs``); this module holds the name,
the failure reason and the cluster events that can make a rejected pod schedulable.
"""

from __future__ import annotations

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP, tolerates

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def _unschedulable_after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
    if old is None:
        return QUEUE if not new.unschedulable else SKIP
    return QUEUE if old.unschedulable and not new.unschedulable else SKIP


def _unschedulable_after_toleration_change(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
    if new.uid != pod.uid:
        return SKIP
    if any(tolerates(t, TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule") for t in new.tolerations):
        return QUEUE
    return SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            _unschedulable_after_node_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION),
            _unschedulable_after_toleration_change,
        ),
    ]
