"""Cluster events and queueing hints: what may make an unschedulable pod schedulable.

A plugin that rejects pods registers the cluster events that could change its verdict
(``EventsToRegister`` upstream): a resource (``Node``, ``Pod``...) and a bit set of
actions (``Add``, ``Delete``, or a specific kind of update such as
``UpdateNodeAllocatable``). Each registration may carry a *queueing hint*: a function of
the rejected pod and the old/new objects of the event that answers ``QUEUE`` (the event
may help, retry the pod) or ``QUEUE_SKIP`` (it cannot help). A registration without a
hint always answers ``QUEUE``; a hint that raises counts as ``QUEUE`` so that a buggy hint
can never strand a pod.

The scheduler reports every informer change as the most specific event it can: a node
update whose labels and taints changed becomes two events, ``Node/UpdateNodeLabel`` and
``Node/UpdateNodeTaint`` (:func:`node_scheduling_properties_change`). A registration
*matches* an incoming event when the resources match (``Pod`` matches both the internal
``AssignedPod`` and ``UnschedulablePod`` resources) and the incoming action is one of the
registered ones and no wider than them (``Update`` registered matches an incoming
``UpdateNodeLabel``; ``UpdateNodeLabel`` registered does not match a plain ``Update``),
exactly upstream's ``MatchClusterEvents``.

These types live in the queue's package because the queue is their consumer; the
framework re-exports them for plugins.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ksched.api.node import Node
from ksched.api.pod import Pod

__all__ = [
    "ALL",
    "ASSIGNED_POD",
    "CSI_DRIVER",
    "CSI_NODE",
    "CSI_STORAGE_CAPACITY",
    "DEVICE_CLASS",
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_ASSIGNED_POD_UPDATE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_NODE_DELETE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_DELETE",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "NODE",
    "PERSISTENT_VOLUME",
    "PERSISTENT_VOLUME_CLAIM",
    "POD",
    "POD_GROUP",
    "RESOURCE_CLAIM",
    "RESOURCE_SLICE",
    "STORAGE_CLASS",
    "UNSCHEDULED_POD",
    "VOLUME_ATTACHMENT",
    "WILDCARD",
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "QueueingHint",
    "QueueingHintFn",
    "is_wildcard",
    "match_any_cluster_event",
    "match_cluster_events",
    "node_scheduling_properties_change",
    "pod_scheduling_properties_change",
]


class ActionType(enum.IntFlag):
    """One kind of change, as a bit; combine with ``|``. Upstream's bit order."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    #: The node's taints changed, or ``spec.unschedulable`` was cleared.
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_NODE_DECLARED_FEATURE = 1 << 7
    UPDATE_POD_LABEL = 1 << 8
    #: A resource request of the pod was reduced (in-place resize).
    UPDATE_POD_SCALE_DOWN = 1 << 9
    #: Tolerations were added (the API only allows additions).
    UPDATE_POD_TOLERATION = 1 << 10
    #: The last scheduling gate was removed.
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 11
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 12
    #: Any update, when no specific kind applies (or when the kind does not matter).
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = (1 << 13) - 1

    @property
    def label(self) -> str:
        """Upstream's ``ActionType.String()``: ``UpdateNodeLabel``, ``Add``..."""
        return _ACTION_LABELS.get(self, "")


_ACTION_LABELS: Final = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.ALL: "All",
    ActionType.UPDATE: "Update",
}

ALL: Final = ActionType.ALL

#: Resources. ``AssignedPod`` and ``UnschedulablePod`` are internal: the scheduler reports
#: pod events with them, plugins register ``Pod`` (which matches both).
POD: Final = "Pod"
NODE: Final = "Node"
ASSIGNED_POD: Final = "AssignedPod"
UNSCHEDULED_POD: Final = "UnschedulablePod"
WILDCARD: Final = "*"
#: The other resources, spelled as upstream's ``fwk.EventResource`` constants: an event's
#: label (metrics, logs) is the resource then the action, ``storage.k8s.io/CSINodeAdd``.
PERSISTENT_VOLUME: Final = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM: Final = "PersistentVolumeClaim"
CSI_NODE: Final = "storage.k8s.io/CSINode"
CSI_DRIVER: Final = "storage.k8s.io/CSIDriver"
VOLUME_ATTACHMENT: Final = "storage.k8s.io/VolumeAttachment"
CSI_STORAGE_CAPACITY: Final = "storage.k8s.io/CSIStorageCapacity"
STORAGE_CLASS: Final = "storage.k8s.io/StorageClass"
RESOURCE_CLAIM: Final = "resource.k8s.io/ResourceClaim"
RESOURCE_SLICE: Final = "resource.k8s.io/ResourceSlice"
DEVICE_CLASS: Final = "resource.k8s.io/DeviceClass"
POD_GROUP: Final = "scheduling.k8s.io/PodGroup"


class QueueingHint(enum.IntEnum):
    """A hint's answer: whether the event may make the rejected pod schedulable."""

    QUEUE_SKIP = 0
    QUEUE = 1


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A resource and the actions on it; ``custom_label`` names special events."""

    resource: str
    action: ActionType
    custom_label: str = ""
    #: ``action`` as a plain int: matching runs for every unschedulable pod on every
    #: event, and IntFlag arithmetic costs microseconds a call.
    bits: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bits", int(self.action))

    @property
    def label(self) -> str:
        """The name used in metrics and logs, as upstream's ``ClusterEvent.Label()``."""
        return self.custom_label or f"{self.resource}{self.action.label}"


#: ``hint(pod, old, new)``: ``old`` is None for an add, ``new`` is None for a delete.
#: The objects are parsed :class:`~ksched.api.node.Node` / :class:`~ksched.api.pod.Pod`;
#: for the other kinds (``PersistentVolumeClaim``, ``ResourceSlice``...) the API's dicts
#: as the shared informer holds them (:mod:`ksched.backend.shared_informers`).
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """One registration: the event and the optional hint (None behaves as QUEUE)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


EVENT_NODE_ADD: Final = ClusterEvent(NODE, ActionType.ADD)
EVENT_NODE_DELETE: Final = ClusterEvent(NODE, ActionType.DELETE)
EVENT_ASSIGNED_POD_ADD: Final = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_UPDATE: Final = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE)
EVENT_ASSIGNED_POD_DELETE: Final = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULED_POD_ADD: Final = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
EVENT_UNSCHEDULED_POD_UPDATE: Final = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE: Final = ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)
#: Wildcard events move every pod regardless of hints.
EVENT_UNSCHEDULABLE_TIMEOUT: Final = ClusterEvent(WILDCARD, ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE: Final = ClusterEvent(WILDCARD, ALL, "ForceActivate")

#: Queue "events" that are not cluster events (metric labels).
SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
BACKOFF_COMPLETE: Final = "BackoffComplete"
POP_FROM_BACKOFF_Q: Final = "PopFromBackoffQ"
FORCE_ACTIVATE: Final = "ForceActivate"
UNSCHEDULABLE_TIMEOUT: Final = "UnschedulableTimeout"


def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == WILDCARD and event.action == ALL


def _resources_match(registered: str, incoming: str) -> bool:
    return registered in (WILDCARD, incoming) or (
        registered == POD and incoming in (ASSIGNED_POD, UNSCHEDULED_POD)
    )


_ALL_BITS: Final = int(ALL)


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Whether ``incoming`` is the same as, or more specific than, ``registered``
    (upstream compares the action bits as integers too)."""
    r, i = registered.bits, incoming.bits
    if registered.resource == WILDCARD and r == _ALL_BITS:
        return True
    return r & i != 0 and i <= r and _resources_match(registered.resource, incoming.resource)


def match_any_cluster_event(incoming: ClusterEvent, registered: Sequence[ClusterEvent]) -> bool:
    return any(match_cluster_events(r, incoming) for r in registered)


# ---- turning object changes into events ----------------------------------------------


def _condition_statuses(node: Node) -> dict[Any, Any]:
    status = node.raw.get("status") or {}
    conditions = status.get("conditions") or []
    return {c.get("type"): c.get("status") for c in conditions if isinstance(c, dict)}


def _annotations(node: Node) -> Any:
    return (node.raw.get("metadata") or {}).get("annotations") or {}


def node_scheduling_properties_change(
    old: Node, new: Node, *, declared_features: bool = True
) -> list[ClusterEvent]:
    """The specific ``Node/Update*`` events of one node update (empty: nothing the
    scheduler cares about changed), as upstream's ``NodeSchedulingPropertiesChange``.
    ``declared_features``: the NodeDeclaredFeatures gate, without which a change of
    ``status.declaredFeatures`` is no event (absent and empty lists are equal, as
    ``slices.Equal`` compares them)."""
    actions: list[ActionType] = []
    if old.unschedulable != new.unschedulable and not new.unschedulable:
        # A node that became schedulable is reported as a taint change, as upstream.
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if old.allocatable != new.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if old.labels != new.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if old.taints != new.taints:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if _condition_statuses(old) != _condition_statuses(new):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    if _annotations(old) != _annotations(new):
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    if declared_features and old.declared_features != new.declared_features:
        actions.append(ActionType.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent(NODE, a) for a in actions]


def _scaled_down(old: Pod, new: Pod) -> bool:
    return any(new.requests.get(name, 0) < amount for name, amount in old.requests.items())


def _claim_statuses(pod: Pod) -> tuple[Any, Any]:
    status = pod.raw.get("status") or {}
    return status.get("resourceClaimStatuses"), status.get("extendedResourceClaimStatus")


def pod_scheduling_properties_change(old: Pod, new: Pod) -> list[ClusterEvent]:
    """The specific ``Pod/Update*`` events of one pod update, reported on the
    ``AssignedPod`` or ``UnschedulablePod`` resource; a plain ``Update`` when no specific
    kind applies (upstream's ``PodSchedulingPropertiesChange``)."""
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if old.labels != new.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(old.tolerations) != len(new.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if _claim_statuses(old) != _claim_statuses(new):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, a) for a in actions]
