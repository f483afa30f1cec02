"""NodeResourcesFit: free resources (Filter) and the scoring strategy (Score).

Kernels in ``rust/plugins/node_resources_fit.rs``; args (``NodeResourcesFitArgs``:
scoringStrategy LeastAllocated cpu:1 memory:1 by default, ignoredResources,
ignoredResourceGroups) are defaulted and validated by :mod:`ksched.config`. Default
weight 1. This module holds the events that can make a rejected pod fit.

Filter counts a pod's pod-level requests (``spec.resources``); Score does not: v1.36.5's
``NewFit`` builds its scorer without pod-level resources, so it scores the containers'
requests (``Pod.fit_score_requests``). ksched mirrors this upstream quirk.
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
from ksched.framework.builtin_events import QUEUE, SKIP

NAME = "NodeResourcesFit"
REASON_TOO_MANY_PODS = "Too many pods"
DEFAULT_WEIGHT = 1


def insufficient(resource: str) -> str:
    """The failure reason for one resource, e.g. "Insufficient cpu"."""
    return f"Insufficient {resource}"


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


def events_to_register() -> list[ClusterEventWithHint]:
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
