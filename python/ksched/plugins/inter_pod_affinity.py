"""InterPodAffinity: required and preferred pod affinity and anti-affinity, including
existing pods' anti-affinity (symmetry) and ``hardPodAffinityWeight``. Default weight 2.

Kernels in ``rust/plugins/inter_pod_affinity.rs``. The queueing hints (upstream's
``isSchedulableAfterPodChange`` / ``isSchedulableAfterNodeChange``) are here, in Python:
they see one event and one pending pod, so they match the pod's required terms against
the event's objects directly (no snapshot), as upstream does, without namespace labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ksched.api.node import Node
from ksched.api.pod import Pod
from ksched.api.volume import label_selector_matches
from ksched.backend.queue.cluster_event import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ksched.framework.builtin_events import QUEUE, SKIP

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
DEFAULT_WEIGHT = 2

_NO_LABELS: Final[dict[str, str]] = {}


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelectorAsSelector(selector).Matches(labels)``: a nil selector
    matches nothing, an empty one everything; an invalid one raises ValueError (a hint
    that raises counts as Queue, as upstream's hint returning the error)."""
    if selector is None:
        return False
    if not isinstance(selector, dict):
        raise ValueError(f"invalid label selector {selector!r}")
    return label_selector_matches(selector, dict(labels))


class _Term:
    """``fwk.AffinityTerm`` of one required (anti-)affinity term of ``owner``."""

    __slots__ = ("namespace_selector", "namespaces", "selector", "topology_key")

    def __init__(self, owner: Pod, term: Mapping[str, Any]) -> None:
        self.selector = term.get("labelSelector")
        self.namespace_selector = term.get("namespaceSelector")
        names = term.get("namespaces") or []
        # getNamespacesFromPodAffinityTerm: the owner's namespace when neither is set.
        if not names and self.namespace_selector is None:
            self.namespaces: frozenset[str] = frozenset((owner.namespace,))
        else:
            self.namespaces = frozenset(str(n) for n in names)
        self.topology_key = str(term.get("topologyKey") or "")

    def matches(self, pod: Pod, ns_labels: Mapping[str, str] = _NO_LABELS) -> bool:
        """``AffinityTerm.Matches``."""
        if pod.namespace in self.namespaces or selector_matches(self.namespace_selector, ns_labels):
            return selector_matches(self.selector, pod.labels)
        return False


def _terms(pod: Pod, kind: str) -> list[_Term]:
    """``GetAffinityTerms(pod, Get{PodAffinity,PodAntiAffinity}Terms(...))``: the
    required terms of ``kind`` (``podAffinity`` / ``podAntiAffinity``)."""
    affinity = pod.affinity or {}
    section = affinity.get(kind)
    if not isinstance(section, dict):
        return []
    required = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [_Term(pod, t) for t in required if isinstance(t, dict)]


def _matches_all(terms: Sequence[_Term], pod: Pod) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: no terms match nothing; the namespace
    labels are not looked up (nil)."""
    return bool(terms) and all(t.matches(pod) for t in terms)


def _unscheduled(pod: Pod | None) -> bool:
    return pod is not None and not pod.node_name and not pod.nominated_node_name


def is_schedulable_after_pod_change(pod: Pod, old: Pod | None, new: Pod | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterPodChange``."""
    if new is not None and old is not None and pod.uid == new.uid:
        # The only update registered is UpdatePodLabel: the target pod's labels changed.
        return QUEUE
    if _unscheduled(new) or _unscheduled(old):
        return SKIP
    terms = _terms(pod, "podAffinity")
    anti_terms = _terms(pod, "podAntiAffinity")
    if new is not None and old is not None:
        if not _matches_all(terms, old) and _matches_all(terms, new):
            return QUEUE
        if _matches_all(anti_terms, old) and not _matches_all(anti_terms, new):
            return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if _matches_all(terms, new) else SKIP
    assert old is not None
    if _matches_all(anti_terms, old):
        return QUEUE
    return QUEUE if _matches_all(_terms(old, "podAntiAffinity"), pod) else SKIP


def is_schedulable_after_node_change(pod: Pod, old: Node | None, new: Node | None) -> QueueingHint:
    """Upstream ``isSchedulableAfterNodeChange`` (registered for Add and
    UpdateNodeLabel: ``new`` is never None)."""
    assert new is not None
    new_labels = new.labels
    for term in _terms(pod, "podAffinity"):
        key = term.topology_key
        if old is None:
            if key in new_labels:
                return QUEUE
            continue
        old_labels = old.labels
        if key in new_labels and (key not in old_labels or old_labels[key] != new_labels[key]):
            return QUEUE
    for term in _terms(pod, "podAntiAffinity"):
        if old is None:
            return QUEUE
        key = term.topology_key
        old_labels = old.labels
        if key in old_labels and (key not in new_labels or old_labels[key] != new_labels[key]):
            return QUEUE
    return SKIP


def events_to_register() -> list[ClusterEventWithHint]:
    """Upstream ``EventsToRegister`` with queueing hints on."""
    return [
        ClusterEventWithHint(
            ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
            is_schedulable_after_pod_change,
        ),
        ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            is_schedulable_after_node_change,
        ),
    ]
