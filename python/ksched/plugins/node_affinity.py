"""NodeAffinity: nodeSelector, required and preferred node affinity, and the
scheduler-enforced ``addedAffinity`` (``NodeAffinityArgs``). Default weight 2.

Kernels in ``rust/plugins/node_affinity.rs``. The queueing hint (upstream's
``isSchedulableAfterNodeChange``) matches the pod's nodeSelector and required node
affinity against the event's node here, in Python (one node per call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.backend.queue.cluster_event import (
    NODE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
DEFAULT_WEIGHT = 2


def _requirement(req: Mapping[str, Any], value: str | None) -> bool:
    """``NodeSelectorRequirement`` against a label (or field) value (None: absent)."""
    op = req.get("operator")
    values = [str(v) for v in req.get("values") or ()]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt"):
        if value is None or len(values) != 1:
            return False
        have, want = int(value), int(values[0])  # ValueError: a hint error, Queue
        return have > want if op == "Gt" else have < want
    raise ValueError(f"{op!r} is not a valid node selector operator")


def _term_matches(term: Mapping[str, Any], node: Node) -> bool:
    exprs = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not exprs and not fields:
        return False  # an empty term matches no node
    labels = node.labels
    if not all(_requirement(r, labels.get(str(r.get("key")))) for r in exprs):
        return False
    for r in fields:
        if r.get("key") != "metadata.name":
            raise ValueError(f"{r.get('key')!r} is not a valid field selector key")
        if not _requirement(r, node.name):
            return False
    return True


def required_node_affinity_matches(pod: Pod, node: Node) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: the nodeSelector and
    the required terms (ORed). Raises ValueError where upstream's Match errs."""
    labels = node.labels
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    affinity: Any = (pod.affinity or {}).get("nodeAffinity")
    required = (
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(affinity, dict)
        else None
    )
    if not isinstance(required, dict):
        return True
    return any(
        _term_matches(t, node)
        for t in required.get("nodeSelectorTerms") or ()
        if isinstance(t, dict)
    )


def _selector_matches(selector: Mapping[str, Any], node: Node) -> bool:
    """``nodeaffinity.NodeSelector.Match``: the terms ORed."""
    return any(
        _term_matches(t, node)
        for t in selector.get("nodeSelectorTerms") or ()
        if isinstance(t, dict)
    )


def is_schedulable_after_node_change(pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange``: Queue when the added node matches, or
    an update made the node match (unmatched → matched). Without ``addedAffinity``;
    :class:`NodeAffinity` checks it first, as upstream."""
    assert new is not None
    if not required_node_affinity_matches(pod, new):
        return SKIP
    if old is None:
        return QUEUE
    return SKIP if required_node_affinity_matches(pod, old) else QUEUE


_NODE_ACTIONS = ActionType.ADD | ActionType.UPDATE_NODE_LABEL


def events_to_register() -> list[ClusterEventWithHint]:
    """Upstream ``EventsToRegister`` with queueing hints on."""
    return [
        ClusterEventWithHint(ClusterEvent(NODE, _NODE_ACTIONS), is_schedulable_after_node_change)
    ]


class NodeAffinity:
    """The Python half of NodeAffinity: its queueing hint with ``NodeAffinityArgs``.
    With a scheduler-enforced ``addedAffinity``, a node that does not match it cannot
    help (upstream skips it before the pod's own affinity)."""

    name = NAME

    def __init__(self, added: Mapping[str, Any] | None = None) -> None:
        self._added = added

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None) -> NodeAffinity:
        """From ``NodeAffinityArgs`` (upstream JSON shape, validated)."""
        added = (args or {}).get("addedAffinity")
        required = (
            added.get("requiredDuringSchedulingIgnoredDuringExecution")
            if isinstance(added, dict)
            else None
        )
        return cls(required if isinstance(required, dict) else None)

    def _hint(self, pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
        assert new is not None and self._added is not None
        if not _selector_matches(self._added, new):
            return SKIP
        return is_schedulable_after_node_change(pod, old, new)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if self._added is None:
            return events_to_register()
        return [ClusterEventWithHint(ClusterEvent(NODE, _NODE_ACTIONS), self._hint)]
