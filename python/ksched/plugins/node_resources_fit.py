"""NodeResourcesFit: free resources (Filter) and the scoring strategy (Score).

Kernels in ``rust/plugins/node_resources_fit.rs``; args (``NodeResourcesFitArgs``:
scoringStrategy LeastAllocated cpu:1 memory:1 by default, ignoredResources,
ignoredResourceGroups) are defaulted and validated by :mod:`ksched.config`. Default
weight 1. This module holds the events that can make a rejected pod fit.

Filter counts a pod's pod-level requests (``spec.resources``); Score does not: v1.36.5's
``NewFit`` builds its scorer without pod-level resources, so it scores the containers'
requests (``Pod.fit_score_requests``). ksched mirrors this upstream quirk.

With DRAExtendedResource (beta, on in v1.36) an extended resource that a DeviceClass
maps to is left to DynamicResources on a node whose allocatable has none of it
(upstream ``shouldDelegateResourceToDRA``): the Filter kernel reads the mapped names
from the snapshot, and :class:`NodeResourcesFit`, the plugin's Python half, holds the
hints that need them (a node change, and the DeviceClass events upstream registers with
the gate on). The half reaches the mapping through the scheduler's DRA manager
(:mod:`ksched.plugins.dynamic_resources.manager`), which it creates if no
DynamicResources plugin did, as upstream's exists whatever the profiles enable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    DEVICE_CLASS,
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

#: ``resource name -> mapped`` (upstream ``DeviceClassResolver().GetDeviceClass != nil``).
Mapped = Callable[[str], bool]


def _never(name: str) -> bool:
    return False


NAME = "NodeResourcesFit"
REASON_TOO_MANY_PODS = "Too many pods"
DEFAULT_WEIGHT = 1


def insufficient(resource: str) -> str:
    """The failure reason for one resource, e.g. "Insufficient cpu"."""
    return f"Insufficient {resource}"


def _fits_empty_node(pod: Pod, node: Node, mapped: Mapped = _never) -> bool:
    """Upstream ``isFit``: the pod fits the node if nothing else ran there (a mapped
    extended resource the node has none of is DynamicResources' to check)."""
    alloc = node.allocatable
    if alloc.get("pods", 0) < 1:
        return False
    for name, amount in pod.requests.items():
        if not amount:
            continue
        have = alloc.get(name, 0)
        if have <= 0 and mapped(name):
            continue
        if amount > have:
            return False
    return True


def _requested_resources_increased(pod: Pod, old: Node, new: Node, mapped: Mapped = _never) -> bool:
    if new.allocatable.get("pods", 0) > old.allocatable.get("pods", 0):
        return True
    for name, amount in pod.requests.items():
        if amount and new.allocatable.get(name, 0) > old.allocatable.get(name, 0):
            return True
        if amount and new.allocatable.get(name, 0) <= 0 and mapped(name):
            return True
    return False


def _fit_after_node_change(
    pod: Pod, old: Node | None, new: Node, mapped: Mapped = _never
) -> QueueingHint:
    if not _fits_empty_node(pod, new, mapped):
        return SKIP
    if old is None:
        return QUEUE
    return QUEUE if _requested_resources_increased(pod, old, new, mapped) else SKIP


def _explicit_name(cls: Any) -> str:
    spec = cls.get("spec") if isinstance(cls, dict) else None
    name = spec.get("extendedResourceName") if isinstance(spec, dict) else None
    return name if isinstance(name, str) else ""


def _fit_after_device_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterDeviceClassEvent``."""
    from ksched.plugins.dynamic_resources.extended import DEVICE_CLASS_PREFIX

    if not isinstance(new, dict):
        return SKIP
    requests = pod.requests
    if old is not None:
        if _explicit_name(old) == _explicit_name(new):
            return SKIP
    else:
        name = str((new.get("metadata") or {}).get("name") or "")
        if DEVICE_CLASS_PREFIX + name in requests:
            return QUEUE
    explicit = _explicit_name(new)
    if explicit and explicit in requests:
        return QUEUE
    return SKIP


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


class NodeResourcesFit:
    """NodeResourcesFit's Python half: its hints with the DRA extended resource
    mapping (the Filter and Score run in the Rust core)."""

    name = NAME

    def __init__(self) -> None:
        self._manager: Any = None

    def setup(self, handle: Handle) -> None:
        from ksched.plugins.dynamic_resources.manager import dra_manager

        self._manager = dra_manager(handle)

    def _mapped(self, name: str) -> bool:
        manager = self._manager
        return manager is not None and manager.device_class_for(name) is not None

    def _after_node_change(self, pod: Pod, old: Node | None, new: Node) -> QueueingHint:
        return _fit_after_node_change(pod, old, new, self._mapped)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        events = [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                _fit_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self._after_node_change,
            ),
        ]
        if self._manager is None or self._manager.classes is not None:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                    _fit_after_device_class_change,
                )
            )
        return events
