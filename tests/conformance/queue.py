"""Queueing hints against upstream's real scheduling queue: a seeded differential test.

A *case* is a pending pod and a sequence of steps: the pod is created, popped, fails
rejected by some plugins (Unschedulable and Pending ones), the clock advances, and
cluster events happen (nodes added, updated in each way the queue distinguishes and
deleted; other pods added, bound, updated and deleted, assigned or not, with labels,
affinity, nominations and priorities; the pod itself updated: labels, tolerations,
scheduling gates, requests, its own status echo, nominations). After every step, the
sub-queue holding the pod (``active``, ``backoff``, ``unschedulable``, ``gated``,
``in-flight`` or ``absent``) is compared between

* upstream: the ``ksched-queue-conformance`` Go program (``tests/conformance/queueharness``),
  kube-scheduler v1.36.5's own PriorityQueue with the default profile's real plugins and
  their EventsToRegister/hints, fed by the queue calls of upstream's event handlers;
* ksched: a real :class:`~ksched.scheduler.Scheduler` on an embedded cluster, its
  informers' handlers called with the same objects (the production path from the
  informer on: the handlers' filtering, ``pod_scheduling_properties_change``, the queue,
  the hints), and its queue's clock driven by the case.

Both sides start their clocks on a whole second, so backoff ordering windows align.
"""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ksched.config.load import load_config_bytes
from ksched.framework.profile import default_profile
from ksched.profiles import build_profiles
from ksched.scheduler import Scheduler
from ksched.sim import InMemoryCluster
from ksched.testing.controlplane import ensure_binaries
from tests.conformance.upstream import Upstream

Obj = dict[str, Any]

BINARY = "ksched-queue-conformance"
PROFILE = "default-scheduler"

#: The default profile's plugins that can reject a pod (Filter/PreFilter), as rejector
#: names for a failed attempt.
REJECTORS = (
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
    "NodeDeclaredFeatures",
    "DynamicResources",
    "DefaultPreemption",
)


def binary() -> Path:
    """``$KSCHED_QUEUE_CONFORMANCE_BIN``, else the control-plane binary directory."""
    if preset := os.environ.get("KSCHED_QUEUE_CONFORMANCE_BIN"):
        return Path(preset)
    return ensure_binaries() / BINARY


# ---- the generator ---------------------------------------------------------------------

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DECLARED_FEATURES = (
    "ExtendWebSocketsToKubelet",
    "RestartAllContainersOnContainerExits",
    "UserNamespacesHostNetworkSupport",
)
DRIVER = "ebs.csi.aws.com"
STORAGE_CLASSES = ("sc-wait", "sc-now")
CLAIMS = ("claim-1", "claim-2")
VOLUMES = ("pv-1", "pv-2")
STORAGE_KINDS = ("StorageClass", "PersistentVolumeClaim", "PersistentVolume", "CSINode")
LABEL_KEYS = ("app", "tier", "team")
LABEL_VALUES = ("a", "b", "c")
NAMESPACES = ("default", "other")


class _Gen:
    def __init__(self, seed: int, index: int) -> None:
        self.rng = random.Random(f"queue-{seed}-{index}")
        self.rv = 1
        self.serial = 0
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}  # other pods, by uid
        self.storage: dict[tuple[str, str], Obj] = {}

    def next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def labels(self, p: float = 0.7) -> dict[str, str]:
        rng = self.rng
        return {k: rng.choice(LABEL_VALUES) for k in LABEL_KEYS if rng.random() < p * 0.6}

    def selector(self) -> Obj:
        rng = self.rng
        sel: Obj = {}
        if rng.random() < 0.7:
            sel["matchLabels"] = {rng.choice(LABEL_KEYS): rng.choice(LABEL_VALUES)}
        if rng.random() < 0.4:
            op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
            expr: Obj = {"key": rng.choice(LABEL_KEYS), "operator": op}
            if op in ("In", "NotIn"):
                expr["values"] = rng.sample(LABEL_VALUES, rng.randint(1, 2))
            sel["matchExpressions"] = [expr]
        return sel

    def taints(self) -> list[Obj]:
        rng = self.rng
        out = []
        for key in ("dedicated", "gpu"):
            if rng.random() < 0.3:
                t: Obj = {
                    "key": key,
                    "effect": rng.choice(("NoSchedule", "NoExecute", "PreferNoSchedule")),
                }
                if rng.random() < 0.5:
                    t["value"] = rng.choice(("x", "y"))
                out.append(t)
        return out

    def tolerations(self) -> list[Obj]:
        rng = self.rng
        out = []
        for key in ("dedicated", "gpu", "node.kubernetes.io/unschedulable"):
            if rng.random() < 0.3:
                t: Obj = {"key": key}
                if rng.random() < 0.5:
                    t["operator"] = "Exists"
                else:
                    t["operator"] = "Equal"
                    t["value"] = rng.choice(("x", "y"))
                if rng.random() < 0.5:
                    t["effect"] = rng.choice(("NoSchedule", "NoExecute"))
                out.append(t)
        return out

    def node(self) -> Obj:
        rng = self.rng
        self.serial += 1
        name = f"node-{self.serial}"
        labels = {HOST: name} if rng.random() < 0.8 else {}
        if rng.random() < 0.7:
            labels[ZONE] = rng.choice(("z1", "z2"))
        labels.update(self.labels(0.5))
        node: Obj = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": self.next_rv()},
            "spec": {},
            "status": {
                "allocatable": {
                    "cpu": rng.choice(("1", "2", "4")),
                    "memory": rng.choice(("1Gi", "4Gi")),
                    "pods": "110",
                },
                "capacity": {"cpu": "4", "memory": "4Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": rng.choice(("True", "False"))}],
            },
        }
        if labels:
            node["metadata"]["labels"] = labels
        if rng.random() < 0.3:
            node["metadata"]["annotations"] = {"note": rng.choice(("1", "2"))}
        if features := self.declared_features():
            node["status"]["declaredFeatures"] = features
        if taints := self.taints():
            node["spec"]["taints"] = taints
        if rng.random() < 0.15:
            node["spec"]["unschedulable"] = True
        return node

    def declared_features(self) -> list[str]:
        return sorted(f for f in DECLARED_FEATURES if self.rng.random() < 0.4)

    def update_node(self, old: Obj) -> Obj:
        rng = self.rng
        new = copy.deepcopy(old)
        new["metadata"]["resourceVersion"] = self.next_rv()
        for _ in range(rng.randint(1, 2)):
            what = rng.choice(
                (
                    "labels",
                    "zone",
                    "taints",
                    "allocatable",
                    "unschedulable",
                    "condition",
                    "ann",
                    "features",
                )
            )
            meta, spec, status = new["metadata"], new["spec"], new["status"]
            if what == "labels":
                meta["labels"] = {**(meta.get("labels") or {}), **self.labels(1.0)}
                if rng.random() < 0.3 and meta["labels"]:
                    meta["labels"].pop(rng.choice(sorted(meta["labels"])))
            elif what == "zone":
                labels = meta.setdefault("labels", {})
                if ZONE in labels and rng.random() < 0.4:
                    del labels[ZONE]
                else:
                    labels[ZONE] = rng.choice(("z1", "z2", "z3"))
            elif what == "taints":
                spec["taints"] = self.taints()
                if not spec["taints"]:
                    del spec["taints"]
            elif what == "allocatable":
                status["allocatable"]["cpu"] = rng.choice(("1", "2", "4", "8"))
            elif what == "unschedulable":
                spec["unschedulable"] = not spec.get("unschedulable", False)
            elif what == "condition":
                status["conditions"] = [
                    {"type": "Ready", "status": rng.choice(("True", "False", "Unknown"))}
                ]
            elif what == "features":
                status["declaredFeatures"] = self.declared_features()
            else:
                meta["annotations"] = {"note": rng.choice(("1", "2", "3"))}
        return new

    # ---- storage -------------------------------------------------------------------

    def storage_class(self, name: str) -> Obj:
        rng = self.rng
        sc: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": self.next_rv()},
            "provisioner": DRIVER,
            "volumeBindingMode": rng.choice(("WaitForFirstConsumer", "Immediate")),
        }
        if rng.random() < 0.4:
            sc["allowedTopologies"] = [
                {"matchLabelExpressions": [{"key": ZONE, "values": [rng.choice(("z1", "z2"))]}]}
            ]
        return sc

    def claim(self, name: str) -> Obj:
        rng = self.rng
        pvc: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": name,
                "namespace": "default" if rng.random() < 0.8 else "other",
                "uid": f"uid-{name}",
                "resourceVersion": self.next_rv(),
            },
            "spec": {
                "accessModes": [rng.choice(("ReadWriteOnce", "ReadWriteOncePod"))],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": rng.choice(STORAGE_CLASSES),
            },
            "status": {"phase": "Pending"},
        }
        if rng.random() < 0.5:
            pvc["spec"]["volumeName"] = rng.choice(VOLUMES)
            pvc["status"]["phase"] = "Bound"
        return pvc

    def volume(self, name: str) -> Obj:
        rng = self.rng
        pv: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": self.next_rv()},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": rng.choice(STORAGE_CLASSES),
                "csi": {"driver": DRIVER, "volumeHandle": f"h-{name}"},
            },
            "status": {"phase": rng.choice(("Available", "Bound"))},
        }
        if rng.random() < 0.5:
            zone = rng.choice(("z1", "z2"))
            pv["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": [zone]}]}
                    ]
                }
            }
        if rng.random() < 0.4:
            pv["metadata"]["labels"] = {ZONE: rng.choice(("z1", "z2"))}
        return pv

    def csi_node(self, name: str) -> Obj:
        rng = self.rng
        obj: Obj = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {"name": name, "uid": f"uid-csi-{name}", "resourceVersion": self.next_rv()},
            "spec": {"drivers": []},
        }
        if rng.random() < 0.8:
            obj["spec"]["drivers"] = [
                {
                    "name": DRIVER,
                    "nodeID": name,
                    "allocatable": {"count": rng.choice((0, 1, 2, 10))},
                }
            ]
        if rng.random() < 0.3:
            obj["metadata"]["annotations"] = {
                "storage.alpha.kubernetes.io/migrated-plugins": rng.choice(
                    ("kubernetes.io/aws-ebs", "kubernetes.io/gce-pd")
                )
            }
        return obj

    def storage_object(self, kind: str, name: str) -> Obj:
        return {
            "StorageClass": self.storage_class,
            "PersistentVolumeClaim": self.claim,
            "PersistentVolume": self.volume,
            "CSINode": self.csi_node,
        }[kind](name)

    def update_storage(self, kind: str, old: Obj) -> Obj:
        """A change the API allows (or a fresh object with the same name and uid)."""
        rng = self.rng
        new = self.storage_object(kind, old["metadata"]["name"])
        new["metadata"]["uid"] = old["metadata"]["uid"]
        if kind == "StorageClass":
            # Only allowedTopologies may differ in a real update (the mode is immutable).
            new["volumeBindingMode"] = old["volumeBindingMode"]
        elif kind == "PersistentVolumeClaim":
            new["metadata"]["namespace"] = old["metadata"]["namespace"]
            new["spec"]["accessModes"] = old["spec"]["accessModes"]
            if rng.random() < 0.5:
                new["spec"]["storageClassName"] = old["spec"]["storageClassName"]
        return new

    def affinity(self, p: float) -> Obj | None:
        rng = self.rng
        aff: Obj = {}
        if rng.random() < p:
            aff["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": ZONE,
                                    "operator": "In",
                                    "values": [rng.choice(("z1", "z2"))],
                                }
                            ]
                        }
                    ]
                }
            }
        for kind in ("podAffinity", "podAntiAffinity"):
            if rng.random() < p:
                term: Obj = {
                    "labelSelector": self.selector(),
                    "topologyKey": rng.choice((ZONE, HOST)),
                }
                r = rng.random()
                if r < 0.2:
                    term["namespaces"] = [rng.choice(NAMESPACES)]
                elif r < 0.3:
                    term["namespaceSelector"] = {}
                aff[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        return aff or None

    def pod(self, name: str, *, target: bool) -> Obj:
        rng = self.rng
        ns = "default" if target or rng.random() < 0.7 else "other"
        container: Obj = {"name": "c", "image": "img"}
        if rng.random() < 0.7:
            container["resources"] = {
                "requests": {"cpu": rng.choice(("100m", "500m", "1")), "memory": "100Mi"}
            }
        if rng.random() < 0.2:
            port: Obj = {"containerPort": 80, "hostPort": rng.choice((80, 81))}
            if rng.random() < 0.3:
                port["hostIP"] = rng.choice(("10.0.0.1", "10.0.0.2"))
            container["ports"] = [port]
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": f"uid-{name}",
                "resourceVersion": self.next_rv(),
            },
            "spec": {
                "schedulerName": PROFILE if target or rng.random() < 0.9 else "other-scheduler",
                "containers": [container],
                "priority": rng.choice((0, 0, 10, 100)),
            },
            "status": {"phase": "Pending"},
        }
        if labels := self.labels():
            pod["metadata"]["labels"] = labels
        if rng.random() < 0.3:
            pod["spec"]["volumes"] = [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(rng.sample(CLAIMS, rng.randint(1, 2)))
            ]
        if rng.random() < 0.1:
            pod["spec"]["initContainers"] = [
                {
                    "name": "sidecar",
                    "image": "img",
                    "restartPolicy": "Always",
                    "ports": [{"containerPort": 81, "hostPort": 81}],
                }
            ]
        if tolerations := self.tolerations():
            pod["spec"]["tolerations"] = tolerations
        if aff := self.affinity(0.5 if target else 0.2):
            pod["spec"]["affinity"] = aff
        if rng.random() < (0.5 if target else 0.2):
            c: Obj = {
                "maxSkew": 1,
                "topologyKey": rng.choice((ZONE, HOST)),
                "whenUnsatisfiable": rng.choice(
                    ("DoNotSchedule", "DoNotSchedule", "ScheduleAnyway")
                ),
                "labelSelector": self.selector(),
            }
            if rng.random() < 0.3:
                c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
            pod["spec"]["topologySpreadConstraints"] = [c]
        if rng.random() < 0.1:
            # Needs the node feature UserNamespacesHostNetworkSupport (NodeDeclaredFeatures).
            pod["spec"]["hostNetwork"] = True
            pod["spec"]["hostUsers"] = False
        if target and rng.random() < 0.2:
            pod["spec"]["schedulingGates"] = [{"name": "g1"}, {"name": "g2"}][: rng.randint(1, 2)]
        if rng.random() < 0.15:
            pod["status"]["nominatedNodeName"] = rng.choice(["node-1", "node-2"])
        return pod

    def other_pod(self, assigned: bool) -> Obj:
        self.serial += 1
        pod = self.pod(f"pod-{self.serial}", target=False)
        if assigned and self.nodes:
            pod["spec"]["nodeName"] = self.rng.choice(sorted(self.nodes))
            pod["status"] = {"phase": "Running"}
        return pod

    def update_pod(self, old: Obj, *, target: bool) -> Obj:
        rng = self.rng
        new = copy.deepcopy(old)
        new["metadata"]["resourceVersion"] = self.next_rv()
        meta, spec, status = new["metadata"], new["spec"], new["status"]
        choices = ["labels", "annotations", "condition", "nominate", "tolerate", "resources"]
        if target:
            choices += ["condition", "condition", "gates", "same-rv"]
            if rng.random() < 0.1:
                choices.append("bind")  # another scheduler bound it
        else:
            choices += ["bind", "affinity"] if not spec.get("nodeName") else ["affinity"]
        what = rng.choice(choices)
        if what == "labels":
            meta["labels"] = self.labels(1.0)
        elif what == "annotations":
            meta["annotations"] = {"note": rng.choice(("1", "2"))}
        elif what == "condition":
            # The scheduler's own PodScheduled=False write, or the kubelet's conditions.
            status["conditions"] = [
                {
                    "type": "PodScheduled" if not spec.get("nodeName") else "Ready",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": f"0/{rng.randint(1, 5)} nodes are available",
                }
            ]
        elif what == "nominate":
            if status.get("nominatedNodeName") and rng.random() < 0.5:
                del status["nominatedNodeName"]
            else:
                status["nominatedNodeName"] = rng.choice(("node-1", "node-2", "node-3"))
        elif what == "tolerate":
            spec["tolerations"] = [
                *(spec.get("tolerations") or []),
                {
                    "key": rng.choice(("dedicated", "gpu", "node.kubernetes.io/unschedulable")),
                    "operator": "Exists",
                },
            ]
        elif what == "resources":
            c = spec["containers"][0]
            c["resources"] = {
                "requests": {"cpu": rng.choice(("50m", "100m", "2")), "memory": "100Mi"}
            }
        elif what == "gates":
            gates = spec.get("schedulingGates") or []
            if gates:
                spec["schedulingGates"] = gates[1:]
                if not spec["schedulingGates"]:
                    del spec["schedulingGates"]
        elif what == "same-rv":
            # A resync: the informer delivers the object it holds again.
            new = copy.deepcopy(old)
        elif what == "bind" and self.nodes:
            spec["nodeName"] = rng.choice(sorted(self.nodes))
            new["status"] = {"phase": "Running"}
        elif what == "affinity" and (aff := self.affinity(0.5)):
            spec["affinity"] = aff
        return new


def _config(rng: random.Random) -> Obj | None:
    """Mostly the defaults; else NodeAffinity's addedAffinity and/or PodTopologySpread's
    List defaulting with a DoNotSchedule default constraint (the args the hints read)."""
    if rng.random() < 0.7:
        return None
    args: list[Obj] = []
    if rng.random() < 0.5:
        args.append(
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
                            ]
                        }
                    }
                },
            }
        )
    if not args or rng.random() < 0.5:
        args.append(
            {
                "name": "PodTopologySpread",
                "args": {
                    "defaultingType": "List",
                    "defaultConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": rng.choice((ZONE, HOST)),
                            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
                        }
                    ],
                },
            }
        )
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": PROFILE, "pluginConfig": args}],
    }


def _service(g: _Gen) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "svc",
            "namespace": "default",
            "uid": "uid-svc",
            "resourceVersion": g.next_rv(),
        },
        "spec": {"selector": {"app": g.rng.choice(LABEL_VALUES)}},
    }


def generate(seed: int, index: int) -> Obj:
    """Case ``index`` of ``seed``."""
    g = _Gen(seed, index)
    rng = g.rng
    config = _config(rng)
    steps: list[Obj] = []
    service: Obj | None = None
    favored: list[str] = []
    if config is not None:
        favored = [a["name"] for a in config["profiles"][0]["pluginConfig"]]
        if rng.random() < 0.8:
            # A Service: pods it selects get PodTopologySpread's default constraints.
            service = _service(g)
            steps.append({"op": "event", "kind": "Service", "action": "add", "new": service})
    for _ in range(rng.randint(0, 3)):
        n = g.node()
        g.nodes[n["metadata"]["name"]] = n
        steps.append({"op": "event", "kind": "Node", "action": "add", "new": n})
    for _ in range(rng.randint(0, 2)):
        p = g.other_pod(assigned=True)
        g.pods[p["metadata"]["uid"]] = p
        steps.append({"op": "event", "kind": "Pod", "action": "add", "new": p})
    for kind in STORAGE_KINDS:
        if rng.random() < 0.5:
            continue
        names = {
            "StorageClass": STORAGE_CLASSES,
            "PersistentVolumeClaim": CLAIMS,
            "PersistentVolume": VOLUMES,
            "CSINode": tuple(sorted(g.nodes)),
        }[kind]
        for name in names:
            if rng.random() < 0.6:
                obj = g.storage[(kind, name)] = g.storage_object(kind, name)
                steps.append({"op": "event", "kind": kind, "action": "add", "new": obj})
    target = g.pod("target", target=True)
    if service is not None and rng.random() < 0.6:
        # Selected by the Service, without constraints of its own: the defaults apply.
        target["metadata"].setdefault("labels", {})["app"] = service["spec"]["selector"]["app"]
        target["spec"].pop("topologySpreadConstraints", None)
    steps.append({"op": "add"})
    first = len(steps)
    current = target

    def fail() -> Obj:
        k = rng.choice((1, 1, 1, 2, 3))
        unsched = sorted(rng.sample(REJECTORS, k))
        if favored and rng.random() < 0.6:
            unsched = sorted({*unsched, rng.choice(favored)})
        pending: list[str] = []
        if rng.random() < 0.15:
            pending = [rng.choice(REJECTORS)]
            if rng.random() < 0.5:
                unsched = [p for p in unsched if p not in pending]
        return {"op": "fail", "unschedulable": unsched, "pending": pending}

    gone = False
    for _ in range(rng.randint(3, 12)):
        r = rng.random()
        if r < 0.12:
            steps.append({"op": "pop"})
        elif r < 0.22:
            steps.append(fail())
        elif r < 0.27:
            steps.append({"op": "tick", "seconds": rng.choice((0.3, 0.7, 1.0, 2.5, 11.0))})
        elif r < 0.37:
            n = g.node()
            g.nodes[n["metadata"]["name"]] = n
            steps.append({"op": "event", "kind": "Node", "action": "add", "new": n})
        elif r < 0.45:
            kind = rng.choice(STORAGE_KINDS)
            name = rng.choice(
                {
                    "StorageClass": STORAGE_CLASSES,
                    "PersistentVolumeClaim": CLAIMS,
                    "PersistentVolume": VOLUMES,
                    "CSINode": tuple(sorted(g.nodes)) or ("node-1",),
                }[kind]
            )
            old = g.storage.get((kind, name))
            if old is None:
                new = g.storage[(kind, name)] = g.storage_object(kind, name)
                steps.append({"op": "event", "kind": kind, "action": "add", "new": new})
            elif rng.random() < 0.25:
                del g.storage[(kind, name)]
                steps.append({"op": "event", "kind": kind, "action": "delete", "old": old})
            else:
                new = g.storage[(kind, name)] = g.update_storage(kind, old)
                steps.append(
                    {"op": "event", "kind": kind, "action": "update", "old": old, "new": new}
                )
        elif r < 0.52 and g.nodes:
            name = rng.choice(sorted(g.nodes))
            old = g.nodes[name]
            new = g.update_node(old)
            g.nodes[name] = new
            steps.append(
                {"op": "event", "kind": "Node", "action": "update", "old": old, "new": new}
            )
        elif r < 0.55 and g.nodes:
            name = rng.choice(sorted(g.nodes))
            steps.append(
                {"op": "event", "kind": "Node", "action": "delete", "old": g.nodes.pop(name)}
            )
        elif r < 0.67:
            p = g.other_pod(assigned=rng.random() < 0.7)
            g.pods[p["metadata"]["uid"]] = p
            steps.append({"op": "event", "kind": "Pod", "action": "add", "new": p})
        elif r < 0.77 and g.pods:
            uid = rng.choice(sorted(g.pods))
            old = g.pods[uid]
            new = g.update_pod(old, target=False)
            g.pods[uid] = new
            steps.append({"op": "event", "kind": "Pod", "action": "update", "old": old, "new": new})
        elif r < 0.82 and g.pods:
            uid = rng.choice(sorted(g.pods))
            steps.append({"op": "event", "kind": "Pod", "action": "delete", "old": g.pods.pop(uid)})
        elif r < 0.98 and not gone and not current["spec"].get("nodeName"):
            new = g.update_pod(current, target=True)
            steps.append(
                {"op": "event", "kind": "Pod", "action": "update", "old": current, "new": new}
            )
            current = new
        elif not gone and r >= 0.98:
            steps.append({"op": "event", "kind": "Pod", "action": "delete", "old": current})
            gone = True
        # Most cases fail the pod early, so that the events meet it in unschedulablePods.
        if len(steps) == first + 1 and rng.random() < 0.8:
            steps.append({"op": "pop"})
            steps.append(fail())
    case: Obj = {"id": f"{seed}-{index}", "pod": target, "steps": steps}
    if config is not None:
        case["config"] = config
    return case


# ---- ksched's side ---------------------------------------------------------------------


INFORMER_KINDS = {
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
}


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])


class KschedQueue:
    """One case on a real Scheduler (not started: the case drives its informers)."""

    def __init__(self, case: Obj) -> None:
        config = case.get("config")
        if config is None:
            profiles = {PROFILE: default_profile()}
        else:
            profiles = build_profiles(load_config_bytes(json.dumps(config).encode()))
        self.sched = Scheduler(InMemoryCluster(), profiles, seed=1)
        self.now = 0.0
        self.sched.queue.clock = lambda: self.now
        self.pod: Obj = case["pod"]
        self.uid = self.pod["metadata"]["uid"]
        self.popped: Any = None
        self.gone = False

    def _deliver(self, informer: Any, action: str, old: Obj | None, new: Obj | None) -> None:
        store = informer.store
        if action == "add":
            assert new is not None
            store[_key(new)] = new
            informer._on_add(new)
        elif action == "update":
            assert old is not None and new is not None
            store[_key(new)] = new
            informer._on_update(old, new)
        else:
            assert old is not None
            store.pop(_key(old), None)
            informer._on_delete(old)

    def step(self, s: Obj) -> None:
        q = self.sched.queue
        op = s["op"]
        if op == "add":
            self._deliver(self.sched.pod_informer, "add", None, self.pod)
        elif op == "pop":
            info = q.pop_specific(self.uid)
            if info is not None:
                self.popped = info
        elif op == "fail":
            info, self.popped = self.popped, None
            if info is None or not q.is_in_flight(self.uid):
                self.popped = None
                return
            if self.gone or (self.pod.get("spec") or {}).get("nodeName"):
                q.done(self.uid)
                return
            info.pod = self.sched._parse_pod(self.pod)
            info.compiled = self.sched.compile(info.pod)
            q.add_unschedulable(info, s.get("unschedulable") or (), s.get("pending") or ())
        elif op == "tick":
            self.now += float(s["seconds"])
        elif op == "event":
            kind, action = s["kind"], s["action"]
            old, new = s.get("old"), s.get("new")
            if kind == "Pod":
                if new is not None and new["metadata"]["uid"] == self.uid:
                    self.pod = new
                if action == "delete" and old is not None and old["metadata"]["uid"] == self.uid:
                    self.gone = True
                informer = self.sched.pod_informer
            elif kind == "Node":
                informer = self.sched.node_informer
            elif kind == "Service":
                informer = next(i for i in self.sched.aux_informers if i.kind == "services")
            else:
                try:
                    informer = self.sched.shared_informers.get(INFORMER_KINDS[kind]).informer
                except RuntimeError:
                    return  # nothing registered for the kind: not watched (as upstream)
            self._deliver(informer, action, old, new)
        else:
            raise ValueError(f"unknown op {op!r}")

    def where(self) -> str:
        q = self.sched.queue
        found = q.where(self.uid)
        if found is None:
            return "absent"
        if found == "unschedulable":
            info = q.get(self.uid)
            if info is not None and info.gated:
                return "gated"
        return found


def run_ksched(case: Obj) -> list[str]:
    """Where the pod is after each step, on ksched's side."""
    k = KschedQueue(case)
    out = []
    for s in case["steps"]:
        k.step(s)
        out.append(k.where())
    return out


def compare(
    cases: Iterable[Obj], upstream: Upstream
) -> Iterator[tuple[Obj, list[str], list[str], str | None]]:
    """``(case, upstream's wheres, ksched's wheres, upstream error)`` for every case."""
    for case, result in upstream.run(cases):
        ours = run_ksched(case)
        yield case, list(result.get("where") or []), ours, result.get("error")


def first_difference(theirs: list[str], ours: list[str]) -> int | None:
    for i, (a, b) in enumerate(zip(theirs, ours, strict=False)):
        if a != b:
            return i
    return None if len(theirs) == len(ours) else min(len(theirs), len(ours))


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.conformance.queue --cases N --seed S``: run and summarise."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=3, help="disagreements to print")
    args = parser.parse_args(argv)
    from collections import Counter

    agree = 0
    shown = 0
    moves: Counter[str] = Counter()
    errors = 0
    with Upstream(binary()) as up:
        for case, theirs, ours, error in compare(
            (generate(args.seed, i) for i in range(args.cases)), up
        ):
            if error:
                errors += 1
                print("upstream error", case["id"], error)
                continue
            for i in range(1, len(theirs)):
                s = case["steps"][i]
                if theirs[i - 1] in ("unschedulable", "gated") and theirs[i] != theirs[i - 1]:
                    moves[f"{s.get('kind', s['op'])}/{s.get('action', '')}"] += 1
            d = first_difference(theirs, ours)
            if d is None:
                agree += 1
                continue
            if shown < args.show:
                shown += 1
                print(f"case {case['id']}: step {d}: upstream {theirs[d]} ksched {ours[d]}")
                print("  steps up to it:")
                for s in case["steps"][: d + 1]:
                    print("   ", json.dumps(s, sort_keys=True)[:600])
                print("  upstream:", theirs)
                print("  ksched:  ", ours)
    print("steps that moved the pod out of unschedulablePods upstream, by step:")
    for what, n in sorted(moves.items()):
        print(f"  {what:32} {n}")
    print(f"{agree}/{args.cases} cases agree ({errors} upstream errors)")
    return 0 if agree == args.cases else 1


if __name__ == "__main__":
    raise SystemExit(main())
