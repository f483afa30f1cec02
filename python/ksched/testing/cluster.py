"""An embedded cluster built from code or YAML, for tests and benchmarks of scheduling
policies (``ksched_cluster``).

:class:`Cluster` wraps the in-memory API server the whole scheduler runs on unchanged
(:class:`ksched.sim.InMemoryCluster`) with the few builders a test needs: nodes from a
template with a count, zones and labels; existing (bound) pods; namespaces, budgets,
volumes, claims and any other kind the scheduler reads (:meth:`Cluster.add`, or YAML
with :meth:`Cluster.add_yaml`; a ``kind`` two API groups share, such as ``PodGroup``, is
told apart by its ``apiVersion``); and whole clusters by name — a workload file of
``ksched bench`` (``scheduling-basic``, ``pod-anti-affinity``...), a ``ksched simulate``
workload (``basic``, ``preemption``...), or a ``ksched record`` recording. :func:`node`
and :func:`pod` build API objects shaped as the API server returns them, and so do the
builders of the kinds the volume, DynamicResources and gang plugins read:
:func:`storage_class`, :func:`persistent_volume`, :func:`persistent_volume_claim`,
:func:`device_class`, :func:`resource_slice`, :func:`resource_claim` and
:func:`pod_group` (``pod(..., claims=[...], resource_claims=[...], pod_group=...)``
refers to them).

A cluster a scheduler runs on (:class:`~ksched.testing.EmbeddedScheduler`) is changed
on that scheduler's event loop: every builder method hands the change to it and waits.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from ksched.cluster import KIND_NAMES, KIND_PATHS, Kind
from ksched.sim.cluster import InMemoryCluster
from ksched.sim.workloads import make_node, make_pod

__all__ = [
    "ZONE_LABEL",
    "Cluster",
    "device_class",
    "node",
    "persistent_volume",
    "persistent_volume_claim",
    "pod",
    "pod_group",
    "resource_claim",
    "resource_slice",
    "storage_class",
]

Obj = dict[str, Any]
T = TypeVar("T")

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def _resource(kind: str, obj: Mapping[str, Any] | None = None) -> str:
    """The embedded cluster's key of ``kind`` (a resource, or a Kind told apart by the
    object's ``apiVersion`` when two groups share it). Raises ``ValueError``."""
    if kind in KIND_NAMES:
        return kind
    found = [r for r, k in KIND_NAMES.items() if k == kind]
    if len(found) > 1:
        version = str((obj or {}).get("apiVersion") or "")
        found = [r for r in found if KIND_PATHS[r][0].endswith("/" + version)] if version else []
        if len(found) != 1:
            raise ValueError(
                f"kind {kind!r} needs an apiVersion to tell "
                f"{' and '.join(r for r, k in KIND_NAMES.items() if k == kind)} apart "
                f"(got {version or 'none'})"
            )
    if not found:
        known = ", ".join(sorted(KIND_NAMES))
        raise ValueError(f"unknown kind {kind!r}: the embedded cluster serves {known}")
    return found[0]


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] | None = None,
    unschedulable: bool = False,
    allocatable: Mapping[str, str] | None = None,
) -> Obj:
    """A Ready Node (scheduler_perf's default shape: 4 cpu, 32Gi, 110 pods);
    ``allocatable`` adds or overrides resources (``{"nvidia.com/gpu": "2"}``)."""
    obj = make_node(
        name,
        cpu=cpu,
        memory=memory,
        pods=pods,
        labels=dict(labels or {}),
        taints=[dict(t) for t in taints] if taints else None,
        unschedulable=unschedulable,
    )
    if allocatable:
        for key in ("capacity", "allocatable"):
            obj["status"][key].update(allocatable)
    return obj


def pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = "100m",
    memory: str | None = "500Mi",
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    scheduler_name: str | None = None,
    priority: int | None = None,
    requests: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    claims: Sequence[str] = (),
    resource_claims: Sequence[str] = (),
    pod_group: str | None = None,
) -> Obj:
    """A Pod with one container requesting ``cpu`` and ``memory`` (and ``requests``,
    e.g. extended resources); ``spec`` merges more fields in (``affinity``,
    ``tolerations``, ``topologySpreadConstraints``...); ``node_name`` makes it bound.
    ``claims`` mounts those PersistentVolumeClaims, ``resource_claims`` uses those
    ResourceClaims (DynamicResources), ``pod_group`` makes it a member of that
    scheduling.k8s.io PodGroup (``spec.schedulingGroup``; the GenericWorkload gate)."""
    obj = make_pod(
        name,
        namespace=namespace,
        cpu=cpu,
        memory=memory,
        labels=dict(labels or {}),
        node_name=node_name,
        scheduler_name=scheduler_name,
        priority=priority,
        extra_spec=copy.deepcopy(dict(spec)) if spec else None,
    )
    if requests:
        resources = obj["spec"]["containers"][0]["resources"]
        resources["requests"].update(requests)
        resources["limits"].update(requests)
    s = obj["spec"]
    if claims:
        s.setdefault("volumes", []).extend(
            {"name": f"claim-{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims)
        )
    if resource_claims:
        s["resourceClaims"] = [{"name": c, "resourceClaimName": c} for c in resource_claims]
        s["containers"][0]["resources"]["claims"] = [{"name": c} for c in resource_claims]
    if pod_group:
        s["schedulingGroup"] = {"podGroupName": pod_group}
    return obj


def storage_class(
    name: str,
    *,
    provisioner: str = "kubernetes.io/no-provisioner",
    binding_mode: str = "WaitForFirstConsumer",
    allowed_zones: Sequence[str] = (),
) -> Obj:
    """A StorageClass (``binding_mode`` ``Immediate`` or ``WaitForFirstConsumer``);
    ``allowed_zones`` restricts provisioning to those ``topology.kubernetes.io/zone``s."""
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": binding_mode,
        "reclaimPolicy": "Delete",
    }
    if allowed_zones:
        obj["allowedTopologies"] = [
            {"matchLabelExpressions": [{"key": ZONE_LABEL, "values": list(allowed_zones)}]}
        ]
    return obj


def persistent_volume(
    name: str,
    *,
    capacity: str = "10Gi",
    storage_class: str = "",
    node: str | None = None,
    zone: str | None = None,
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    claim: str | None = None,
    csi_driver: str | None = None,
) -> Obj:
    """An Available PersistentVolume (``hostPath`` unless ``csi_driver``), usable only on
    ``node`` (a local volume's required node affinity) or in ``zone``; ``claim``
    (``namespace/name``) binds it to that claim."""
    spec: Obj = {
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
    }
    if csi_driver:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": name}
    else:
        spec["hostPath"] = {"path": f"/mnt/{name}"}
    terms = []
    if node is not None:
        terms.append({"key": HOSTNAME_LABEL, "operator": "In", "values": [node]})
    if zone is not None:
        terms.append({"key": ZONE_LABEL, "operator": "In", "values": [zone]})
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": terms}]}}
    phase = "Available"
    if claim is not None:
        ns, _, cname = claim.rpartition("/")
        spec["claimRef"] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "namespace": ns or "default",
            "name": cname,
        }
        phase = "Bound"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"phase": phase},
    }


def persistent_volume_claim(
    name: str,
    *,
    namespace: str = "default",
    storage_class: str | None = None,
    request: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    volume_name: str | None = None,
) -> Obj:
    """A PersistentVolumeClaim, Pending (VolumeBinding finds or provisions its volume),
    or bound to ``volume_name`` (as the PV controller leaves it)."""
    spec: Obj = {"accessModes": list(access_modes), "resources": {"requests": {"storage": request}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    meta: Obj = {"name": name, "namespace": namespace}
    phase = "Pending"
    if volume_name is not None:
        spec["volumeName"] = volume_name
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        phase = "Bound"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase},
    }


def device_class(name: str, *, driver: str, selectors: Sequence[str] = ()) -> Obj:
    """A DeviceClass selecting ``driver``'s devices (and the CEL ``selectors``)."""
    exprs = [f'device.driver == "{driver}"', *selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def resource_slice(
    node: str,
    *,
    driver: str,
    devices: int | Sequence[str] = 1,
    attributes: Mapping[str, Any] | None = None,
) -> Obj:
    """The ResourceSlice ``driver`` publishes for ``node``: one pool of ``devices``
    (a count, ``<driver>-0``..., or names), each with ``attributes`` (``{"model":
    "a100"}``: strings, ints, bools)."""
    names = [f"dev-{i}" for i in range(devices)] if isinstance(devices, int) else list(devices)
    attrs: Obj = {}
    for key, value in (attributes or {}).items():
        if isinstance(value, bool):
            attrs[key] = {"bool": value}
        elif isinstance(value, int):
            attrs[key] = {"int": value}
        else:
            attrs[key] = {"string": str(value)}
    devs = [{"name": n, **({"attributes": copy.deepcopy(attrs)} if attrs else {})} for n in names]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devs,
        },
    }


def resource_claim(
    name: str,
    *,
    device_class: str,
    namespace: str = "default",
    count: int = 1,
    selectors: Sequence[str] = (),
) -> Obj:
    """A ResourceClaim asking for ``count`` devices of ``device_class`` (and the CEL
    ``selectors``), not allocated yet."""
    exactly: Obj = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": exactly}]}},
    }


def pod_group(name: str, *, min_count: int | None = None, namespace: str = "default") -> Obj:
    """A scheduling.k8s.io/v1alpha2 PodGroup: a gang of at least ``min_count`` members
    (all or nothing, GangScheduling), or without it a basic group."""
    policy: Obj = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"schedulingPolicy": policy},
    }


class Cluster:
    """An embedded cluster; see the module docstring."""

    def __init__(self) -> None:
        self.api = InMemoryCluster()
        self._runner: Callable[[Callable[[], Any]], Any] | None = None
        self._lock = threading.Lock()
        self._names = 0
        #: Pods a named workload creates pending (``from_workload``): schedule them.
        self.workload_pods: list[Obj] = []

    # ---- threading: changes go through the scheduler's loop once one runs ----------

    def _attach(self, runner: Callable[[Callable[[], Any]], Any] | None) -> None:
        self._runner = runner

    def _do(self, fn: Callable[[], T]) -> T:
        runner = self._runner
        if runner is None:
            with self._lock:
                return fn()
        return cast("T", runner(fn))

    # ---- building --------------------------------------------------------------------

    def add(self, kind: str, obj: Mapping[str, Any]) -> Obj:
        """Create one object; ``kind`` is the resource (``persistentvolumeclaims``) or
        the Kind (``PersistentVolumeClaim``; one two API groups share is told apart by
        ``obj``'s ``apiVersion``)."""
        resource = _resource(kind, obj)
        data = copy.deepcopy(dict(obj))
        return self._do(lambda: self.api.create(cast("Kind", resource), data))

    def update(self, kind: str, obj: Mapping[str, Any]) -> Obj:
        """Replace an object (a node relabelled, a pod's status changed...)."""
        resource = _resource(kind, obj)
        data = copy.deepcopy(dict(obj))
        return self._do(lambda: self.api.update(cast("Kind", resource), data))

    def delete(self, kind: str, key: str) -> None:
        """Delete an object by ``namespace/name`` (``name`` for cluster-scoped kinds)."""
        resource = _resource(kind)
        self._do(lambda: self.api.delete(cast("Kind", resource), key))

    def get(self, kind: str, key: str) -> Obj | None:
        resource = _resource(kind)
        return self._do(lambda: self.api.get(cast("Kind", resource), key))

    def add_node(self, name: str, **kw: Any) -> str:
        """One node (:func:`node`'s arguments); returns its name."""
        self.add("nodes", node(name, **kw))
        return name

    def add_nodes(
        self,
        count: int,
        *,
        name: str = "node-{i}",
        zones: Sequence[str] = (),
        labels: Mapping[str, str] | None = None,
        template: Mapping[str, Any] | None = None,
        **kw: Any,
    ) -> list[str]:
        """``count`` nodes named from ``name`` (``{i}`` is the index), spread round-robin
        over ``zones`` (the ``topology.kubernetes.io/zone`` label), with ``labels``; each
        built by :func:`node` from ``kw``, or copied from ``template`` (a Node object)."""
        names = []
        for i in range(count):
            n = name.format(i=i)
            extra = dict(labels or {})
            if zones:
                extra[ZONE_LABEL] = zones[i % len(zones)]
            if template is not None:
                obj = copy.deepcopy(dict(template))
                meta = obj.setdefault("metadata", {})
                meta["name"] = n
                meta["labels"] = {
                    **(meta.get("labels") or {}),
                    "kubernetes.io/hostname": n,
                    **extra,
                }
                status = obj.setdefault("status", {})
                if "capacity" in status and "allocatable" not in status:
                    status["allocatable"] = dict(status["capacity"])
            else:
                obj = node(n, labels=extra, **kw)
            self.add("nodes", obj)
            names.append(n)
        return names

    def add_pod(self, name: str, **kw: Any) -> str:
        """One pod (:func:`pod`'s arguments; ``node_name`` binds it); returns
        ``namespace/name``."""
        obj = self.add("pods", pod(name, **kw))
        return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"

    def add_pods(
        self, count: int, *, name: str = "existing-{i}", on: Sequence[str] = (), **kw: Any
    ) -> list[str]:
        """``count`` pods, bound round-robin to the nodes ``on`` (existing pods), or
        pending without ``on``."""
        keys = []
        for i in range(count):
            bound = {"node_name": on[i % len(on)]} if on else {}
            keys.append(self.add_pod(name.format(i=i), **bound, **kw))
        return keys

    def add_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        meta = {"name": name, "labels": dict(labels or {})}
        self.add("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": meta})

    def add_yaml(self, source: str | Path) -> list[Obj]:
        """Every object of a YAML text or file (multi-document); their kinds are
        taken from ``kind``."""
        text = source.read_text() if isinstance(source, Path) else source
        if "\n" not in text and Path(text).is_file():
            text = Path(text).read_text()
        out = []
        for i, doc in enumerate(yaml.safe_load_all(text)):
            if doc is None:
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
                raise ValueError(f"YAML document {i + 1} is not a Kubernetes object")
            out.append(self.add(doc["kind"], doc))
        return out

    # ---- whole clusters ----------------------------------------------------------------

    @classmethod
    def from_workload(
        cls,
        name: str,
        *,
        scale: float = 1.0,
        nodes: int | None = None,
        existing_pods: int | None = None,
        pods: int | None = None,
        seed: int = 1,
    ) -> Cluster:
        """A named workload's nodes and existing pods; the pods it schedules are in
        :attr:`workload_pods`. Names: ``ksched simulate``'s workloads (``basic``,
        ``pod-anti-affinity``, ...) first, then ``ksched bench``'s workload files
        (``scheduling-basic``, ``mixed-churn``, ...; also by scheduler_perf name)."""
        import random

        from ksched.sim.workloads import WORKLOADS

        c = cls()
        if name in WORKLOADS:
            wl = WORKLOADS[name]
            d_nodes, d_existing, d_pods = wl.sizes
            n = nodes if nodes is not None else max(1, round(d_nodes * scale))
            factor = n / d_nodes
            rng = random.Random(seed)
            names = [c.add("nodes", wl.node(i, rng))["metadata"]["name"] for i in range(n)]
            existing = existing_pods if existing_pods is not None else round(d_existing * factor)
            for i in range(existing):
                c.add("pods", wl.existing_pod(i, names[i % len(names)], rng))
            count = pods if pods is not None else round(d_pods * factor)
            c.workload_pods = [wl.new_pod(i, rng) for i in range(count)]
            return c
        from ksched.bench import workload
        from ksched.replay import recording_from_workload

        spec = workload.find(name, workload.load_all()).scaled(
            scale, nodes=nodes, existing_pods=existing_pods, pods=pods
        )
        rec = recording_from_workload(spec)
        for kind in ("namespaces", "priorityclasses", "nodes"):
            for obj in rec.of(kind):
                c.add(kind, obj)
        for obj in rec.bound_pods:
            c.add("pods", obj)
        c.workload_pods = list(rec.pending_pods)
        return c

    @classmethod
    def from_recording(cls, path: str | Path, *, pending: bool = False) -> Cluster:
        """A ``ksched record`` file's objects; its pending pods are in
        :attr:`workload_pods` (created as well with ``pending=True``)."""
        from ksched.recording import Recording
        from ksched.sim.recorded import load_recording

        rec = Recording.load(path)
        c = cls()
        load_recording(rec, c.api, pending=pending)
        c.workload_pods = [] if pending else list(rec.pending_pods)
        return c

    # ---- reading -------------------------------------------------------------------

    def objects(self, kind: str) -> list[Obj]:
        resource = _resource(kind)
        return self._do(lambda: self.api.objects(cast("Kind", resource)))

    def nodes(self) -> list[Obj]:
        return self.objects("nodes")

    def pods(self, namespace: str | None = None) -> list[Obj]:
        pods = self.objects("pods")
        if namespace is None:
            return pods
        return [p for p in pods if p["metadata"].get("namespace") == namespace]

    def bound(self) -> dict[str, str]:
        """``namespace/name`` → node of every bound pod."""
        return {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"]["nodeName"]
            for p in self.pods()
            if (p.get("spec") or {}).get("nodeName")
        }

    def state(self) -> Any:
        """The placement now, as the assertions read it
        (:class:`~ksched.testing.assertions.Placement`)."""
        from ksched.testing.assertions import Placement

        return Placement.of(self.nodes(), self.pods())
