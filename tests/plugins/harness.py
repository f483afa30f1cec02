"""A cluster as plain dicts, run through the Rust kernels.

The plugin tests describe a cluster the way upstream's test tables do, with small
builders that return plain dicts:

* a node is ``{"name", "labels", "taints", "unschedulable", "allocatable", "images",
  "declared_features"}`` (declared features go to the kernels as given: mapping them
  onto the registry is the cache's job, tested with it);
  its labels are exactly the ones given (no hostname label is added, because several
  upstream cases depend on a node lacking one);
* a pod is ``{"name", "uid", "namespace", "labels", "node", "deleting", "spec",
  "default_spread_selector"}`` where ``spec`` is the pod's API ``spec`` (tolerations,
  affinity, topologySpreadConstraints, containers... exactly as the API server serves
  them) and ``node`` is the node an existing pod is bound to;
* a cluster is ``{"nodes": [...], "pods": [...], "namespaces": {name: labels}}``.

The same dicts feed ``reference.py`` (the plain-Python reference of PodTopologySpread and
InterPodAffinity) and :func:`explain`, which loads them into a ``ksched._core.Snapshot``
and returns ``Snapshot.explain`` keyed by node name. Pods reach the kernels through the
production parser (``Pod.from_dict``), so requests, host ports and images are computed the
way the scheduler computes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ksched._core import CompiledPod, Profile, Snapshot
from ksched.api.pod import Pod

Obj = dict[str, Any]

KI = 1024
MI = 1024**2
GI = 1024**3

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

#: scheduler_perf's default node: 4 cpu, 32Gi, 110 pods.
DEFAULT_ALLOCATABLE: dict[str, int] = {"cpu": 4000, "memory": 32 * GI, "pods": 110}


# --- nodes, pods, clusters ------------------------------------------------------------


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    taints: Iterable[tuple[str, str, str]] = (),
    unschedulable: bool = False,
    allocatable: Mapping[str, int] | None = None,
    images: Iterable[tuple[Sequence[str], int]] = (),
    declared_features: Iterable[str] = (),
) -> Obj:
    """A node; ``taints`` are ``(key, value, effect)``, ``images`` ``(names, size)``."""
    return {
        "name": name,
        "labels": dict(labels or {}),
        "taints": [tuple(t) for t in taints],
        "unschedulable": unschedulable,
        "allocatable": dict(DEFAULT_ALLOCATABLE if allocatable is None else allocatable),
        "images": [(list(names), size) for names, size in images],
        "declared_features": list(declared_features),
    }


def pod(
    name: str = "p",
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    node: str | None = None,
    uid: str | None = None,
    deleting: bool = False,
    default_spread_selector: Obj | None = None,
    tolerations: Iterable[Obj] = (),
    affinity: Obj | None = None,
    node_selector: Mapping[str, str] | None = None,
    spread: Iterable[Obj] = (),
    containers: Iterable[Obj] | None = None,
    init_containers: Iterable[Obj] = (),
    overhead: Mapping[str, str] | None = None,
    pod_requests: Mapping[str, str] | None = None,
    node_name: str | None = None,
    host_network: bool | None = None,
    host_users: bool | None = None,
) -> Obj:
    """A pod. ``node`` binds an existing pod; ``node_name`` sets ``spec.nodeName`` of the
    pod being scheduled (NodeName plugin); both end up in ``spec.nodeName``.
    ``pod_requests`` are pod-level ``spec.resources.requests``."""
    spec: Obj = {"containers": list(containers) if containers is not None else []}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if node or node_name:
        spec["nodeName"] = node or node_name
    if tolerations:
        spec["tolerations"] = list(tolerations)
    if affinity is not None:
        spec["affinity"] = affinity
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    spread = list(spread)
    if spread:
        spec["topologySpreadConstraints"] = spread
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if pod_requests is not None:
        spec["resources"] = {"requests": dict(pod_requests)}
    if host_network is not None:
        spec["hostNetwork"] = host_network
    if host_users is not None:
        spec["hostUsers"] = host_users
    return {
        "name": name,
        "uid": uid or f"uid-{namespace}-{name}",
        "namespace": namespace,
        "labels": dict(labels or {}),
        "node": node,
        "deleting": deleting,
        "default_spread_selector": default_spread_selector,
        "spec": spec,
    }


def cluster(
    nodes: Iterable[Obj],
    pods: Iterable[Obj] = (),
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
    nominated: Iterable[tuple[Obj, str]] = (),
) -> Obj:
    """Nodes, existing (bound) pods, namespace objects with their labels and
    ``(pod, node)`` nominations (preemption)."""
    pods = list(pods)
    for i, p in enumerate(pods):
        if p["node"] is None:
            raise ValueError(f"existing pod {p['name']} is not bound to a node")
        # Upstream's test pods are often anonymous; keep every uid unique.
        if sum(q["uid"] == p["uid"] for q in pods) > 1:
            p["uid"] = f"{p['uid']}-{i}"
    return {
        "nodes": list(nodes),
        "pods": pods,
        "namespaces": {k: dict(v) for k, v in (namespaces or {}).items()},
        "nominated": list(nominated),
    }


def container(
    requests: Mapping[str, str] | None = None,
    *,
    name: str = "c",
    image: str = "",
    ports: Iterable[Obj] = (),
    restart_policy: str | None = None,
    restart_rules: Iterable[str] = (),
) -> Obj:
    """A container with resource requests in API quantities (``{"cpu": "100m"}``) and
    ``restartPolicyRules`` with these actions (exit code 1)."""
    c: Obj = {"name": name, "image": image}
    if requests is not None:
        c["resources"] = {"requests": dict(requests)}
    ports = list(ports)
    if ports:
        c["ports"] = ports
    if restart_policy is not None:
        c["restartPolicy"] = restart_policy
    rules = list(restart_rules)
    if rules:
        c["restartPolicyRules"] = [
            {"action": a, "exitCodes": {"operator": "In", "values": [1]}} for a in rules
        ]
    return c


def host_port(port: int, protocol: str = "TCP", host_ip: str = "") -> Obj:
    """A container port that claims a host port (hostIP "" means all addresses)."""
    p: Obj = {"containerPort": port, "hostPort": port, "protocol": protocol}
    if host_ip:
        p["hostIP"] = host_ip
    return p


def toleration(key: str = "", operator: str = "Equal", value: str = "", effect: str = "") -> Obj:
    t: Obj = {"key": key, "operator": operator, "effect": effect}
    if operator != "Exists":
        t["value"] = value
    return t


# --- selectors and affinity -----------------------------------------------------------


def match_labels(labels: Mapping[str, str]) -> Obj:
    return {"matchLabels": dict(labels)}


def expr(key: str, operator: str, *values: str) -> Obj:
    e: Obj = {"key": key, "operator": operator}
    if operator in ("In", "NotIn", "Gt", "Lt"):
        e["values"] = list(values)
    return e


def selector(*expressions: Obj, labels: Mapping[str, str] | None = None) -> Obj:
    """A LabelSelector from ``expr(...)`` requirements and/or matchLabels."""
    s: Obj = {}
    if labels:
        s["matchLabels"] = dict(labels)
    if expressions:
        s["matchExpressions"] = list(expressions)
    return s


def exists(key: str) -> Obj:
    return selector(expr(key, "Exists"))


def label_in(key: str, *values: str) -> Obj:
    return selector(expr(key, "In", *values))


def label_not_in(key: str, *values: str) -> Obj:
    return selector(expr(key, "NotIn", *values))


def spread_constraint(
    max_skew: int,
    topology_key: str,
    when: str,
    label_selector: Obj | None,
    *,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> Obj:
    """A topologySpreadConstraint; ``when`` is DoNotSchedule or ScheduleAnyway."""
    c: Obj = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
    if label_selector is not None:
        c["labelSelector"] = label_selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def term(
    label_selector: Obj | None,
    topology_key: str,
    *,
    namespaces: Sequence[str] | None = None,
    namespace_selector: Obj | None = None,
) -> Obj:
    """A PodAffinityTerm. ``namespace_selector=None`` leaves the field unset."""
    t: Obj = {"topologyKey": topology_key}
    if label_selector is not None:
        t["labelSelector"] = label_selector
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def weighted(weight: int, t: Obj) -> Obj:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    *,
    required: Sequence[Obj] = (),
    preferred: Sequence[Obj] = (),
    anti_required: Sequence[Obj] = (),
    anti_preferred: Sequence[Obj] = (),
    node_affinity: Obj | None = None,
) -> Obj:
    """A pod's spec.affinity; preferred entries are ``weighted(w, term(...))``."""
    a: Obj = {}
    if required or preferred:
        a["podAffinity"] = {}
        if required:
            a["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred:
            a["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
    if anti_required or anti_preferred:
        a["podAntiAffinity"] = {}
        if anti_required:
            a["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = list(
                anti_required
            )
        if anti_preferred:
            a["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = list(
                anti_preferred
            )
    if node_affinity is not None:
        a["nodeAffinity"] = node_affinity
    return a


def node_selector_term(*, expressions: Sequence[Obj] = (), fields: Sequence[Obj] = ()) -> Obj:
    t: Obj = {}
    if expressions:
        t["matchExpressions"] = list(expressions)
    if fields:
        t["matchFields"] = list(fields)
    return t


def node_affinity(
    *, required: Sequence[Obj] | None = None, preferred: Sequence[tuple[int, Obj]] = ()
) -> Obj:
    """spec.affinity.nodeAffinity: ``required`` node selector terms (None leaves the field
    unset), ``preferred`` as ``(weight, node_selector_term)``."""
    a: Obj = {}
    if required is not None:
        a["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": list(required)}
    if preferred:
        a["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in preferred
        ]
    return a


def required_node_affinity(key: str, operator: str, *values: str) -> Obj:
    """spec.affinity with one required node selector term of one expression."""
    return {
        "nodeAffinity": node_affinity(
            required=[node_selector_term(expressions=[expr(key, operator, *values)])]
        )
    }


# --- the kernels ----------------------------------------------------------------------


def to_api(p: Obj) -> Obj:
    """The pod as the API server would serve it."""
    meta: Obj = {
        "name": p["name"],
        "namespace": p["namespace"],
        "uid": p["uid"],
        "resourceVersion": "1",
        "labels": dict(p["labels"]),
    }
    if p["deleting"]:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": p["spec"],
        "status": {"phase": "Running" if p["spec"].get("nodeName") else "Pending"},
    }


def compile_pod(p: Obj) -> CompiledPod:
    """The kernels' form of ``p``, every field passed explicitly."""
    parsed = Pod.from_dict(to_api(p))
    return CompiledPod(
        parsed.uid,
        parsed.namespace,
        parsed.name,
        requests=parsed.requests,
        non_zero_cpu=parsed.non_zero_cpu,
        non_zero_memory=parsed.non_zero_memory,
        node_name=parsed.node_name,
        tolerations=[(t.key, t.operator, t.value, t.effect) for t in parsed.tolerations],
        labels=parsed.labels,
        priority=parsed.priority,
        node_selector=parsed.node_selector or None,
        affinity=parsed.affinity,
        host_ports=list(parsed.host_ports),
        images=list(parsed.images),
        image_volumes=list(parsed.image_volumes),
        fit_score_requests=parsed.fit_score_requests,
        topology_spread_constraints=list(parsed.topology_spread_constraints),
        default_spread_selector=p["default_spread_selector"],
        deleting=parsed.deletion_timestamp is not None,
        required_features=list(parsed.required_features),
    )


def snapshot(c: Obj, seed: int = 0) -> Snapshot:
    snap = Snapshot(seed)
    for name, labels in c["namespaces"].items():
        snap.upsert_namespace(name, labels)
    for n in c["nodes"]:
        snap.upsert_node(
            n["name"],
            n["allocatable"],
            n["labels"],
            n["taints"],
            n["unschedulable"],
            n["images"],
            n.get("declared_features", []),
        )
    for p in c["pods"]:
        snap.add_pod(compile_pod(p), p["node"])
    for p, node_name in c.get("nominated", ()):
        snap.set_nominated(compile_pod(p), node_name)
    return snap


def explain(
    c: Obj,
    incoming: Obj,
    filters: Sequence[str],
    scores: Sequence[tuple[str, int]] = (),
    args: Mapping[str, Obj] | None = None,
) -> dict[str, Obj]:
    """``Snapshot.explain`` for ``incoming`` on cluster ``c``, keyed by node name."""
    profile = Profile(list(filters), list(scores), dict(args or {}))
    result = snapshot(c).explain(compile_pod(incoming), profile)
    return {entry["node"]: entry for entry in result}


# --- reading results ------------------------------------------------------------------


def statuses(result: Mapping[str, Obj]) -> dict[str, tuple[str, ...] | None]:
    """Per node: None when feasible, else ``(code, *reasons)``."""
    out: dict[str, tuple[str, ...] | None] = {}
    for name, entry in result.items():
        s = entry["status"]
        out[name] = None if s is None else (s["code"], *s["reasons"])
    return out


def codes(result: Mapping[str, Obj]) -> dict[str, str]:
    """Per node: "Success" or the status code, as upstream's tables write them."""
    return {
        name: "Success" if e["status"] is None else e["status"]["code"]
        for name, e in result.items()
    }


def normalized(result: Mapping[str, Obj], plugin: str) -> dict[str, int]:
    """Normalized score of ``plugin`` on every feasible node."""
    return {
        name: e["scores"][plugin]["normalized"] for name, e in result.items() if e["status"] is None
    }


def raw(result: Mapping[str, Obj], plugin: str) -> dict[str, int]:
    """Raw (pre-normalization) score of ``plugin`` on every feasible node."""
    return {name: e["scores"][plugin]["raw"] for name, e in result.items() if e["status"] is None}
