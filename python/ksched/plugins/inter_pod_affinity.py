"""InterPodAffinity: required and preferred pod affinity and anti-affinity, including
existing pods' anti-affinity (symmetry) and ``hardPodAffinityWeight``. Default weight 2.

Kernels in ``rust/plugins/inter_pod_affinity.rs``.
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
DEFAULT_WEIGHT = 2


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
    ]
