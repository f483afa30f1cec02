"""TaintToleration: untolerated NoSchedule/NoExecute taints reject a node; untolerated
PreferNoSchedule taints lower its score (reverse-normalized). Default weight 3.

The rejection reason names no taint (v1.36's ``Filter``): every node rejected for its
taints adds to one histogram entry of the FailedScheduling message.

Kernels in ``rust/plugins/taint_toleration.rs``.
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

NAME = "TaintToleration"
DEFAULT_WEIGHT = 3


#: Filter's reason for a node with an untolerated NoSchedule/NoExecute taint (v1.36.5).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


def _untolerated(pod: Pod, node: Node) -> bool:
    return any(
        taint.effect in ("NoSchedule", "NoExecute")
        and not any(tolerates(t, taint.key, taint.value, taint.effect) for t in pod.tolerations)
        for taint in node.taints
    )


def _taint_after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
    was_untolerated = old is None or _untolerated(pod, old)
    return QUEUE if was_untolerated and not _untolerated(pod, new) else SKIP


def _taint_after_toleration_change(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
    return QUEUE if new.uid == pod.uid else SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            _taint_after_node_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), _taint_after_toleration_change
        ),
    ]
