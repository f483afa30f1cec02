"""Cluster events and queueing hints of the built-in plugins.

Built-in Filter plugins run in Rust, but the queue needs, in Python, the events that can
undo their rejections (``EventsToRegister`` upstream). :func:`events_for` answers for a
plugin name: a plugin module ``ksched.plugins.<snake_case_name>`` that defines
``events_to_register()`` takes precedence (the per-plugin modules own their events), then
the table below, then, as upstream does for a plugin without ``EnqueueExtensions``,
every event of every resource.

The hints mirror upstream v1.36 with queueing hints enabled (no preCheck). They receive
parsed :class:`~ksched.api.node.Node` / :class:`~ksched.api.pod.Pod` objects; ``old`` is
None for an add and ``new`` is None for a delete.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from ksched.api.node import Node
from ksched.api.pod import Pod, Toleration
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)

__all__ = [
    "ALL_EVENTS",
    "BUILTIN_EVENTS",
    "events_for",
    "node_name_events",
    "node_resources_fit_events",
    "node_unschedulable_events",
    "scheduling_gates_events",
    "tolerates",
]

QUEUE: Final = QueueingHint.QUEUE
SKIP: Final = QueueingHint.QUEUE_SKIP

TAINT_NODE_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"

#: What a plugin without registrations is woken by (upstream ``UnrollWildCardResource``
#: restricted to the resources this scheduler watches).
ALL_EVENTS: Final = (
    ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)),
    ClusterEventWithHint(ClusterEvent(NODE, ActionType.ALL)),
)


def tolerates(tol: Toleration, key: str, value: str, effect: str) -> bool:
    """Upstream ``Toleration.ToleratesTaint``."""
    if tol.effect and tol.effect != effect:
        return False
    if tol.key and tol.key != key:
        return False
    if tol.operator == "Exists":
        return True
    if tol.operator in ("Equal", ""):
        return tol.value == value
    return False


# ---- NodeUnschedulable -------------------------------------------------------------


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


def node_unschedulable_events() -> list[ClusterEventWithHint]:
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


# ---- NodeName ------------------------------------------------------------------------


def node_name_events() -> list[ClusterEventWithHint]:
    # No hint: any new node may be the one the pod names (always Queue).
    return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))]


# ---- NodeResourcesFit ----------------------------------------------------------------


def _fits_empty_node(pod: Pod, node: Node) -> bool:
    """Upstream ``isFit``: the pod fits the node if nothing else ran there."""
    alloc = node.allocatable
    if alloc.get("pods", 0) < 1:
        return False
    return all(amount <= alloc.get(name, 0) for name, amount in pod.requests.items() if amount)


def _requested_resources_increased(pod: Pod, old: Node, new: Node) -> bool:
    if new.allocatable.get("pods", 0) > old.allocatable.get("pods", 0):
        return True
    for name, amount in pod.requests.items():
        if amount and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
            return True
    return False


def _fit_after_node_change(pod: Pod, old: Node | None, new: Node) -> QueueingHint:
    if not _fits_empty_node(pod, new):
        return SKIP
    if old is None:
        return QUEUE
    return QUEUE if _requested_resources_increased(pod, old, new) else SKIP


def _fit_after_pod_event(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    if new is None:
        assert old is not None
        if not old.node_name and not old.nominated_node_name:
            return SKIP  # an unscheduled pod frees nothing
        return QUEUE
    if new.uid == pod.uid:
        return QUEUE  # the pod itself asks for less
    if not new.node_name or old is None:
        return SKIP
    for name, amount in pod.requests.items():
        if amount and old.requests.get(name, 0) > new.requests.get(name, 0):
            return QUEUE
    return SKIP


def node_resources_fit_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
            _fit_after_pod_event,
        ),
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
            _fit_after_node_change,
        ),
    ]


# ---- SchedulingGates -------------------------------------------------------------------


def _gates_eliminated(pod: Pod, old: Pod | None, new: Pod) -> QueueingHint:
    return QUEUE if new.uid == pod.uid else SKIP


def scheduling_gates_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
            _gates_eliminated,
        )
    ]


# ---- the other default filters, until their plugin modules provide hints -------------


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


def taint_toleration_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
            _taint_after_node_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), _taint_after_toleration_change
        ),
    ]


def _ports_after_pod_delete(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    if old is None or not old.node_name or not old.host_ports:
        return SKIP
    wanted = {(proto, port) for proto, _, port in pod.host_ports}
    return QUEUE if any((proto, port) in wanted for proto, _, port in old.host_ports) else SKIP


def node_ports_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE), _ports_after_pod_delete),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
    ]


def node_affinity_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_LABEL)),
    ]


def pod_topology_spread_events() -> list[ClusterEventWithHint]:
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


def inter_pod_affinity_events() -> list[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(POD, ActionType.ALL)),
        ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
    ]


BUILTIN_EVENTS: Final[dict[str, Callable[[], list[ClusterEventWithHint]]]] = {
    "NodeUnschedulable": node_unschedulable_events,
    "NodeName": node_name_events,
    "NodeResourcesFit": node_resources_fit_events,
    "SchedulingGates": scheduling_gates_events,
    "TaintToleration": taint_toleration_events,
    "NodePorts": node_ports_events,
    "NodeAffinity": node_affinity_events,
    "PodTopologySpread": pod_topology_spread_events,
    "InterPodAffinity": inter_pod_affinity_events,
}


def _module_name(plugin: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", plugin).lower()


def events_for(plugin: str) -> Sequence[ClusterEventWithHint]:
    """The registrations of built-in ``plugin`` (see the module docstring)."""
    try:
        module: Any = importlib.import_module(f"ksched.plugins.{_module_name(plugin)}")
    except ImportError:
        module = None
    fn = getattr(module, "events_to_register", None) if module is not None else None
    if callable(fn):
        return list(fn())
    table = BUILTIN_EVENTS.get(plugin)
    if table is not None:
        return table()
    return ALL_EVENTS
