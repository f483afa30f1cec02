"""NodePorts: the pod's host ports must be free on the node (protocol, IP and port;
``0.0.0.0`` conflicts with every IP).

Filter in ``rust/plugins/node_ports.rs``.
"""

from __future__ import annotations

from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def _ports_after_pod_delete(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    if old is None or not old.node_name or not old.host_ports:
        return SKIP
    wanted = {(proto, port) for proto, _, port in pod.host_ports}
    return QUEUE if any((proto, port) in wanted for proto, _, port in old.host_ports) else SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _ports_after_pod_delete),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
    ]
