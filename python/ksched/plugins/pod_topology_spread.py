"""PodTopologySpread: maxSkew across topology domains (Filter for DoNotSchedule, Score
for ScheduleAnyway), with the System default constraints (hostname maxSkew 3, zone
maxSkew 5) for pods of a workload that set none. Default weight 2.

Kernels in ``rust/plugins/pod_topology_spread.rs``; the workload selector comes from
:mod:`ksched.backend.controllers`.
"""

from __future__ import annotations

from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
DEFAULT_WEIGHT = 2


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)),
        ClusterEventWithHint(
            ClusterEvent(
                NODE,
                ActionType.ADD
                | ActionType.DELETE
                | ActionType.UPDATE_NODE_LABEL
                | ActionType.UPDATE_NODE_TAINT,
            )
        ),
    ]
