"""Seeded random cases for the conformance harness: a cluster, a pod and a configuration.

``generate(seed, index)`` is a pure function of its arguments (one ``random.Random`` per
case, seeded with ``"<seed>:<index>"``), so a run is reproduced by its seed, and one case
by its seed and index. A case is what the Go harness reads (:mod:`tests.conformance
.upstream`): a ``KubeSchedulerConfiguration``, API objects in creation order (namespaces,
workloads, nodes, bound pods, PodDisruptionBudgets, pending pods; the pod to schedule
last) and the pod's ``namespace/name``. Cases also carry ``features``: tags naming what
they exercise (``pod:nodeAffinity.required.Gt``, ``args:NodeResourcesFit.MostAllocated``),
which the summary's agreement per feature is computed over.

Design. The vocabulary is deliberately small (three zones, a handful of label keys and
values, three namespaces, a few images and ports), so that selectors, spreading domains,
affinity terms, taints and tolerations, host ports and image names collide often. Every
field a built-in plugin reads is drawn somewhere:

* nodes: labels (hostname, zone, region, and keys with integer values for Gt/Lt, each
  sometimes missing), ``spec.unschedulable``, taints of every effect, allocatable cpu,
  memory, pods, ephemeral-storage, hugepages-2Mi and an extended resource, images
  (several names, the same name at different sizes on different nodes);
* pods: containers, init containers and sidecars (``restartPolicy: Always``) with
  requests and limits (limits only: defaulted to requests), overhead, pod-level
  resources, hugepages and extended resources; node selectors, node affinity with
  every operator and ``matchFields``; tolerations of every effect; host ports (protocols,
  host IPs) and ``hostNetwork``; topology spread constraints with every option
  (``minDomains``, ``nodeAffinityPolicy``, ``nodeTaintsPolicy``, ``matchLabelKeys``);
  pod (anti-)affinity with ``namespaces``, ``namespaceSelector``, ``matchLabelKeys`` and
  ``mismatchLabelKeys``; images and image volumes; priorities and ``preemptionPolicy``;
  terminating bound pods; pending pods nominated to a node (preemption's nominations),
  and the pod's own nomination;
* workloads for default spreading: Services, ReplicaSets, StatefulSets,
  ReplicationControllers (the pod is owned by one or selected by one);
* PodDisruptionBudgets, for preemption; inter-pod affinity in preemption's dry run
  (:func:`affinity_in_preemption`: victims with anti-affinity against the preemptor or
  matching its terms, namespace selectors that match an empty label set, a pod of
  higher priority nominated to a victim's node with anti-affinity against the preemptor);
* node declared features (registered and unknown names) and pods whose container
  restart rules need RestartAllContainersOnContainerExits (NodeDeclaredFeatures);
* the configuration: ``percentageOfNodesToScore: 100`` always; one or two profiles
  (the pod uses one), plugins disabled or reweighted, and non-default args for every
  plugin (every scoring strategy of NodeResourcesFit with its resources and shape,
  ignored resources and groups; BalancedAllocation's resources; PodTopologySpread's
  default constraints and defaulting type; InterPodAffinity's hard weight and
  ``ignorePreferredTermsOfExistingPods``; NodeAffinity's ``addedAffinity``;
  DefaultPreemption's candidate numbers).

Parts added to the generator after a release of it draw from a fork of the case's random
source (:meth:`Gen.fork`, seeded by the case's key and the part's name), so what the
other parts draw, and so the cases of earlier runs, stay as they were; the new part only
adds to them.

Plugins are a table (:data:`PLUGINS`): one entry per plugin with the generator of its
args and of the features it tests, and for plugins that read more than nodes and pods
a hook making their objects: VolumeBinding's makes what the four volume plugins read
(:mod:`tests.conformance.generate_volumes`), DynamicResources' the DRA objects
(:mod:`tests.conformance.generate_dra`). In-tree plugins ksched
does not implement yet are disabled in every generated profile (computed from ksched's
build, :func:`ksched.profiles.implemented_plugin_names`), so cases compare the plugins
ksched has, and a plugin that lands joins the cases without a change here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ksched.profiles import implemented_plugin_names
from tests.conformance.generate_dra import dra_args, dra_objects
from tests.conformance.generate_volumes import volume_binding_args, volume_objects

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
GPU = "example.com/gpu"
HUGEPAGES = "hugepages-2Mi"

NAMESPACES = ["default", "team-a", "team-b"]
NAMESPACE_LABELS = {
    "default": {},
    "team-a": {"team": "a", "env": "prod"},
    "team-b": {"team": "b", "env": "dev"},
}
APPS = ["web", "db", "cache"]
TIERS = ["fe", "be"]
VERSIONS = ["v1", "v2"]
ZONES = ["z1", "z2", "z3"]
REGIONS = ["r1", "r2"]
TAINT_KEYS = ["dedicated", "gpu", "spot"]
TAINT_VALUES = ["a", "b", ""]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
PORTS = [80, 8080, 9090]
PROTOCOLS = ["TCP", "UDP", "SCTP"]
HOST_IPS = ["", "", "127.0.0.1", "0.0.0.0", "10.0.0.1"]
PRIORITIES = [0, 0, 10, 100, 1000]
MI = 1024 * 1024
#: Images: pod-side names and node-side name lists (with and without ":latest").
IMAGES = [
    ("nginx", ["nginx:latest", "docker.io/library/nginx:latest"]),
    ("nginx:1.27", ["nginx:1.27"]),
    ("redis:7", ["redis:7"]),
    ("registry.local:5000/app", ["registry.local:5000/app:latest"]),
    ("busybox:1.36", ["busybox:1.36"]),
    ("big/model:v3", ["big/model:v3"]),
]
IMAGE_SIZES = [5 * MI, 30 * MI, 120 * MI, 500 * MI, 900 * MI, 2000 * MI]
#: Score plugins and their default weights (v1.36's default profile).
SCORE_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}
FILTER_PLUGINS = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
]
#: In-tree plugins of v1.36's default profile (multiPoint), for the disabled list.
DEFAULT_PROFILE_PLUGINS = [
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
    "DefaultBinder",
    "NodeDeclaredFeatures",
]


@dataclass
class Case:
    """One generated case (see the module docstring)."""

    id: str
    config: Obj
    objects: list[Obj]
    pod: str
    features: set[str] = field(default_factory=set)
    #: Feature gates set for the case (upstream names), besides v1.36's defaults.
    gates: dict[str, bool] = field(default_factory=dict)

    def to_json(self, *, echo: bool = False) -> Obj:
        """The Go harness's input."""
        out: Obj = {
            "id": self.id,
            "config": self.config,
            "objects": self.objects,
            "pod": self.pod,
            "echo": echo,
        }
        if self.gates:
            out["featureGates"] = dict(self.gates)
        return out


class Gen:
    """The state of one case being generated: its random source, what exists so far
    and the features it exercises."""

    def __init__(self, rng: random.Random, key: str = "") -> None:
        self.rng = rng
        #: What seeded ``rng`` (``"<seed>:<index>"``), from which forks seed theirs.
        self.key = key
        self.features: set[str] = set()
        self.uids = 0
        #: A preemption case: a high-priority pod, a fuller cluster of lower ones.
        self.preemption = False
        #: The bound pods of the case (the plugins' object hooks give some volumes).
        self.existing: list[Obj] = []
        #: Feature gates the case turns on or off (both sides run with them).
        self.gates: dict[str, bool] = {}

    def fork(self, name: str) -> Gen:
        """A generator for a later part of the case with a random source of its own
        (seeded by the case's key and ``name``), sharing everything else: a part added to
        the generator later draws from its fork, so the parts drawn before it, and so
        the cases of earlier runs, stay as they were."""
        g = Gen(random.Random(f"{self.key}/{name}"), f"{self.key}/{name}")
        g.features = self.features
        g.preemption = self.preemption
        g.existing = self.existing
        g.gates = self.gates
        g.uids = 500  # uids of its own
        return g

    # ---- random helpers ----------------------------------------------------------

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: Sequence[Any]) -> Any:
        return self.rng.choice(seq)

    def some(self, seq: Sequence[Any], lo: int = 0, hi: int | None = None) -> list[Any]:
        hi = len(seq) if hi is None else min(hi, len(seq))
        return self.rng.sample(list(seq), self.rng.randint(lo, hi))

    def tag(self, *features: str) -> None:
        self.features.update(features)

    def uid(self, prefix: str) -> str:
        self.uids += 1
        return f"{prefix}-{self.uids:03d}"


# ---- nodes ----------------------------------------------------------------------------


def node_labels(g: Gen, name: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    if g.chance(0.9):
        labels[HOSTNAME] = name
    else:
        g.tag("node:hostname-label-missing")
    if g.chance(0.85):
        labels[ZONE] = g.pick(ZONES)
    else:
        g.tag("node:zone-label-missing")
    if g.chance(0.6):
        labels[REGION] = g.pick(REGIONS)
    if g.chance(0.5):
        labels["disk"] = g.pick(["ssd", "hdd"])
    if g.chance(0.4):
        labels["gpu-count"] = g.pick(["0", "1", "2", "4", "8"])
    if g.chance(0.3):
        labels["rack"] = g.pick(["1", "2", "10", "x"])
    return labels


def make_node(g: Gen, index: int) -> Obj:
    name = f"node-{index:02d}"
    alloc: dict[str, str] = {
        "cpu": g.pick(["1", "2", "4", "4", "8", "3500m"]),
        "memory": g.pick(["2Gi", "4Gi", "8Gi", "16Gi", "3000Mi"]),
        "pods": g.pick(["3", "5", "10", "110", "110"]),
    }
    if g.chance(0.5):
        alloc["ephemeral-storage"] = g.pick(["10Gi", "50Gi", "1Gi"])
    if g.chance(0.35):
        alloc[HUGEPAGES] = g.pick(["0", "128Mi", "1Gi"])
        g.tag("node:hugepages")
    if g.chance(0.4):
        alloc[GPU] = g.pick(["1", "2", "4"])
        g.tag("node:extended-resource")
    spec: Obj = {}
    if g.chance(0.07):
        spec["unschedulable"] = True
        g.tag("node:unschedulable")
    if g.chance(0.25):
        taints = []
        seen = set()
        for _ in range(g.rng.randint(1, 3)):
            key, effect = g.pick(TAINT_KEYS), g.pick([*EFFECTS, "PreferNoSchedule"])
            if (key, effect) in seen:
                continue
            seen.add((key, effect))
            t: Obj = {"key": key, "effect": effect}
            value = g.pick(TAINT_VALUES)
            if value:
                t["value"] = value
            taints.append(t)
            g.tag(f"node:taint.{effect}")
        spec["taints"] = taints
    status: Obj = {"capacity": dict(alloc), "allocatable": alloc}
    if g.chance(0.6):
        images = []
        for _, node_names in g.some(IMAGES, 1, 4):
            names = list(node_names) if g.chance(0.7) else [node_names[0]]
            images.append({"names": names, "sizeBytes": g.pick(IMAGE_SIZES)})
        status["images"] = images
        g.tag("node:images")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(g, name)},
        "spec": spec,
        "status": status,
    }


# ---- pods: resources ------------------------------------------------------------------


def requests_for(g: Gen, *, big: bool = False) -> dict[str, str]:
    """A container's requests: a random subset of what nodes offer."""
    r: dict[str, str] = {}
    if g.chance(0.8):
        r["cpu"] = g.pick(["50m", "100m", "250m", "500m", "1"] + (["2", "3", "6"] if big else []))
    if g.chance(0.7):
        r["memory"] = g.pick(
            ["64Mi", "128Mi", "256Mi", "512Mi", "1Gi"] + (["2Gi", "6Gi", "12Gi"] if big else [])
        )
    if g.chance(0.08):
        r["ephemeral-storage"] = g.pick(["1Gi", "5Gi", "20Gi"])
        g.tag("pod:ephemeral-storage")
    return r


def resources(g: Gen, *, big: bool = False, extended: bool = True) -> Obj:
    """A container's ``resources``: requests and/or limits (limits alone default the
    requests), hugepages and the extended resource with limits = requests."""
    req = requests_for(g, big=big)
    out: Obj = {}
    if extended and g.chance(0.08):
        n = g.pick(["1", "2", "3"])
        req[GPU] = n
        out.setdefault("limits", {})[GPU] = n
        g.tag("pod:extended-resource")
    if extended and g.chance(0.06):
        size = g.pick(["2Mi", "64Mi", "256Mi"])
        req[HUGEPAGES] = size
        out.setdefault("limits", {})[HUGEPAGES] = size
        req.setdefault("memory", "64Mi")
        g.tag("pod:hugepages")
    if req and g.chance(0.15) and not out:
        out["limits"] = req  # limits only: the API server copies them to requests
        g.tag("pod:limits-only")
        return out
    if req:
        out["requests"] = req
    elif not out:
        g.tag("pod:best-effort-container")
    return out


def container(g: Gen, name: str, *, big: bool = False, image: bool = True) -> Obj:
    c: Obj = {"name": name, "image": g.pick(IMAGES)[0] if image else "busybox:1.36"}
    res = resources(g, big=big)
    if res:
        c["resources"] = res
    return c


def add_init_containers(g: Gen, spec: Obj) -> None:
    inits = []
    for i in range(g.rng.randint(1, 2)):
        c = container(g, f"init-{i}", big=g.chance(0.3))
        if g.chance(0.5):
            c["restartPolicy"] = "Always"
            g.tag("pod:sidecar")
        else:
            g.tag("pod:init-container")
        inits.append(c)
    spec["initContainers"] = inits


def add_pod_level_resources(g: Gen, spec: Obj) -> None:
    """``spec.resources``: at least the containers' total, as validation requires."""

    def total(name: str, unit: int) -> int:
        # Every container's request, init containers too: at least the aggregate.
        out = 0
        for c in [*spec["containers"], *spec.get("initContainers", [])]:
            res = c.get("resources") or {}
            q = (res.get("requests") or res.get("limits") or {}).get(name)
            if q:
                out += parse_quantity(q, unit)
        return out

    req: dict[str, str] = {}
    cpu = total("cpu", 1000)
    req["cpu"] = f"{max(cpu, 100) + g.pick([0, 0, 500, 2000])}m"
    mem = total("memory", 1)
    req["memory"] = str(max(mem, 64 * MI) + g.pick([0, 0, 256 * MI, 2048 * MI]))
    # Pod-level hugepages need every container's hugepages request at pod level too.
    huge = total(HUGEPAGES, 1)
    pod_resources: Obj = {"requests": req}
    if huge:
        req[HUGEPAGES] = str(huge)
        pod_resources["limits"] = {HUGEPAGES: str(huge)}  # not overcommitable
    spec["resources"] = pod_resources
    g.tag("pod:pod-level-resources")


def parse_quantity(q: str, unit: int) -> int:
    """Enough of the quantity syntax for the generator's own values (``unit`` 1000:
    millicores of a cpu quantity)."""
    suffixes = {"m": 1 / 1000, "Ki": 1024, "Mi": MI, "Gi": 1024 * MI}
    for s, f in suffixes.items():
        if q.endswith(s):
            return int(float(q[: -len(s)]) * f * unit)
    return int(float(q) * unit)


# ---- pods: placement constraints -------------------------------------------------------


def node_selector_requirement(g: Gen) -> Obj:
    op = g.pick(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    g.tag(f"pod:nodeAffinity.required.{op}")
    if op in ("Gt", "Lt"):
        return {
            "key": g.pick(["gpu-count", "rack"]),
            "operator": op,
            "values": [g.pick(["0", "1", "3"])],
        }
    if op in ("Exists", "DoesNotExist"):
        return {"key": g.pick([ZONE, "disk", "gpu-count", HOSTNAME]), "operator": op}
    key = g.pick([ZONE, REGION, "disk", HOSTNAME])
    values = {ZONE: ZONES, REGION: REGIONS, "disk": ["ssd", "hdd"]}.get(
        key, [f"node-{i:02d}" for i in range(8)]
    )
    return {"key": key, "operator": op, "values": g.some(values, 1, 2)}


def node_selector_term(g: Gen, n_nodes: int) -> Obj:
    term: Obj = {}
    if g.chance(0.85):
        n = 1 if g.chance(0.7) else 2
        term["matchExpressions"] = [node_selector_requirement(g) for _ in range(n)]
    if g.chance(0.25) or not term:
        op = g.pick(["In", "In", "NotIn"])
        term["matchFields"] = [
            {
                "key": "metadata.name",
                "operator": op,
                "values": [f"node-{g.rng.randrange(n_nodes + 1):02d}"],
            }
        ]
        g.tag(f"pod:nodeAffinity.matchFields.{op}")
        if op == "In" and g.chance(0.2):
            # A second name in the same term: the names intersect (often to nothing,
            # NodeAffinity's PreFilter then rejects: "pod affinity terms conflict").
            term["matchFields"].append(
                {
                    "key": "metadata.name",
                    "operator": "In",
                    "values": [f"node-{g.rng.randrange(n_nodes + 1):02d}"],
                }
            )
            g.tag("pod:nodeAffinity.matchFields.intersection")
    return term


def node_affinity(g: Gen, n_nodes: int) -> Obj:
    na: Obj = {}
    if g.chance(0.5):
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                node_selector_term(g, n_nodes) for _ in range(g.rng.randint(1, 2))
            ]
        }
    if g.chance(0.6) or not na:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": g.rng.randint(1, 100),
                "preference": {"matchExpressions": [node_selector_requirement(g)]},
            }
            for _ in range(g.rng.randint(1, 2))
        ]
        g.tag("pod:nodeAffinity.preferred")
    return na


def tolerations(g: Gen) -> list[Obj]:
    out = []
    for _ in range(g.rng.randint(1, 3)):
        t: Obj = {}
        if g.chance(0.15):
            t["operator"] = "Exists"  # empty key: tolerates every taint (of the effect)
            g.tag("pod:toleration.empty-key-Exists")
        elif g.chance(0.1):
            # NodeUnschedulable lets a pod tolerating this taint onto cordoned nodes.
            t["key"] = "node.kubernetes.io/unschedulable"
            t["operator"] = "Exists"
            g.tag("pod:toleration.unschedulable")
        else:
            t["key"] = g.pick(TAINT_KEYS)
            if g.chance(0.4):
                t["operator"] = "Exists"
                g.tag("pod:toleration.Exists")
            else:
                if g.chance(0.5):
                    t["operator"] = "Equal"
                t["value"] = g.pick(TAINT_VALUES)
                g.tag("pod:toleration.Equal")
        effect = g.pick(["", "NoSchedule", "PreferNoSchedule", "NoExecute"])
        if effect:
            t["effect"] = effect
        g.tag(f"pod:toleration.effect.{effect or 'any'}")
        if effect == "NoExecute" and g.chance(0.5):
            t["tolerationSeconds"] = g.pick([0, 300])
        out.append(t)
    return out


def add_host_ports(g: Gen, spec: Obj) -> None:
    host_network = g.chance(0.2)
    used: set[tuple[int, str]] = set()
    for c in spec["containers"]:
        if not g.chance(0.6):
            continue
        ports = []
        for _ in range(g.rng.randint(1, 2)):
            port, proto = g.pick(PORTS), g.pick(PROTOCOLS)
            if (port, proto) in used:
                continue
            used.add((port, proto))
            p: Obj = {"containerPort": port, "hostPort": port, "protocol": proto}
            if not host_network:
                ip = g.pick(HOST_IPS)
                if ip:
                    p["hostIP"] = ip
                if g.chance(0.3):
                    p["containerPort"] = port + 1
            ports.append(p)
            g.tag(f"pod:hostPort.{proto}")
        if ports:
            c["ports"] = ports
    if host_network:
        spec["hostNetwork"] = True
        g.tag("pod:hostNetwork")


def pod_label_selector(g: Gen) -> Obj:
    if g.chance(0.1):
        return {}
    sel: Obj = {}
    if g.chance(0.7):
        sel["matchLabels"] = {"app": g.pick(APPS)}
    if g.chance(0.4) or not sel:
        op = g.pick(["In", "NotIn", "Exists", "DoesNotExist"])
        e: Obj = {"key": g.pick(["app", "tier", "version"]), "operator": op}
        if op in ("In", "NotIn"):
            e["values"] = g.some([*APPS, *TIERS], 1, 2)
        sel["matchExpressions"] = [e]
    return sel


def spread_constraints(g: Gen, labels: dict[str, str]) -> list[Obj]:
    out = []
    seen: set[tuple[str, str]] = set()
    for _ in range(g.rng.randint(1, 2)):
        key = g.pick([ZONE, ZONE, HOSTNAME, REGION])
        when = g.pick(["DoNotSchedule", "ScheduleAnyway"])
        if (key, when) in seen:
            continue
        seen.add((key, when))
        c: Obj = {
            "maxSkew": g.pick([1, 1, 2, 3]),
            "topologyKey": key,
            "whenUnsatisfiable": when,
        }
        g.tag(f"pod:spread.{when}")
        if g.chance(0.9):
            sel = {"matchLabels": {"app": labels.get("app", g.pick(APPS))}}
            if g.chance(0.2):
                sel = pod_label_selector(g)
            c["labelSelector"] = sel
        else:
            g.tag("pod:spread.no-selector")
        if when == "DoNotSchedule" and g.chance(0.3):
            c["minDomains"] = g.pick([1, 2, 3, 5])
            g.tag("pod:spread.minDomains")
        if g.chance(0.25):
            c["nodeAffinityPolicy"] = g.pick(["Honor", "Ignore"])
            g.tag(f"pod:spread.nodeAffinityPolicy.{c['nodeAffinityPolicy']}")
        if g.chance(0.25):
            c["nodeTaintsPolicy"] = g.pick(["Honor", "Ignore"])
            g.tag(f"pod:spread.nodeTaintsPolicy.{c['nodeTaintsPolicy']}")
        keys = [k for k in labels if k not in (c.get("labelSelector") or {}).get("matchLabels", {})]
        exprs = {e["key"] for e in (c.get("labelSelector") or {}).get("matchExpressions", [])}
        keys = [k for k in keys if k not in exprs]
        if keys and "labelSelector" in c and g.chance(0.3):
            c["matchLabelKeys"] = g.some(keys, 1, 2)
            g.tag("pod:spread.matchLabelKeys")
        out.append(c)
    return out


def affinity_term(g: Gen, labels: dict[str, str], kind: str) -> Obj:
    t: Obj = {"topologyKey": g.pick([ZONE, HOSTNAME, REGION])}
    if g.chance(0.95):
        t["labelSelector"] = pod_label_selector(g)
    if g.chance(0.25):
        t["namespaces"] = g.some([*NAMESPACES, "elsewhere"], 1, 2)
        g.tag(f"pod:{kind}.namespaces")
    if g.chance(0.25):
        t["namespaceSelector"] = g.pick(
            [
                {},
                {"matchLabels": {"team": "a"}},
                {"matchExpressions": [{"key": "env", "operator": "Exists"}]},
            ]
        )
        g.tag(f"pod:{kind}.namespaceSelector")
    sel = t.get("labelSelector")
    if sel is not None and labels:
        taken = set(sel.get("matchLabels", {})) | {
            e["key"] for e in sel.get("matchExpressions", [])
        }
        free = [k for k in labels if k not in taken]
        if free and g.chance(0.2):
            t["matchLabelKeys"] = [free.pop()]
            g.tag(f"pod:{kind}.matchLabelKeys")
        if free and g.chance(0.2):
            t["mismatchLabelKeys"] = [free.pop()]
            g.tag(f"pod:{kind}.mismatchLabelKeys")
    return t


def pod_affinity(g: Gen, labels: dict[str, str], *, existing: bool = False) -> Obj:
    out: Obj = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if not g.chance(0.5):
            continue
        block: Obj = {}
        if g.chance(0.4 if existing else 0.6):
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [
                affinity_term(g, labels, kind) for _ in range(g.rng.randint(1, 2))
            ]
            g.tag(f"{'existing' if existing else 'pod'}:{kind}.required")
        if g.chance(0.6) or not block:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": g.rng.randint(1, 100), "podAffinityTerm": affinity_term(g, labels, kind)}
                for _ in range(g.rng.randint(1, 2))
            ]
            g.tag(f"{'existing' if existing else 'pod'}:{kind}.preferred")
        out[kind] = block
    return out


def pod_labels(g: Gen) -> dict[str, str]:
    labels: dict[str, str] = {}
    if g.chance(0.85):
        labels["app"] = g.pick(APPS)
    if g.chance(0.5):
        labels["tier"] = g.pick(TIERS)
    if g.chance(0.4):
        labels["version"] = g.pick(VERSIONS)
    return labels


def base_pod(g: Gen, name: str, namespace: str, *, big: bool = False) -> Obj:
    labels = pod_labels(g)
    spec: Obj = {"containers": [container(g, f"c{i}", big=big) for i in range(g.rng.randint(1, 2))]}
    meta: Obj = {"name": name, "namespace": namespace, "uid": g.uid("pod"), "labels": labels}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def set_priority(g: Gen, pod: Obj, role: str) -> None:
    if g.preemption:
        prio = 1000 if role == "pod" else g.pick([0, 0, 10, 100, 1000, 2000])
    else:
        prio = g.pick(PRIORITIES)
    if prio:
        pod["spec"]["priority"] = prio
        g.tag(f"{role}:priority")


# ---- the pods of a case ----------------------------------------------------------------


def existing_pod(g: Gen, i: int, nodes: list[Obj]) -> Obj:
    ns = g.pick(NAMESPACES)
    p = base_pod(g, f"running-{i:02d}", ns)
    if len(p["spec"]["containers"]) > 1 and g.chance(0.5):
        del p["spec"]["containers"][1:]
    spec = p["spec"]
    node = g.pick(nodes)["metadata"]["name"] if g.chance(0.95) else "node-gone"
    spec["nodeName"] = node
    if node == "node-gone":
        g.tag("existing:on-missing-node")
    set_priority(g, p, "existing")
    if g.chance(0.2):
        add_init_containers(g, spec)
    if g.chance(0.15):
        add_host_ports(g, spec)
    if g.chance(0.3):
        spec["affinity"] = pod_affinity(g, p["metadata"]["labels"], existing=True)
    if g.chance(0.1):
        add_pod_level_resources(g, spec)
        g.tag("existing:pod-level-resources")
    p["status"] = {"phase": "Running", "startTime": f"2026-01-01T00:{g.rng.randrange(60):02d}:00Z"}
    if g.chance(0.08):
        p["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
        g.tag("existing:terminating")
    return p


def nominated_pod(g: Gen, i: int, nodes: list[Obj]) -> Obj:
    ns = g.pick(NAMESPACES)
    p = base_pod(g, f"nominated-{i}", ns)
    set_priority(g, p, "nominated")
    if g.chance(0.3):
        add_host_ports(g, p["spec"])
    if g.chance(0.3):
        p["spec"]["affinity"] = pod_affinity(g, p["metadata"]["labels"], existing=True)
    p["status"] = {"nominatedNodeName": g.pick(nodes)["metadata"]["name"]}
    g.tag("cluster:nominated-pods")
    return p


def incoming_pod(g: Gen, nodes: list[Obj], profiles: list[str]) -> Obj:
    ns = g.pick(NAMESPACES)
    p = base_pod(g, "incoming", ns, big=g.chance(0.6 if g.preemption else 0.25))
    spec = p["spec"]
    labels = p["metadata"]["labels"]
    set_priority(g, p, "pod")
    if len(profiles) > 1:
        spec["schedulerName"] = g.pick(profiles)
        g.tag("config:second-profile")
    if g.chance(0.1):
        spec["preemptionPolicy"] = "Never"
        g.tag("pod:preemptionPolicy.Never")
    if g.chance(0.25):
        add_init_containers(g, spec)
    if g.chance(0.1):
        spec["overhead"] = {"cpu": g.pick(["10m", "250m"]), "memory": g.pick(["10Mi", "120Mi"])}
        g.tag("pod:overhead")
    if g.chance(0.2):
        add_pod_level_resources(g, spec)
    if g.chance(0.2):
        spec["nodeSelector"] = {g.pick(["disk", ZONE]): g.pick(["ssd", "z1", "z2"])}
        g.tag("pod:nodeSelector")
    affinity: Obj = {}
    if g.chance(0.35):
        affinity["nodeAffinity"] = node_affinity(g, len(nodes))
    if g.chance(0.35):
        affinity.update(pod_affinity(g, labels))
    if affinity:
        spec["affinity"] = affinity
    if g.chance(0.5):
        spec["tolerations"] = tolerations(g)
    if g.chance(0.25):
        add_host_ports(g, spec)
    if g.chance(0.35):
        spec["topologySpreadConstraints"] = spread_constraints(g, labels)
    if g.chance(0.1):
        spec["volumes"] = [{"name": "model", "image": {"reference": g.pick(IMAGES)[0]}}]
        g.tag("pod:image-volume")
    if g.chance(0.1):
        p["status"] = {"nominatedNodeName": g.pick(nodes)["metadata"]["name"]}
        g.tag("pod:own-nomination")
    return p


# ---- inter-pod affinity in preemption ------------------------------------------------------

#: Namespace selectors that match a namespace without labels: upstream's InterPodAffinity
#: evaluates the incoming pod's terms with nil namespace labels once it has merged the
#: selected namespaces into the term (``mergeAffinityTermNamespacesIfNotEmpty``), so such a
#: selector matches pods of every namespace.
EMPTY_MATCHING_NAMESPACE_SELECTORS = [
    {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
    {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["a", "b"]}]},
]


def _required(pod: Obj, kind: str) -> list[Obj]:
    aff = pod["spec"].setdefault("affinity", {}).setdefault(kind, {})
    return aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])  # type: ignore[no-any-return]


def _term_on(g: Gen, labels: dict[str, str], namespace: str | None) -> Obj:
    """A required term selecting pods with (one of) ``labels``, in ``namespace`` (None:
    the owner's), by name or by a namespace selector."""
    key = g.pick(sorted(labels)) if labels else "app"
    value = labels.get(key) or g.pick(APPS)
    t: Obj = {
        "topologyKey": g.pick([HOSTNAME, HOSTNAME, ZONE]),
        "labelSelector": {"matchLabels": {key: value}},
    }
    if namespace is not None:
        how = g.pick(["namespaces", "selector-all", "selector"])
        if how == "namespaces":
            t["namespaces"] = [namespace]
        elif how == "selector-all":
            t["namespaceSelector"] = {}
        else:
            t["namespaceSelector"] = {"matchLabels": dict(NAMESPACE_LABELS[namespace])}
    return t


def affinity_in_preemption(g: Gen, nodes: list[Obj], pod: Obj) -> list[Obj]:
    """InterPodAffinity in DefaultPreemption's dry run, where upstream keeps its PreFilter
    counts up to date with RemovePod and AddPod (``updateWithPod``) as victims go and
    come back: lower-priority pods with required anti-affinity against the pod (evicting
    them helps) or matching its required affinity (evicting them hurts) or its
    anti-affinity, in its namespace or another one named or selected; the pod's terms
    sometimes with a namespace selector that matches a namespace without labels; and a
    pod of higher priority nominated to a node with such a victim, with anti-affinity
    against the pod (counted in the dry run's Filter through AddPod). Returns the extra
    nominated pods; sets the others' fields."""
    if not g.chance(0.45 if g.preemption else 0.08):
        return []
    g.tag("scenario:affinity-preemption")
    prio = pod["spec"].get("priority", 0)
    ns = pod["metadata"]["namespace"]
    labels = pod["metadata"]["labels"]
    lower = [p for p in g.existing if p["spec"].get("priority", 0) < prio]
    for p in g.some(lower, 0, 3):
        other_ns = None if p["metadata"]["namespace"] == ns and g.chance(0.5) else ns
        _required(p, "podAntiAffinity").append(_term_on(g, labels, other_ns))
        g.tag("existing:podAntiAffinity.against-pod")
    for kind in ("podAffinity", "podAntiAffinity"):
        if lower and g.chance(0.4):
            victim = g.pick(lower)
            vns = victim["metadata"]["namespace"]
            t = _term_on(g, victim["metadata"]["labels"], vns if vns != ns else None)
            if g.chance(0.3):
                t.pop("namespaces", None)
                t["namespaceSelector"] = g.pick(EMPTY_MATCHING_NAMESPACE_SELECTORS)
                g.tag(f"pod:{kind}.namespaceSelector-matching-no-labels")
            _required(pod, kind).append(t)
            g.tag(f"pod:{kind}.on-lower-priority")
    # The incoming pod's own terms sometimes get such a selector too.
    for kind in ("podAffinity", "podAntiAffinity"):
        for block in ("requiredDuringSchedulingIgnoredDuringExecution",):
            for t in ((pod["spec"].get("affinity") or {}).get(kind) or {}).get(block) or []:
                if "namespaceSelector" in t and g.chance(0.3):
                    t["namespaceSelector"] = g.pick(EMPTY_MATCHING_NAMESPACE_SELECTORS)
                    g.tag(f"pod:{kind}.namespaceSelector-matching-no-labels")
    out: list[Obj] = []
    hosts = [
        p["spec"]["nodeName"]
        for p in lower
        if (p["spec"].get("affinity") or {}).get("podAntiAffinity")
        and p["spec"]["nodeName"] in {n["metadata"]["name"] for n in nodes}
    ]
    if hosts and g.chance(0.5):
        q = base_pod(g, "nominated-ipa", g.pick(NAMESPACES))
        q["spec"]["priority"] = prio + g.pick([0, 1000])
        q_ns = q["metadata"]["namespace"]
        t = _term_on(g, labels, ns if q_ns != ns or g.chance(0.3) else None)
        _required(q, "podAntiAffinity").append(t)
        q["status"] = {"nominatedNodeName": g.pick(hosts)}
        g.tag("cluster:nominated-pods", "nominated:podAntiAffinity.against-pod")
        out.append(q)
    return out


# ---- workloads and budgets --------------------------------------------------------------


def workloads(g: Gen, pod: Obj) -> list[Obj]:
    """Services and controllers, some selecting the pod (default spreading)."""
    out: list[Obj] = []
    ns = pod["metadata"]["namespace"]
    labels = pod["metadata"]["labels"]
    app = labels.get("app")
    if g.chance(0.3):
        sel = {"app": app} if app and g.chance(0.8) else {"app": g.pick(APPS)}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "svc", "namespace": ns},
                "spec": {
                    "selector": sel,
                    "clusterIP": "None",
                    "clusterIPs": ["None"],
                    "ports": [{"port": 80}],
                },
            }
        )
        g.tag("cluster:service")
    if app and g.chance(0.3):
        kind = g.pick(["ReplicaSet", "StatefulSet", "ReplicationController"])
        name = f"{kind.lower()}-{app}"
        template = {
            "metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        if kind == "ReplicationController":
            obj = {
                "apiVersion": "v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "selector": {"app": app}, "template": template},
            }
        else:
            spec: Obj = {
                "replicas": 3,
                "selector": {"matchLabels": {"app": app}},
                "template": template,
            }
            if kind == "StatefulSet":
                spec["serviceName"] = "svc"
            obj = {
                "apiVersion": "apps/v1",
                "kind": kind,
                "metadata": {"name": name, "namespace": ns},
                "spec": spec,
            }
        out.append(obj)
        api_version = "v1" if kind == "ReplicationController" else "apps/v1"
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": f"uid-{kind}-{ns}-{name}",
                "controller": True,
            }
        ]
        for o in out:
            if o["kind"] == kind:
                o["metadata"]["uid"] = f"uid-{kind}-{ns}-{name}"
        g.tag(f"cluster:owner.{kind}")
    return out


def budgets(g: Gen) -> list[Obj]:
    out = []
    for i in range(g.rng.randint(1, 2)):
        ns = g.pick(NAMESPACES)
        allowed = g.pick([0, 0, 1])
        out.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"pdb-{i}", "namespace": ns},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": g.pick(APPS)}}},
                "status": {
                    "disruptionsAllowed": allowed,
                    "currentHealthy": 2,
                    "desiredHealthy": 1,
                    "expectedPods": 2,
                },
            }
        )
    g.tag("cluster:pdb")
    return out


# ---- configuration ------------------------------------------------------------------------


def resource_specs(g: Gen, *, weights: bool) -> list[Obj]:
    names = ["cpu", "memory", *g.some(["ephemeral-storage", GPU, HUGEPAGES], 0, 2)]
    if g.chance(0.15):
        names = g.some(["cpu", "memory", GPU], 1, 2)
    return [{"name": n, "weight": g.rng.randint(1, 5) if weights else 1} for n in names]


def fit_args(g: Gen) -> Obj:
    kind = g.pick(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
    g.tag(f"args:NodeResourcesFit.{kind}")
    strategy: Obj = {"type": kind, "resources": resource_specs(g, weights=True)}
    if kind == "RequestedToCapacityRatio":
        points = sorted(g.rng.sample(range(0, 101), g.rng.randint(1, 3)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": g.rng.randint(0, 10)} for u in points]
        }
    args: Obj = {"scoringStrategy": strategy}
    if g.chance(0.2):
        args["ignoredResources"] = [GPU]
        g.tag("args:NodeResourcesFit.ignoredResources")
    if g.chance(0.1):
        args["ignoredResourceGroups"] = ["example.com"]
        g.tag("args:NodeResourcesFit.ignoredResourceGroups")
    return args


def balanced_args(g: Gen) -> Obj:
    g.tag("args:NodeResourcesBalancedAllocation.resources")
    return {"resources": resource_specs(g, weights=False)}


def spread_args(g: Gen) -> Obj:
    if g.chance(0.4):
        g.tag("args:PodTopologySpread.List-empty")
        return {"defaultingType": "List"}
    constraints = []
    for key in g.some([ZONE, HOSTNAME], 1, 2):
        constraints.append(
            {
                "maxSkew": g.pick([1, 2]),
                "topologyKey": key,
                "whenUnsatisfiable": g.pick(["DoNotSchedule", "ScheduleAnyway"]),
            }
        )
    g.tag("args:PodTopologySpread.defaultConstraints")
    return {"defaultingType": "List", "defaultConstraints": constraints}


def inter_pod_affinity_args(g: Gen) -> Obj:
    args: Obj = {"hardPodAffinityWeight": g.pick([0, 1, 5, 100])}
    if g.chance(0.4):
        args["ignorePreferredTermsOfExistingPods"] = True
        g.tag("args:InterPodAffinity.ignorePreferredTermsOfExistingPods")
    g.tag("args:InterPodAffinity.hardPodAffinityWeight")
    return args


def node_affinity_args(g: Gen) -> Obj:
    added: Obj = {}
    if g.chance(0.4):
        added["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": ZONE, "operator": "In", "values": g.some(ZONES, 1, 2)}
                    ]
                }
            ]
        }
    if g.chance(0.5) or not added:
        added["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": g.rng.randint(1, 100),
                "preference": {
                    "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                },
            }
        ]
    g.tag("args:NodeAffinity.addedAffinity")
    return {"addedAffinity": added}


def preemption_args(g: Gen) -> Obj:
    g.tag("args:DefaultPreemption")
    percentage = g.pick([0, 10, 50, 100])
    return {
        "minCandidateNodesPercentage": percentage,
        "minCandidateNodesAbsolute": g.pick([1, 2, 100] if percentage == 0 else [0, 1, 2, 100]),
    }


#: Node declared features the generator draws from: registered ones and others, in the
#: shape kube-apiserver validates (``UpperCamelCase`` segments separated by ``/``).
NODE_FEATURES = [
    "ExtendWebSocketsToKubelet",
    "InPlacePodVerticalScalingInitContainers",
    "RestartAllContainersOnContainerExits",
    "RestartAllContainersOnContainerExitz",
    "UserNamespacesHostNetworkSupport",
    "Vendor/fastPath",
]


def declared_features(g: Gen, nodes: list[Obj], pod: Obj) -> list[Obj]:
    """NodeDeclaredFeatures: nodes declare features (a sorted list, as the apiserver
    requires), and the pod sometimes needs RestartAllContainersOnContainerExits (an app
    container restart rule with the RestartAllContainers action). No objects of its own.
    ``hostNetwork`` with ``hostUsers: false`` is not drawn: kube-apiserver refuses it
    without the UserNamespacesHostNetworkSupport gate (alpha, off)."""
    for node in nodes:
        if g.chance(0.5):
            node["status"]["declaredFeatures"] = sorted(set(g.some(NODE_FEATURES, 0, 3)))
            g.tag("node:declaredFeatures")
    if g.chance(0.3):
        c = g.pick(pod["spec"]["containers"])
        c.setdefault("restartPolicy", g.pick(["Never", "OnFailure", "Always"]))
        action = g.pick(["RestartAllContainers", "RestartAllContainers", "Restart"])
        c["restartPolicyRules"] = [
            {"action": action, "exitCodes": {"operator": "In", "values": [42]}}
        ]
        g.tag(f"pod:restartPolicyRules.{action}")
    return []


@dataclass(frozen=True)
class PluginSpec:
    """A plugin the generator knows: its args' kind and generator (None: no args), and,
    for plugins that read more than nodes and pods (volumes, claims), what a case adds
    for them: ``objects(g, nodes, pod)`` returns the objects they read (created before
    the nodes: classes, volumes, claims, slices) and may set the fields of the pod that
    refer to them. The hooks run only when ksched implements the plugin."""

    name: str
    args_kind: str | None = None
    args: Callable[[Gen], Obj] | None = None
    objects: Callable[[Gen, list[Obj], Obj], list[Obj]] | None = None


#: Every plugin with args, and what the generator draws for them. A plugin ksched does
#: not implement is left out of the cases (disabled) until it does.
PLUGINS = [
    PluginSpec("NodeResourcesFit", "NodeResourcesFitArgs", fit_args),
    PluginSpec(
        "NodeResourcesBalancedAllocation", "NodeResourcesBalancedAllocationArgs", balanced_args
    ),
    PluginSpec("PodTopologySpread", "PodTopologySpreadArgs", spread_args),
    PluginSpec("InterPodAffinity", "InterPodAffinityArgs", inter_pod_affinity_args),
    PluginSpec("NodeAffinity", "NodeAffinityArgs", node_affinity_args),
    PluginSpec("DefaultPreemption", "DefaultPreemptionArgs", preemption_args),
    PluginSpec("NodeDeclaredFeatures", objects=declared_features),
    PluginSpec("VolumeBinding", "VolumeBindingArgs", volume_binding_args, objects=volume_objects),
    PluginSpec("DynamicResources", "DynamicResourcesArgs", dra_args, objects=dra_objects),
]


def unimplemented() -> list[str]:
    """v1.36 default-profile plugins this ksched build does not run."""
    have = implemented_plugin_names()
    return [p for p in DEFAULT_PROFILE_PLUGINS if p not in have]


def profile(g: Gen, name: str, missing: Sequence[str], specs: Sequence[PluginSpec] = ()) -> Obj:
    disabled = [{"name": p} for p in missing]
    plugins: Obj = {"multiPoint": {"disabled": disabled}} if disabled else {}
    if g.chance(0.3):
        # Reweight some score plugins (multiPoint weights), disable others at Score.
        enabled = []
        for p in g.some(list(SCORE_WEIGHTS), 1, 3):
            enabled.append({"name": p, "weight": g.rng.randint(1, 10)})
            g.tag(f"config:weight.{p}")
        plugins["score"] = {"enabled": enabled}
        off = g.some([p for p in SCORE_WEIGHTS if p not in {e["name"] for e in enabled}], 0, 2)
        if off:
            plugins["score"]["disabled"] = [{"name": p} for p in off]
            g.tag("config:score-disabled")
    if g.chance(0.1):
        off = g.pick(["NodePorts", "TaintToleration", "PodTopologySpread", "InterPodAffinity"])
        plugins.setdefault("filter", {})["disabled"] = [{"name": off}]
        g.tag(f"config:filter-disabled.{off}")
    if g.chance(0.05):
        plugins.setdefault("postFilter", {})["disabled"] = [{"name": "DefaultPreemption"}]
        g.tag("config:no-preemption")
    config = []
    for spec in specs:
        if spec.args is not None and spec.name not in missing and g.chance(0.25):
            config.append(
                {
                    "name": spec.name,
                    "args": {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": spec.args_kind,
                        **spec.args(g),
                    },
                }
            )
    out: Obj = {"schedulerName": name}
    if plugins:
        out["plugins"] = plugins
    if config:
        out["pluginConfig"] = config
    return out


def configuration(
    g: Gen, missing: Sequence[str], plugins: Sequence[PluginSpec]
) -> tuple[Obj, list[str]]:
    names = ["default-scheduler"]
    if g.chance(0.1):
        names.append("custom-scheduler")
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "percentageOfNodesToScore": 100,
        "profiles": [profile(g, n, missing, plugins) for n in names],
    }
    return cfg, names


# ---- a case ---------------------------------------------------------------------------------


def generate(
    seed: int,
    index: int,
    *,
    missing: Sequence[str] | None = None,
    plugins: Sequence[PluginSpec] = PLUGINS,
) -> Case:
    """Case ``index`` of the run seeded ``seed``. ``missing`` overrides the plugins left
    out (default: the ones this build lacks), ``plugins`` the plugin table."""
    g = Gen(random.Random(f"{seed}:{index}"), f"{seed}:{index}")
    g.preemption = g.chance(0.2)
    if g.preemption:
        g.tag("scenario:preemption")
    # A larger cluster now and then: more spreading domains, more pods to count.
    large = g.chance(0.15)
    if large:
        g.tag("scenario:large")
    missing = unimplemented() if missing is None else missing
    config, profiles = configuration(g, missing, plugins)
    nodes = [
        make_node(g, i) for i in range(g.rng.randint(12, 30) if large else g.rng.randint(2, 10))
    ]
    if len(nodes) > 1 and g.chance(0.2):
        # One image name at two sizes: the first node's size counts (image states).
        name = g.pick(IMAGES)[1][0]
        for n, size in zip(g.rng.sample(nodes, 2), (50 * MI, 800 * MI), strict=True):
            n["status"].setdefault("images", []).append({"names": [name], "sizeBytes": size})
        g.tag("node:image-sizes-differ")
    existing = [
        existing_pod(g, i, nodes)
        for i in range(
            g.rng.randint(10, 40)
            if large
            else g.rng.randint(4, 16)
            if g.preemption
            else g.rng.randint(0, 12)
        )
    ]
    g.existing = existing
    nominated = [
        nominated_pod(g, i, nodes) for i in range(g.rng.randint(0, 2) if g.chance(0.3) else 0)
    ]
    pod = incoming_pod(g, nodes, profiles)
    nominated += affinity_in_preemption(g.fork("affinity-preemption"), nodes, pod)
    for p in existing:
        if p["spec"].get("priority", 0) < pod["spec"].get("priority", 0):
            g.tag("cluster:lower-priority-pods")
            break
    namespaces = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": dict(NAMESPACE_LABELS[ns])},
        }
        for ns in NAMESPACES
    ]
    extra = workloads(g, pod)
    for spec in plugins:
        if spec.objects is not None and spec.name not in missing:
            extra += spec.objects(g, nodes, pod)
    pdbs = budgets(g) if g.chance(0.5 if g.preemption else 0.15) else []
    objects = [*namespaces, *extra, *nodes, *existing, *pdbs, *nominated, pod]
    meta = pod["metadata"]
    return Case(
        id=f"{seed}:{index}",
        config=config,
        objects=objects,
        pod=f"{meta['namespace']}/{meta['name']}",
        features=g.features,
        gates=g.gates,
    )
