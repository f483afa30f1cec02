"""PodTopologySpread: maxSkew across topology domains (Filter for DoNotSchedule, Score
for ScheduleAnyway), with the System default constraints (hostname maxSkew 3, zone
maxSkew 5) for pods of a workload that set none. Default weight 2.

Kernels in ``rust/plugins/pod_topology_spread.rs``; the workload selector comes from
:mod:`ksched.backend.controllers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
DEFAULT_WEIGHT = 2


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
    are none."""
    return [
        _Constraint(c, pod.labels)
        for c in pod.topology_spread_constraints
        if c.get("whenUnsatisfiable") == "DoNotSchedule"
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


def is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterPodChange``."""
    if (new is not None and not _involved(new, pod)) or (
        old is not None and not _involved(old, pod)
    ):
        return SKIP
    constraints = _constraints(pod)
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


def _node_matches(labels: dict[str, str], constraints: Sequence[_Constraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``."""
    return all(c.topology_key in labels for c in constraints)


def _taints(node: Node) -> Any:
    return (node.raw.get("spec") or {}).get("taints") or []


def is_schedulable_after_node_change(pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``."""
    constraints = _constraints(pod)
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


def events_to_register() -> list[ClusterEventWithHint]:
    """Upstream ``EventsToRegister`` with queueing hints on."""
    return [
        ClusterEventWithHint(
            ClusterEvent(
                POD,
                ActionType.ADD
                | ActionType.UPDATE_POD_LABEL
                | ActionType.UPDATE_POD_TOLERATION
                | ActionType.DELETE,
            ),
            is_schedulable_after_pod_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(
                NODE,
                ActionType.ADD
                | ActionType.DELETE
                | ActionType.UPDATE_NODE_LABEL
                | ActionType.UPDATE_NODE_TAINT,
            ),
            is_schedulable_after_node_change,
        ),
    ]
