"""Placement assertions a user would otherwise hand-write, each failing with a message
that names the offending nodes and pods.

They read a :class:`Placement` — the nodes and the bound pods of a cluster at one
moment — from a :class:`~ksched.testing.ScheduleOutcome` (the state after
``schedule``), a :class:`~ksched.testing.Cluster` (now) or a ``Placement``:

* :func:`assert_spread_skew` — matching pods per domain of a topology key, over every
  node that has the key; the skew (most minus fewest) at most ``max_skew``;
* :func:`assert_no_affinity_violations` — every bound pod's required node affinity
  (and nodeSelector) holds on its node, and its required pod affinity and
  anti-affinity (and every other pod's required anti-affinity towards it) hold, judged
  by the scheduler's own NodeAffinity and InterPodAffinity kernels on a snapshot of
  the placement, with the pod itself taken off; the message names the pods that
  conflict;
* :func:`assert_pods_per_node` — bounds on the pods per node;
* :func:`assert_utilization` — bounds on requested / allocatable of a resource per node
  (requests as the scheduler counts them: init containers, overhead...);
* :func:`assert_unschedulable_count` — how many pods of an outcome did not fit, with
  their FailedScheduling messages.

Each raises ``AssertionError`` (pytest shows the message as it is).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ksched.api.node import Node
    from ksched.api.pod import Pod
    from ksched.testing.cluster import Cluster
    from ksched.testing.scheduler import ScheduleOutcome

__all__ = [
    "Placement",
    "assert_no_affinity_violations",
    "assert_pods_per_node",
    "assert_spread_skew",
    "assert_unschedulable_count",
    "assert_utilization",
]

Obj = dict[str, Any]
#: How many offending nodes or pods a message lists before "and N more".
_SHOWN = 10


def _list(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


@dataclass(slots=True)
class Placement:
    """Nodes and bound pods, parsed the scheduler's way."""

    nodes: dict[str, Node]
    #: ``namespace/name`` → pod, bound pods only.
    pods: dict[str, Pod]

    @classmethod
    def of(cls, nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> Placement:
        from ksched.api.node import Node
        from ksched.api.pod import Pod

        parsed_nodes = {n.name: n for n in (Node.from_dict(dict(o)) for o in nodes)}
        bound = {}
        for o in pods:
            if (o.get("spec") or {}).get("nodeName"):
                p = Pod.from_dict(dict(o))
                if not p.is_terminal:
                    bound[p.key] = p
        return cls(parsed_nodes, bound)

    def on(self, node: str) -> list[str]:
        return sorted(k for k, p in self.pods.items() if p.node_name == node)

    def per_node(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {n: [] for n in self.nodes}
        for key, p in sorted(self.pods.items()):
            out.setdefault(p.node_name, []).append(key)
        return out


def _placement(state: ScheduleOutcome | Cluster | Placement) -> Placement:
    if isinstance(state, Placement):
        return state
    found = getattr(state, "placement", None)
    if isinstance(found, Placement):
        return found
    as_state = getattr(state, "state", None)
    if callable(as_state):
        result = as_state()
        if isinstance(result, Placement):
            return result
    raise TypeError(
        f"expected a ScheduleOutcome, a Cluster or a Placement, not {type(state).__name__}"
    )


def _selector_matcher(selector: Mapping[str, Any] | Mapping[str, str] | None) -> Any:
    """A LabelSelector (``matchLabels``/``matchExpressions``), or a plain label map."""
    from ksched.plugins.default_preemption import label_selector_matcher

    if selector is None:
        return lambda labels: True
    if "matchLabels" in selector or "matchExpressions" in selector:
        m = label_selector_matcher(dict(selector))
        return m if m is not None else (lambda labels: True)
    want = dict(selector)
    return lambda labels: all(labels.get(k) == v for k, v in want.items())


def _pods(
    p: Placement, namespace: str | None, selector: Mapping[str, Any] | None
) -> dict[str, Pod]:
    match = _selector_matcher(selector)
    return {
        k: pod
        for k, pod in p.pods.items()
        if (namespace is None or pod.namespace == namespace) and match(pod.labels)
    }


def assert_spread_skew(
    state: ScheduleOutcome | Cluster | Placement,
    topology_key: str,
    max_skew: int,
    *,
    selector: Mapping[str, Any] | None = None,
    namespace: str | None = None,
) -> None:
    """The pods matching ``selector`` (labels or a LabelSelector; all pods when None)
    in ``namespace`` are spread over the domains of ``topology_key`` with a skew of at
    most ``max_skew``."""
    p = _placement(state)
    domains: dict[str, list[str]] = {}
    for n in p.nodes.values():
        if topology_key in n.labels:
            domains.setdefault(n.labels[topology_key], [])
    if not domains:
        raise AssertionError(f"no node has the topology key {topology_key!r}")
    for key, pod in _pods(p, namespace, selector).items():
        at = p.nodes.get(pod.node_name)
        if at is not None and topology_key in at.labels:
            domains[at.labels[topology_key]].append(key)
    counts = {d: len(v) for d, v in domains.items()}
    hi = max(counts, key=lambda d: (counts[d], d))
    lo = min(counts, key=lambda d: (counts[d], d))
    skew = counts[hi] - counts[lo]
    if skew > max_skew:
        raise AssertionError(
            f"spread skew over {topology_key} is {skew} > {max_skew}: {topology_key}={hi} has "
            f"{counts[hi]} pods ({_list(domains[hi])}), {topology_key}={lo} has {counts[lo]}"
            + (f" ({_list(domains[lo])})" if domains[lo] else "")
            + f"; per domain: {dict(sorted(counts.items()))}"
        )


def assert_pods_per_node(
    state: ScheduleOutcome | Cluster | Placement,
    *,
    max: int | None = None,
    min: int | None = None,
    selector: Mapping[str, Any] | None = None,
    namespace: str | None = None,
    nodes: Iterable[str] | None = None,
) -> None:
    """Every node (of ``nodes``, default all) holds between ``min`` and ``max`` pods
    matching ``selector`` in ``namespace``."""
    p = _placement(state)
    per: dict[str, list[str]] = {n: [] for n in (nodes if nodes is not None else p.nodes)}
    for key, pod in _pods(p, namespace, selector).items():
        if pod.node_name in per:
            per[pod.node_name].append(key)
    bad = []
    for n, keys in sorted(per.items()):
        if (max is not None and len(keys) > max) or (min is not None and len(keys) < min):
            bad.append(f"{n} has {len(keys)}" + (f" ({_list(sorted(keys))})" if keys else ""))
    if bad:
        bounds = " and ".join(
            x
            for x in (f"≥ {min}" if min is not None else "", f"≤ {max}" if max is not None else "")
            if x
        )
        more = f"; and {len(bad) - _SHOWN} more nodes" if len(bad) > _SHOWN else ""
        raise AssertionError(f"pods per node should be {bounds}: " + "; ".join(bad[:_SHOWN]) + more)


def assert_utilization(
    state: ScheduleOutcome | Cluster | Placement,
    resource: str,
    *,
    max: float | None = None,
    min: float | None = None,
    nodes: Iterable[str] | None = None,
) -> None:
    """Requested / allocatable of ``resource`` on every node (of ``nodes``) is between
    ``min`` and ``max`` (fractions: 0.8 is 80%)."""
    p = _placement(state)
    requested: Counter[str] = Counter()
    for pod in p.pods.values():
        requested[pod.node_name] += pod.requests.get(resource, 0)
    bad = []
    for n in sorted(nodes if nodes is not None else p.nodes):
        node = p.nodes.get(n)
        if node is None:
            raise AssertionError(f"no node {n}")
        alloc = node.allocatable.get(resource, 0)
        frac = requested[n] / alloc if alloc else (0.0 if not requested[n] else float("inf"))
        if (max is not None and frac > max) or (min is not None and frac < min):
            pods = p.on(n)
            bad.append(
                f"{n} at {frac:.1%} ({requested[n]} of {alloc}; pods: {_list(pods) or 'none'})"
            )
    if bad:
        bounds = " and ".join(
            x
            for x in (
                f"≥ {min:.0%}" if min is not None else "",
                f"≤ {max:.0%}" if max is not None else "",
            )
            if x
        )
        raise AssertionError(
            f"{resource} utilization should be {bounds}: " + "; ".join(bad[:_SHOWN])
        )


def assert_unschedulable_count(
    outcome: ScheduleOutcome, expected: int | None = None, *, max: int | None = None
) -> None:
    """Exactly ``expected`` (or at most ``max``) pods of ``outcome`` did not fit."""
    got = outcome.unschedulable
    if (expected is not None and len(got) != expected) or (max is not None and len(got) > max):
        want = f"{expected}" if expected is not None else f"at most {max}"
        by_message: dict[str, list[str]] = {}
        for key, msg in sorted(got.items()):
            by_message.setdefault(msg, []).append(key)
        detail = "; ".join(f"{_list(keys)}: {msg}" for msg, keys in by_message.items())
        raise AssertionError(
            f"{len(got)} pods unschedulable, expected {want}" + (f": {detail}" if detail else "")
        )


def assert_no_affinity_violations(
    state: ScheduleOutcome | Cluster | Placement, *, namespace: str | None = None
) -> None:
    """No bound pod (of ``namespace``) breaks a required node affinity, node selector,
    pod affinity or pod anti-affinity term — its own or another pod's anti-affinity."""
    from ksched._core import Profile, Snapshot
    from ksched.backend.compile import compile_pod

    p = _placement(state)
    snapshot = Snapshot(1)
    for node in p.nodes.values():
        taints = [(t.key, t.value, t.effect) for t in node.taints]
        snapshot.upsert_node(node.name, node.allocatable, node.labels, taints, node.unschedulable)
    compiled = {}
    for key, pod in p.pods.items():
        compiled[key] = compile_pod(pod)
        if pod.node_name in p.nodes:
            snapshot.add_pod(compiled[key], pod.node_name)
    node_affinity = Profile(["NodeAffinity"], [])
    pod_affinity = Profile(["InterPodAffinity"], [])
    bad = []
    for key, pod in sorted(p.pods.items()):
        if (namespace is not None and pod.namespace != namespace) or pod.node_name not in p.nodes:
            continue
        unbound = compile_pod(_pending(pod))
        verdict = snapshot.filter_node(unbound, node_affinity, pod.node_name)
        if verdict is not None:
            bad.append(f"{key} on {pod.node_name}: {', '.join(verdict[2])}")
            continue
        snapshot.remove_pod(pod.uid)
        try:
            verdict = snapshot.filter_node(unbound, pod_affinity, pod.node_name)
        finally:
            snapshot.add_pod(compiled[key], pod.node_name)
        if verdict is not None:
            peers = _conflicting(p, key, pod)
            bad.append(
                f"{key} on {pod.node_name}: {', '.join(verdict[2])}"
                + (f" (with {_list(peers)})" if peers else "")
            )
    if bad:
        raise AssertionError(f"{len(bad)} affinity violation(s): " + "; ".join(bad[:_SHOWN]))


def _pending(pod: Pod) -> Pod:
    import dataclasses

    return dataclasses.replace(pod, node_name="")


def _term_namespaces(term: Mapping[str, Any], own: str) -> set[str] | None:
    if term.get("namespaceSelector") == {}:
        return None
    return set(term.get("namespaces") or ()) or {own}


def _conflicting(p: Placement, key: str, pod: Pod) -> list[str]:
    """The pods that make ``pod``'s domain break a required (anti-)affinity term, for the
    message (the kernels decided that it does)."""
    from ksched.plugins.default_preemption import label_selector_matcher

    out: set[str] = set()
    node_labels = p.nodes[pod.node_name].labels

    def same_domain(other: Pod, topology_key: str) -> bool:
        other_node = p.nodes.get(other.node_name)
        return (
            other_node is not None
            and topology_key in node_labels
            and other_node.labels.get(topology_key) == node_labels[topology_key]
        )

    def matches(term: Mapping[str, Any], owner: Pod, target: Pod) -> bool:
        ns = _term_namespaces(term, owner.namespace)
        m = label_selector_matcher(term.get("labelSelector"))
        return (ns is None or target.namespace in ns) and m is not None and m(target.labels)

    affinity = pod.affinity or {}
    anti = (affinity.get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    for other_key, other in p.pods.items():
        if other_key == key:
            continue
        for term in anti:
            if same_domain(other, term.get("topologyKey", "")) and matches(term, pod, other):
                out.add(other_key)
        theirs = ((other.affinity or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or []
        for term in theirs:
            if same_domain(other, term.get("topologyKey", "")) and matches(term, other, pod):
                out.add(other_key)
    return sorted(out)
