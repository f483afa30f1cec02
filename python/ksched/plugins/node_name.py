"""NodeName: a pod that names its node (``spec.nodeName``) fits only that node.

Filter runs in Rust (``rust/plugins/node_name.rs``).
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


def events_to_register() -> list[ClusterEventWithHint]:
    # No hint: any new node may be the one the pod names (always Queue).
    return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))]
