"""PodTopologySpread: maxSkew across topology domains (Filter for DoNotSchedule, Score
for ScheduleAnyway), with the System default constraints (hostname maxSkew 3, zone
maxSkew 5) for pods of a workload that set none. Default weight 2.

Kernels in ``rust/plugins/pod_topology_spread.rs``; the workload selector comes from
:mod:`ksched.backend.controllers`. The queueing hints (upstream's
``isSchedulableAfterPodChange`` / ``isSchedulableAfterNodeChange``) are here: they read
the pod's DoNotSchedule constraints (``matchLabelKeys`` merged into the selector) and the
event's objects only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

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
from ksched.plugins.inter_pod_affinity import selector_matches

if TYPE_CHECKING:
    from ksched.framework.interface import Handle

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
DEFAULT_WEIGHT = 2
DO_NOT_SCHEDULE: Final = "DoNotSchedule"


class _Constraint:
    """A hard (``DoNotSchedule``) constraint as upstream's ``topologySpreadConstraint``:
    its topology key, selector (with ``matchLabelKeys`` merged in) and taints policy."""

    __slots__ = ("honor_taints", "match_labels", "selector", "topology_key")

    def __init__(self, c: dict[str, Any], pod_labels: dict[str, str]) -> None:
        self.topology_key = str(c.get("topologyKey") or "")
        self.selector = c.get("labelSelector")
        # filterTopologySpreadConstraints: matchLabelKeys add key=value requirements
        # (mergeLabelSetWithSelector; a nil selector stays Nothing).
        self.match_labels = {
            k: pod_labels[k] for k in c.get("matchLabelKeys") or () if k in pod_labels
        }
        self.honor_taints = c.get("nodeTaintsPolicy") == "Honor"

    def matches(self, labels: dict[str, str]) -> bool:
        if self.selector is None or not selector_matches(self.selector, labels):
            return False
        return all(labels.get(k) == v for k, v in self.match_labels.items())


def _constraints(pod: Pod) -> list[_Constraint]:
    """Upstream ``getConstraints`` for the hints: the pod's DoNotSchedule constraints.
    A pod without constraints gets the profile's default constraints filtered to
    DoNotSchedule, which under the default ``System`` defaulting (all ScheduleAnyway)
    are none (``List`` defaulting: :class:`PodTopologySpread`)."""
    return [
        _Constraint(c, pod.labels)
        for c in pod.topology_spread_constraints
        if c.get("whenUnsatisfiable") == DO_NOT_SCHEDULE
    ]


def _involved(incoming: Pod, target: Pod) -> bool:
    """Upstream ``involvedInTopologySpreading``."""
    if incoming.uid == target.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == target.namespace


def _any_matches(constraints: Sequence[_Constraint], labels: dict[str, str]) -> bool:
    return any(c.matches(labels) for c in constraints)


def _tolerations(pod: Pod) -> Any:
    return (pod.raw.get("spec") or {}).get("tolerations") or []


def _after_pod_change(
    pod: Pod, old: Pod | None, new: Pod | None, constraints: Sequence[_Constraint]
) -> QueueingHint:
    if (new is not None and not _involved(new, pod)) or (
        old is not None and not _involved(old, pod)
    ):
        return SKIP
    if new is not None and old is not None:
        if (
            pod.uid == new.uid
            and _tolerations(new) != _tolerations(old)
            and any(c.honor_taints for c in constraints)
        ):
            return QUEUE
        if new.labels == old.labels:
            return SKIP
        for c in constraints:
            if c.matches(old.labels) != c.matches(new.labels):
                return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if _any_matches(constraints, new.labels) else SKIP
    assert old is not None
    return QUEUE if _any_matches(constraints, old.labels) else SKIP


def is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterPodChange`` (``System`` defaulting)."""
    return _after_pod_change(pod, old, new, _constraints(pod))


def _node_matches(labels: dict[str, str], constraints: Sequence[_Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``."""
    return all(c.topology_key in labels for c in constraints)


def _taints(node: Node) -> Any:
    return (node.raw.get("spec") or {}).get("taints") or []


def _after_node_change(
    old: Node | None, new: Node | None, constraints: Sequence[_Constraint]
) -> QueueingHint:
    old_matching = old is not None and _node_matches(old.labels, constraints)
    new_matching = new is not None and _node_matches(new.labels, constraints)
    if old is not None and new is not None:
        if old_matching != new_matching:
            return QUEUE
        if new_matching and (
            any(
                old.labels.get(c.topology_key) != new.labels.get(c.topology_key)
                for c in constraints
            )
            or _taints(old) != _taints(new)
        ):
            return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if new_matching else SKIP
    return QUEUE if old_matching else SKIP


def is_schedulable_after_node_change(pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange`` (``System`` defaulting)."""
    return _after_node_change(old, new, _constraints(pod))


_POD_ACTIONS: Final = (
    ActionType.ADD
    | ActionType.UPDATE_POD_LABEL
    | ActionType.UPDATE_POD_TOLERATION
    | ActionType.DELETE
)
_NODE_ACTIONS: Final = (
    ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
)


def events_to_register() -> list[ClusterEventWithHint]:
    """Upstream ``EventsToRegister`` with queueing hints on (``System`` defaulting)."""
    return [
        ClusterEventWithHint(ClusterEvent(POD, _POD_ACTIONS), is_schedulable_after_pod_change),
        ClusterEventWithHint(ClusterEvent(NODE, _NODE_ACTIONS), is_schedulable_after_node_change),
    ]


class PodTopologySpread:
    """The Python half of PodTopologySpread: its queueing hints with the plugin's
    arguments. Under ``List`` defaulting, a pod without constraints of its own gets the
    DoNotSchedule ``defaultConstraints`` with its default selector (upstream
    ``buildDefaultConstraints``: the Services and controllers that select it; none, no
    constraints), which the hints read as the Filter does."""

    name = NAME

    def __init__(self, default_constraints: Sequence[dict[str, Any]] = ()) -> None:
        self._defaults = [
            c for c in default_constraints if c.get("whenUnsatisfiable") == DO_NOT_SCHEDULE
        ]
        self._handle: Handle | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> PodTopologySpread:
        """From ``PodTopologySpreadArgs`` (upstream JSON shape, validated)."""
        if not args or args.get("defaultingType") != "List":
            return cls()
        return cls(list(args.get("defaultConstraints") or ()))

    def setup(self, handle: Handle) -> None:
        self._handle = handle

    def constraints(self, pod: Pod) -> list[_Constraint]:
        """Upstream ``getConstraints(pod)`` with DoNotSchedule."""
        if pod.topology_spread_constraints or not self._defaults or self._handle is None:
            return _constraints(pod)
        selector = self._handle.default_spread_selector(pod)
        if selector is None:
            return []
        # The default selector replaces each constraint's own (and its matchLabelKeys).
        return [
            _Constraint({**c, "labelSelector": selector, "matchLabelKeys": None}, pod.labels)
            for c in self._defaults
        ]

    def _pod_hint(self, pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
        return _after_pod_change(pod, old, new, self.constraints(pod))

    def _node_hint(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        return _after_node_change(old, new, self.constraints(pod))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self._defaults:
            return events_to_register()
        return [
            ClusterEventWithHint(ClusterEvent(POD, _POD_ACTIONS), self._pod_hint),
            ClusterEventWithHint(ClusterEvent(NODE, _NODE_ACTIONS), self._node_hint),
        ]
