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


def _conflicts(in_use: set[tuple[str, str, int]], proto: str, ip: str, port: int) -> bool:
    """``HostPortInfo.CheckConflict`` (ports already sanitized: 0.0.0.0, TCP)."""
    if ip == "0.0.0.0":
        return any(p == proto and n == port for p, _, n in in_use)
    return (proto, "0.0.0.0", port) in in_use or (proto, ip, port) in in_use


def _ports_after_pod_delete(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterPodDeleted``: Queue when the deleted pod was
    scheduled (or nominated) and one of its host ports conflicts with the pod's."""
    if old is None or (not old.node_name and not old.nominated_node_name):
        return SKIP
    if not old.host_ports:
        return SKIP
    in_use = set(old.host_ports)
    fits = not any(_conflicts(in_use, proto, ip, port) for proto, ip, port in pod.host_ports)
    return SKIP if fits else QUEUE


def events_to_register() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _ports_after_pod_delete),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
    ]
