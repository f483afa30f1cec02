"""NodeAffinity: nodeSelector, required and preferred node affinity, and the
scheduler-enforced ``addedAffinity`` (``NodeAffinityArgs``). Default weight 2.

Kernels in ``rust/plugins/node_affinity.rs``.
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
DEFAULT_WEIGHT = 2


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)),
    ]
