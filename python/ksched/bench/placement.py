"""Placement quality: the final distribution a scheduler left, and how two compare.

Speed must not be bought with worse decisions, so every run ends with a summary computed
from the API objects alone (the same code for ksched and kube-scheduler, for the
embedded cluster and the real apiserver):

* pods per node over all benchmark nodes (min / mean / max / standard deviation) and the
  requested-cpu fraction per node (mean / stdev / max) — what the default Score plugins
  (LeastAllocated, BalancedAllocation) shape;
* the measured pods per zone, when the nodes carry a zone label;
* the measured template's constraints, checked on the result: for each topology spread
  constraint the final skew (max - min matching pods over the domains, every node's
  domain eligible) and whether a ``DoNotSchedule`` one holds; for required pod
  anti-affinity the number of pods sharing a domain with a matching pod; for required
  pod affinity the pods with no matching pod in their domain; for required node
  affinity the pods on a node that does not match.

Only ``matchLabels`` selectors are evaluated (what the workload templates use);
:func:`compare` lists where ksched's result is worse than upstream's.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ksched.bench.workload import ZONE_LABEL

Obj = dict[str, Any]


def _cpu_millis(q: Any) -> int:
    s = str(q)
    if s.endswith("m"):
        return int(float(s[:-1]))
    return int(float(s) * 1000)


def _pod_cpu(pod: Obj) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or ():
        req = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
        if req is not None:
            total += _cpu_millis(req)
    return total


def _labels(obj: Obj) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if not selector:
        return False
    want = selector.get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in want.items())


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"min": 0.0, "mean": 0.0, "max": 0.0, "stdev": 0.0}
    return {
        "min": float(min(values)),
        "mean": float(statistics.fmean(values)),
        "max": float(max(values)),
        "stdev": float(statistics.pstdev(values)),
    }


@dataclass(slots=True)
class Placement:
    pods_bound: int
    measured_bound: int
    pods_per_node: dict[str, float]
    cpu_fraction_per_node: dict[str, float]
    measured_per_zone: dict[str, int] = field(default_factory=dict)
    #: One entry per constraint of the measured template: kind, key, and its figures.
    constraints: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def violations(self) -> int:
        return int(sum(c.get("violations", 0) for c in self.constraints))


def summarize(
    nodes: Iterable[Obj],
    pods: Iterable[Obj],
    *,
    measured_namespace: str,
    template: Obj | None = None,
) -> Placement:
    """Summarize the placement of ``pods`` (bound or not) on ``nodes``."""
    node_list = list(nodes)
    node_labels = {n["metadata"]["name"]: _labels(n) for n in node_list}
    alloc = {
        n["metadata"]["name"]: _cpu_millis(
            (
                (n.get("status") or {}).get("allocatable")
                or (n.get("status") or {}).get("capacity")
                or {}
            ).get("cpu", "0")
        )
        for n in node_list
    }
    per_node: Counter[str] = Counter()
    cpu: Counter[str] = Counter()
    bound: list[Obj] = []
    measured: list[Obj] = []
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if not node or node not in node_labels:
            continue
        bound.append(p)
        per_node[node] += 1
        cpu[node] += _pod_cpu(p)
        if (p.get("metadata") or {}).get("namespace") == measured_namespace:
            measured.append(p)
    names = list(node_labels)
    zones: Counter[str] = Counter()
    for p in measured:
        z = node_labels[p["spec"]["nodeName"]].get(ZONE_LABEL)
        if z is not None:
            zones[z] += 1
    out = Placement(
        pods_bound=len(bound),
        measured_bound=len(measured),
        pods_per_node=_stats([float(per_node[n]) for n in names]),
        cpu_fraction_per_node=_stats([cpu[n] / alloc[n] if alloc.get(n) else 0.0 for n in names]),
        measured_per_zone=dict(sorted(zones.items())),
    )
    if template is not None:
        out.constraints = _check_constraints(template, node_labels, bound, measured)
    return out


def _domain_counts(
    key: str,
    selector: Mapping[str, Any] | None,
    node_labels: Mapping[str, Mapping[str, str]],
    pods: Iterable[Obj],
    namespaces: frozenset[str] | None,
) -> dict[str, int]:
    """Matching pods per domain of ``key`` (every node's domain, zero included), counting
    pods of ``namespaces`` only (None: every namespace)."""
    counts: dict[str, int] = {}
    for labels in node_labels.values():
        if key in labels:
            counts.setdefault(labels[key], 0)
    for p in pods:
        if namespaces is not None and p["metadata"].get("namespace") not in namespaces:
            continue
        d = node_labels[p["spec"]["nodeName"]].get(key)
        if d is not None and _matches(selector, _labels(p)):
            counts[d] += 1
    return counts


def _term_namespaces(term: Mapping[str, Any], own: str) -> frozenset[str] | None:
    """The namespaces an affinity term covers: its list, every one for an empty
    namespaceSelector, else the pod's own."""
    if term.get("namespaceSelector") == {}:
        return None
    return frozenset(term.get("namespaces") or ()) or frozenset((own,))


def _check_constraints(
    template: Obj,
    node_labels: Mapping[str, Mapping[str, str]],
    bound: list[Obj],
    measured: list[Obj],
) -> list[dict[str, Any]]:
    spec = template.get("spec") or {}
    own = str(measured[0]["metadata"].get("namespace")) if measured else ""
    out: list[dict[str, Any]] = []
    for c in spec.get("topologySpreadConstraints") or ():
        key = c["topologyKey"]
        counts = _domain_counts(key, c.get("labelSelector"), node_labels, bound, frozenset((own,)))
        skew = max(counts.values()) - min(counts.values()) if counts else 0
        hard = c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        out.append(
            {
                "kind": "topologySpread",
                "topologyKey": key,
                "whenUnsatisfiable": c.get("whenUnsatisfiable", "DoNotSchedule"),
                "maxSkew": c.get("maxSkew", 1),
                "skew": skew,
                "domains": len(counts),
                "violations": int(hard and skew > int(c.get("maxSkew", 1))),
            }
        )
    affinity = spec.get("affinity") or {}
    for kind, want_peer in (("podAntiAffinity", False), ("podAffinity", True)):
        for term in (affinity.get(kind) or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        ) or ():
            key = term["topologyKey"]
            sel = term.get("labelSelector")
            by_domain = _domain_counts(key, sel, node_labels, bound, _term_namespaces(term, own))
            bad = 0
            for p in measured:
                d = node_labels[p["spec"]["nodeName"]].get(key)
                others = by_domain.get(d, 0) - (1 if _matches(sel, _labels(p)) else 0) if d else 0
                if (want_peer and others < 1) or (not want_peer and others > 0):
                    bad += 1
            out.append({"kind": kind, "topologyKey": key, "violations": bad})
    node_aff = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if node_aff:
        bad = sum(
            1
            for p in measured
            if not _node_selector_matches(node_aff, node_labels[p["spec"]["nodeName"]])
        )
        out.append({"kind": "nodeAffinity", "violations": bad})
    return out


def _node_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for term in selector.get("nodeSelectorTerms") or ():
        ok = True
        for expr in term.get("matchExpressions") or ():
            op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
            if op == "In":
                ok = ok and labels.get(key) in values
            elif op == "NotIn":
                ok = ok and labels.get(key) not in values
            elif op == "Exists":
                ok = ok and key in labels
            elif op == "DoesNotExist":
                ok = ok and key not in labels
        if ok:
            return True
    return False


def compare(ksched: Placement, upstream: Placement) -> dict[str, Any]:
    """Where ksched's placement is worse than upstream's (an empty ``worse`` is a pass).

    Worse means: more constraint violations; fewer measured pods bound; a soft
    (``ScheduleAnyway``) spread skew above upstream's by more than one pod — a soft
    constraint is scored, so a larger skew is a worse decision; a per-node pod-count
    spread (stdev) more than 25% above upstream's plus half a pod (the default scorers
    spread pods; random tie-breaking makes runs differ slightly). A hard
    (``DoNotSchedule``) constraint only has to hold: a larger skew within ``maxSkew``
    is listed under ``differs``, not ``worse`` (upstream does not score hard
    constraints either).
    """
    worse: list[str] = []
    differs: list[str] = []
    if ksched.violations > upstream.violations:
        worse.append(f"constraint violations {ksched.violations} > {upstream.violations}")
    if ksched.measured_bound < upstream.measured_bound:
        worse.append(f"measured pods bound {ksched.measured_bound} < {upstream.measured_bound}")
    for kc, uc in zip(ksched.constraints, upstream.constraints, strict=False):
        if kc.get("kind") == "topologySpread" and kc["skew"] > uc["skew"] + 1:
            text = f"{kc['topologyKey']} skew {kc['skew']} > {uc['skew']}"
            if kc.get("whenUnsatisfiable") == "DoNotSchedule" and not kc.get("violations"):
                differs.append(f"{text} (within maxSkew {kc.get('maxSkew')})")
            else:
                worse.append(text)
    ks, us = ksched.pods_per_node["stdev"], upstream.pods_per_node["stdev"]
    if ks > us * 1.25 + 0.5:
        worse.append(f"pods-per-node stdev {ks:.2f} > {us:.2f}")
    return {
        "ok": not worse,
        "worse": worse,
        "differs": differs,
        "pods_per_node_stdev": {"ksched": ks, "kube-scheduler": us},
        "violations": {"ksched": ksched.violations, "kube-scheduler": upstream.violations},
        "measured_per_zone": {
            "ksched": ksched.measured_per_zone,
            "kube-scheduler": upstream.measured_per_zone,
        },
        "spread_skew": {
            "ksched": [c.get("skew") for c in ksched.constraints if "skew" in c],
            "kube-scheduler": [c.get("skew") for c in upstream.constraints if "skew" in c],
        },
    }
