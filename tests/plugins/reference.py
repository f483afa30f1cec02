"""A plain-Python reference of PodTopologySpread and InterPodAffinity (test-only).

Written from kube-scheduler v1.36's plugin sources (pkg/scheduler/framework/plugins/
podtopologyspread and interpodaffinity, framework.AffinityTerm, component-helpers'
nodeaffinity and the corev1 toleration helpers) for clarity, not speed: every phase is a
loop over the cluster dicts of ``harness.py``, with no caching and no incremental state,
so that a reader can check each rule against upstream line by line.

``explain(cluster, pod, filters, scores, args)`` mirrors ``Snapshot.explain`` for the
plugins it knows (NodeUnschedulable, PodTopologySpread, InterPodAffinity): every node's
filter status (the first failing filter, in profile order), and on the feasible nodes each
score plugin's raw and normalized score over the feasible set, with a plugin whose
PreScore returns Skip scoring 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
MAX_NODE_SCORE = 100

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

# Failure reasons, verbatim from upstream.
ERR_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_SPREAD_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
ERR_SPREAD_MISSING_LABEL = ERR_SPREAD_CONSTRAINTS + " (missing required label)"
ERR_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"

SYSTEM_DEFAULT_CONSTRAINTS = [
    {"maxSkew": 3, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"},
    {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
]


# --- label selectors (metav1.LabelSelectorAsSelector) ---------------------------------


@dataclass(frozen=True)
class Selector:
    """A parsed LabelSelector. ``nothing`` is what a nil selector becomes (matches no
    set); otherwise the requirements are ANDed and an empty list matches every set."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): no requirements (Nothing is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        for key, op, values in self.requirements:
            present = key in labels
            if op in ("In", "Equals"):
                ok = present and labels[key] in values
            elif op == "NotIn":
                ok = not present or labels[key] not in values
            elif op == "Exists":
                ok = present
            elif op == "DoesNotExist":
                ok = not present
            else:  # pragma: no cover - the generators only use the four operators
                raise ValueError(f"unknown selector operator {op}")
            if not ok:
                return False
        return True

    def with_labels(self, labels: Mapping[str, str]) -> Selector:
        """mergeLabelSetWithSelector: the label set ANDed in front of the requirements
        (a Nothing selector stays Nothing)."""
        if self.nothing:
            return self
        extra = tuple((k, "Equals", frozenset([v])) for k, v in labels.items())
        return Selector(extra + self.requirements)


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def parse_selector(s: Obj | None) -> Selector:
    if s is None:
        return NOTHING
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for k, v in (s.get("matchLabels") or {}).items():
        reqs.append((k, "Equals", frozenset([v])))
    for e in s.get("matchExpressions") or []:
        reqs.append((e["key"], e["operator"], frozenset(e.get("values") or [])))
    return Selector(tuple(reqs))


# --- node affinity and taints (component-helpers) -------------------------------------


def _node_requirement_matches(req: Obj, values_of: Mapping[str, str]) -> bool:
    key, op, values = req["key"], req["operator"], req.get("values") or []
    present = key in values_of
    if op == "In":
        return present and values_of[key] in values
    if op == "NotIn":
        return not present or values_of[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(values) != 1:
            return False
        try:
            have, want = int(values_of[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _node_selector_term_matches(t: Obj, n: Obj) -> bool:
    """A term matches when all its expressions and fields do; an empty term matches
    nothing."""
    exprs = t.get("matchExpressions") or []
    fields = t.get("matchFields") or []
    if not exprs and not fields:
        return False
    if not all(_node_requirement_matches(r, n["labels"]) for r in exprs):
        return False
    return all(_node_requirement_matches(r, {"metadata.name": n["name"]}) for r in fields)


def required_node_affinity_matches(p: Obj, n: Obj) -> bool:
    """nodeaffinity.GetRequiredNodeAffinity(pod).Match(node): the nodeSelector map and
    the required node selector terms (ORed)."""
    spec = p["spec"]
    for k, v in (spec.get("nodeSelector") or {}).items():
        if n["labels"].get(k) != v:
            return False
    na = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return True
    return any(_node_selector_term_matches(t, n) for t in required.get("nodeSelectorTerms") or [])


def tolerates(toleration: Obj, key: str, value: str, effect: str) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    op = toleration.get("operator") or "Equal"
    if op == "Equal":
        return (toleration.get("value") or "") == value
    return op == "Exists"


def has_untolerated_no_schedule_taint(p: Obj, n: Obj) -> bool:
    """FindMatchingUntoleratedTaint with DoNotScheduleTaintsFilterFunc."""
    tolerations = p["spec"].get("tolerations") or []
    for key, value, effect in n["taints"]:
        if effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, key, value, effect) for t in tolerations):
            return True
    return False


# --- the mini framework ---------------------------------------------------------------


@dataclass
class _Cluster:
    nodes: list[Obj]
    pods_on: dict[str, list[Obj]]
    namespaces: dict[str, dict[str, str]]

    @classmethod
    def of(cls, c: Obj) -> _Cluster:
        pods_on: dict[str, list[Obj]] = defaultdict(list)
        for p in c["pods"]:
            pods_on[p["node"]].append(p)
        return cls(list(c["nodes"]), pods_on, c["namespaces"])

    def pods(self, n: Obj) -> list[Obj]:
        return self.pods_on.get(n["name"], [])


@dataclass
class _Status:
    plugin: str
    code: str
    reason: str

    def as_dict(self) -> Obj:
        return {"plugin": self.plugin, "code": self.code, "reasons": [self.reason]}


def _priority(p: Obj) -> int:
    return int(p["spec"].get("priority") or 0)


def _plugins(cl: _Cluster, p: Obj, args: Mapping[str, Obj]) -> dict[str, _Plugin]:
    return {
        "NodeUnschedulable": _NodeUnschedulable(),
        "PodTopologySpread": PodTopologySpread(cl, p, args.get("PodTopologySpread") or {}),
        "InterPodAffinity": InterPodAffinity(cl, p, args.get("InterPodAffinity") or {}),
    }


def _run_filters(
    plugins: Mapping[str, _Plugin], filters: Sequence[str], p: Obj, n: Obj
) -> _Status | None:
    for name in filters:
        s = plugins[name].filter(p, n)
        if s is not None:
            return s
    return None


def explain(
    c: Obj,
    p: Obj,
    filters: Sequence[str],
    scores: Sequence[tuple[str, int]] = (),
    args: Mapping[str, Obj] | None = None,
) -> dict[str, Obj]:
    """What ``Snapshot.explain`` should return for pod ``p`` on cluster ``c``.

    ``c["nominated"]`` (optional) holds ``(pod, node)`` nominations. As upstream's
    RunFilterPluginsWithNominatedPods, a node with nominated pods of equal or higher
    priority (other than ``p``) is filtered first with them added (here: PreFilter
    recomputed with them on the node, marked ``nominated`` for ``_count_matching``; the
    plugins' Skip decided without them), then as it is."""
    args = dict(args or {})
    cl = _Cluster.of(c)
    plugins = _plugins(cl, p, args)
    status: dict[str, _Status | None] = {}
    for n in cl.nodes:
        added = [
            {**q, "nominated": True}
            for q, at in c.get("nominated", ())
            if at == n["name"] and _priority(q) >= _priority(p) and q["uid"] != p["uid"]
        ]
        s = None
        if added:
            pods_on = {**cl.pods_on, n["name"]: [*cl.pods(n), *added]}
            first = _plugins(_Cluster(cl.nodes, pods_on, cl.namespaces), p, args)
            ipa = first["InterPodAffinity"]
            assert isinstance(ipa, InterPodAffinity)
            base_ipa = plugins["InterPodAffinity"]
            assert isinstance(base_ipa, InterPodAffinity)
            ipa.skip_filter = base_ipa.skip_filter
            s = _run_filters(first, filters, p, n)
        status[n["name"]] = s if s is not None else _run_filters(plugins, filters, p, n)
    feasible = [n for n in cl.nodes if status[n["name"]] is None]
    per_plugin: dict[str, dict[str, tuple[int, int]]] = {}
    for name, _weight in scores:
        per_plugin[name] = plugins[name].score(feasible) if feasible else {}
    out: dict[str, Obj] = {}
    for n in cl.nodes:
        s = status[n["name"]]
        entry: Obj = {
            "node": n["name"],
            "status": None if s is None else s.as_dict(),
            "scores": {},
            "total": 0,
        }
        if s is None:
            for name, weight in scores:
                r, norm = per_plugin[name][n["name"]]
                entry["scores"][name] = {"raw": r, "normalized": norm}
                entry["total"] += norm * weight
        out[n["name"]] = entry
    return out


class _Plugin(Protocol):
    def filter(self, p: Obj, n: Obj) -> _Status | None: ...

    def score(self, feasible: list[Obj]) -> dict[str, tuple[int, int]]: ...


class _NodeUnschedulable:
    def filter(self, p: Obj, n: Obj) -> _Status | None:
        if not n["unschedulable"]:
            return None
        for t in p["spec"].get("tolerations") or []:
            if tolerates(t, "node.kubernetes.io/unschedulable", "", "NoSchedule"):
                return None
        return _Status("NodeUnschedulable", UNRESOLVABLE, ERR_NODE_UNSCHEDULABLE)

    def score(self, feasible: list[Obj]) -> dict[str, tuple[int, int]]:  # pragma: no cover
        # NodeUnschedulable is a Filter plugin only: scoring with it is a usage error.
        raise TypeError("NodeUnschedulable has no Score extension point")


# --- PodTopologySpread ----------------------------------------------------------------


@dataclass
class Constraint:
    """A topologySpreadConstraint as the plugin uses it (selector parsed, defaults set)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"

    def includes(self, p: Obj, n: Obj) -> bool:
        """matchNodeInclusionPolicies: may this node's pods count for this constraint?"""
        if self.node_affinity_policy == "Honor" and not required_node_affinity_matches(p, n):
            return False
        return not (self.node_taints_policy == "Honor" and has_untolerated_no_schedule_taint(p, n))


def _constraints_of(
    raw: Sequence[Obj], pod_labels: Mapping[str, str], when: str
) -> list[Constraint]:
    """filterTopologySpreadConstraints: the constraints with this whenUnsatisfiable, with
    matchLabelKeys' values from the pod's labels ANDed into the selector."""
    out = []
    for c in raw:
        if c["whenUnsatisfiable"] != when:
            continue
        sel = parse_selector(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or []
        extra = {k: pod_labels[k] for k in keys if k in pod_labels}
        if extra:
            sel = sel.with_labels(extra)
        out.append(
            Constraint(
                max_skew=c["maxSkew"],
                topology_key=c["topologyKey"],
                selector=sel,
                min_domains=c.get("minDomains") or 1,
                node_affinity_policy=c.get("nodeAffinityPolicy") or "Honor",
                node_taints_policy=c.get("nodeTaintsPolicy") or "Ignore",
            )
        )
    return out


def _has_all_keys(n: Obj, constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in n["labels"] for c in constraints)


def _count_matching(pods: Sequence[Obj], sel: Selector, namespace: str) -> int:
    """countPodsMatchSelector: an empty selector counts nothing; terminating pods and
    pods of other namespaces never count. A nominated pod added by AddPod
    (``updateWithPod``) counts whenever it is in the namespace and the selector matches
    it, empty selector or not."""
    return sum(
        1
        for q in pods
        if q["namespace"] == namespace
        and sel.matches(q["labels"])
        and (q.get("nominated") or not (sel.empty or q["deleting"]))
    )


def go_round(x: float) -> int:
    """math.Round: half away from zero."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


class PodTopologySpread:
    def __init__(self, cl: _Cluster, p: Obj, args: Obj) -> None:
        self.cl = cl
        self.pod = p
        defaulting = args.get("defaultingType") or "System"
        self.system_defaulted = defaulting == "System"
        if self.system_defaulted:
            self.default_constraints = SYSTEM_DEFAULT_CONSTRAINTS
        else:
            self.default_constraints = args.get("defaultConstraints") or []
        self._prefilter()

    def _constraints(self, when: str) -> list[Constraint]:
        spec = self.pod["spec"].get("topologySpreadConstraints") or []
        if spec:
            return _constraints_of(spec, self.pod["labels"], when)
        # buildDefaultConstraints: the defaults, with the selector of the pod's
        # Services/ReplicaSets/StatefulSets/RCs; none when that selector is empty.
        constraints = _constraints_of(self.default_constraints, self.pod["labels"], when)
        if not constraints:
            return []
        raw_selector = self.pod["default_spread_selector"]
        sel = parse_selector(raw_selector) if raw_selector is not None else EVERYTHING
        if sel.empty:
            return []
        for c in constraints:
            c.selector = sel
        return constraints

    # PreFilter / Filter

    def _prefilter(self) -> None:
        self.hard = self._constraints("DoNotSchedule")
        # Per constraint: topology value -> matching pods, over every node of the
        # cluster that carries all the keys and passes the constraint's policies.
        self.match_num: list[dict[str, int]] = [{} for _ in self.hard]
        ns = self.pod["namespace"]
        for n in self.cl.nodes:
            if not _has_all_keys(n, self.hard):
                continue
            for i, c in enumerate(self.hard):
                if not c.includes(self.pod, n):
                    continue
                value = n["labels"][c.topology_key]
                count = _count_matching(self.cl.pods(n), c.selector, ns)
                self.match_num[i][value] = self.match_num[i].get(value, 0) + count

    def filter(self, p: Obj, n: Obj) -> _Status | None:
        if not self.hard:  # PreFilter returned Skip
            return None
        for i, c in enumerate(self.hard):
            value = n["labels"].get(c.topology_key)
            if value is None:
                return _Status("PodTopologySpread", UNRESOLVABLE, ERR_SPREAD_MISSING_LABEL)
            domains = self.match_num[i]
            # The global minimum is 0 while fewer domains than minDomains exist.
            min_match = min(domains.values()) if len(domains) >= c.min_domains else 0
            self_match = 1 if c.selector.matches(p["labels"]) else 0
            skew = domains.get(value, 0) + self_match - min_match
            if skew > c.max_skew:
                return _Status("PodTopologySpread", UNSCHEDULABLE, ERR_SPREAD_CONSTRAINTS)
        return None

    # PreScore / Score / NormalizeScore

    def score(self, feasible: list[Obj]) -> dict[str, tuple[int, int]]:
        soft = self._constraints("ScheduleAnyway")
        if not soft:  # PreScore returned Skip
            return {n["name"]: (0, 0) for n in feasible}
        spec_constraints = self.pod["spec"].get("topologySpreadConstraints") or []
        # Nodes without every topology key are only tolerated for the system defaults,
        # so that a node without a zone label still gets hostname spreading.
        require_all = bool(spec_constraints) or not self.system_defaulted
        ignored = {n["name"] for n in feasible if require_all and not _has_all_keys(n, soft)}
        # Domains are seeded from the feasible nodes; a missing key reads as "".
        counts: list[dict[str, int]] = [{} for _ in soft]
        for n in feasible:
            if n["name"] in ignored:
                continue
            for i, c in enumerate(soft):
                if c.topology_key != HOSTNAME:
                    counts[i].setdefault(n["labels"].get(c.topology_key, ""), 0)
        weights = []
        for i, c in enumerate(soft):
            size = len(counts[i])
            if c.topology_key == HOSTNAME:
                size = len(feasible) - len(ignored)
            weights.append(math.log(size + 2))
        # Pods are counted on every node of the cluster, into the seeded domains only.
        ns = self.pod["namespace"]
        for n in self.cl.nodes:
            if require_all and not _has_all_keys(n, soft):
                continue
            for i, c in enumerate(soft):
                if not c.includes(self.pod, n):
                    continue
                value = n["labels"].get(c.topology_key, "")
                if value not in counts[i]:
                    continue  # includes every hostname constraint
                counts[i][value] += _count_matching(self.cl.pods(n), c.selector, ns)
        raw: dict[str, int] = {}
        for n in feasible:
            if n["name"] in ignored:
                raw[n["name"]] = 0
                continue
            total = 0.0
            for i, c in enumerate(soft):
                value = n["labels"].get(c.topology_key)
                if value is None:
                    continue
                if c.topology_key == HOSTNAME:
                    cnt = _count_matching(self.cl.pods(n), c.selector, ns)
                else:
                    cnt = counts[i][value]
                total += cnt * weights[i] + (c.max_skew - 1)
            raw[n["name"]] = go_round(total)
        # NormalizeScore: fewer matching pods is better; ignored nodes get 0.
        scored = [raw[n["name"]] for n in feasible if n["name"] not in ignored]
        max_score = max([0, *scored])
        min_score = min(scored) if scored else 0
        out = {}
        for n in feasible:
            s = raw[n["name"]]
            if n["name"] in ignored:
                norm = 0
            elif max_score == 0:
                norm = MAX_NODE_SCORE
            else:
                norm = MAX_NODE_SCORE * (max_score + min_score - s) // max_score
            out[n["name"]] = (s, norm)
        return out


# --- InterPodAffinity -----------------------------------------------------------------


@dataclass
class AffinityTerm:
    """framework.AffinityTerm: the namespaces and selectors of one PodAffinityTerm."""

    selector: Selector
    topology_key: str
    namespaces: set[str] = field(default_factory=set)
    namespace_selector: Selector = NOTHING
    weight: int = 0

    @classmethod
    def of(cls, owner: Obj, t: Obj, weight: int = 0) -> AffinityTerm:
        ns_sel = t.get("namespaceSelector")
        names = t.get("namespaces") or []
        # No namespaces and no namespaceSelector means the owner's own namespace.
        namespaces = set(names) if names or ns_sel is not None else {owner["namespace"]}
        return cls(
            selector=parse_selector(t.get("labelSelector")),
            topology_key=t["topologyKey"],
            namespaces=namespaces,
            namespace_selector=parse_selector(ns_sel),
            weight=weight,
        )

    def matches(self, p: Obj, ns_labels: Mapping[str, str] | None) -> bool:
        if p["namespace"] in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(p["labels"])
        return False

    def resolve_namespaces(self, namespaces: Mapping[str, Mapping[str, str]]) -> None:
        """mergeAffinityTermNamespacesIfNotEmpty, for the incoming pod's terms: the
        namespace objects the selector picks join ``namespaces``; an empty selector (all
        namespaces) is kept as is. Upstream then sets the selector to Nothing, but on its
        copy of the term (the function takes the term by value), so the term keeps its
        selector: matched afterwards with nil namespace labels, a selector that matches
        an empty label set (DoesNotExist, NotIn) matches pods of every namespace."""
        if self.namespace_selector.empty:
            return
        for name, labels in namespaces.items():
            if self.namespace_selector.matches(labels):
                self.namespaces.add(name)


def _pod_affinity(p: Obj, kind: str, when: str) -> list[Obj]:
    a = (p["spec"].get("affinity") or {}).get(kind) or {}
    return a.get(f"{when}DuringSchedulingIgnoredDuringExecution") or []


def required_terms(p: Obj, kind: str) -> list[AffinityTerm]:
    return [AffinityTerm.of(p, t) for t in _pod_affinity(p, kind, "required")]


def preferred_terms(p: Obj, kind: str) -> list[AffinityTerm]:
    return [
        AffinityTerm.of(p, w["podAffinityTerm"], w["weight"])
        for w in _pod_affinity(p, kind, "preferred")
    ]


def _matches_all(terms: Sequence[AffinityTerm], p: Obj) -> bool:
    """podMatchesAllAffinityTerms (incoming terms: namespace selectors already merged)."""
    return bool(terms) and all(t.matches(p, None) for t in terms)


class InterPodAffinity:
    def __init__(self, cl: _Cluster, p: Obj, args: Obj) -> None:
        self.cl = cl
        self.pod = p
        self.hard_weight = args.get("hardPodAffinityWeight", 1)
        self.ignore_existing_preferred = bool(args.get("ignorePreferredTermsOfExistingPods"))
        # A missing namespace object reads as an empty label set.
        self.ns_labels = cl.namespaces.get(p["namespace"])
        self._prefilter()

    def _own_terms(self, terms: list[AffinityTerm]) -> list[AffinityTerm]:
        for t in terms:
            t.resolve_namespaces(self.cl.namespaces)
        return terms

    # PreFilter / Filter

    def _prefilter(self) -> None:
        p = self.pod
        self.affinity = self._own_terms(required_terms(p, "podAffinity"))
        self.anti_affinity = self._own_terms(required_terms(p, "podAntiAffinity"))
        # (topology key, value) -> count, as upstream's three maps.
        self.existing_anti: dict[tuple[str, str], int] = defaultdict(int)
        self.affinity_counts: dict[tuple[str, str], int] = defaultdict(int)
        self.anti_counts: dict[tuple[str, str], int] = defaultdict(int)
        for n in self.cl.nodes:
            labels = n["labels"]
            for q in self.cl.pods(n):
                # Existing pods' required anti-affinity against the incoming pod.
                for t in required_terms(q, "podAntiAffinity"):
                    if t.matches(p, self.ns_labels) and t.topology_key in labels:
                        self.existing_anti[(t.topology_key, labels[t.topology_key])] += 1
                # Existing pods that match ALL of the incoming pod's affinity terms.
                if _matches_all(self.affinity, q):
                    for t in self.affinity:
                        if t.topology_key in labels:
                            self.affinity_counts[(t.topology_key, labels[t.topology_key])] += 1
                # Existing pods that match ANY of its anti-affinity terms.
                for t in self.anti_affinity:
                    if t.matches(q, None) and t.topology_key in labels:
                        self.anti_counts[(t.topology_key, labels[t.topology_key])] += 1
        self.skip_filter = not self.existing_anti and not self.affinity and not self.anti_affinity

    def filter(self, p: Obj, n: Obj) -> _Status | None:
        if self.skip_filter:
            return None
        labels = n["labels"]
        pods_exist = True
        for t in self.affinity:
            if t.topology_key not in labels:
                return _Status("InterPodAffinity", UNRESOLVABLE, ERR_AFFINITY)
            if self.affinity_counts.get((t.topology_key, labels[t.topology_key]), 0) <= 0:
                pods_exist = False
        # The first pod of a series with affinity to itself: nothing in the cluster
        # matches yet, and the pod matches its own terms.
        if not pods_exist and not (not self.affinity_counts and _matches_all(self.affinity, p)):
            return _Status("InterPodAffinity", UNRESOLVABLE, ERR_AFFINITY)
        for t in self.anti_affinity:
            value = labels.get(t.topology_key)
            if value is not None and self.anti_counts.get((t.topology_key, value), 0) > 0:
                return _Status("InterPodAffinity", UNSCHEDULABLE, ERR_ANTI_AFFINITY)
        for kv in labels.items():
            if self.existing_anti.get(kv, 0) > 0:
                return _Status("InterPodAffinity", UNSCHEDULABLE, ERR_EXISTING_ANTI_AFFINITY)
        return None

    # PreScore / Score / NormalizeScore

    def score(self, feasible: list[Obj]) -> dict[str, tuple[int, int]]:
        p = self.pod
        preferred = self._own_terms(preferred_terms(p, "podAffinity"))
        anti_preferred = self._own_terms(preferred_terms(p, "podAntiAffinity"))
        if self.ignore_existing_preferred and not preferred and not anti_preferred:
            return {n["name"]: (0, 0) for n in feasible}
        # topology key -> value -> summed weight; an entry exists once a term matched.
        topology_score: dict[str, dict[str, int]] = {}

        def add(t: AffinityTerm, weight: int, labels: Mapping[str, str]) -> None:
            if t.topology_key in labels:
                values = topology_score.setdefault(t.topology_key, {})
                value = labels[t.topology_key]
                values[value] = values.get(value, 0) + weight

        for n in self.cl.nodes:
            labels = n["labels"]
            if not labels:
                continue
            for q in self.cl.pods(n):
                for t in preferred:
                    if t.matches(q, None):
                        add(t, t.weight, labels)
                for t in anti_preferred:
                    if t.matches(q, None):
                        add(t, -t.weight, labels)
                if self.hard_weight > 0:
                    for t in required_terms(q, "podAffinity"):
                        if t.matches(p, self.ns_labels):
                            add(t, self.hard_weight, labels)
                for t in preferred_terms(q, "podAffinity"):
                    if t.matches(p, self.ns_labels):
                        add(t, t.weight, labels)
                for t in preferred_terms(q, "podAntiAffinity"):
                    if t.matches(p, self.ns_labels):
                        add(t, -t.weight, labels)
        if not topology_score:  # PreScore returned Skip
            return {n["name"]: (0, 0) for n in feasible}
        raw = {}
        for n in feasible:
            raw[n["name"]] = sum(
                values.get(n["labels"][key], 0)
                for key, values in topology_score.items()
                if key in n["labels"]
            )
        lo, hi = min(raw.values()), max(raw.values())
        out = {}
        for name, s in raw.items():
            norm = int(MAX_NODE_SCORE * ((s - lo) / (hi - lo))) if hi > lo else 0
            out[name] = (s, norm)
        return out
